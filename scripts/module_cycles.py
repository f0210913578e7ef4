#!/usr/bin/env python3
"""Fails if the files of a crate import each other in a circle, at any depth: in every folder
of a crate's `src` (the crate root and each module folder), the folder's files and sub-folders
must form layers, so that one can be read, tested and changed from the bottom up. A folder's
`mod.rs` (and the crate's `lib.rs`, `main.rs`) is its facade and stands apart. Imports are the
`crate::`, `super::` and `self::` paths of a file (brace groups of `use` expanded; test modules
and comments aside). Prints every cycle it finds. Checks itself first on a small tree of its
own: a gate that cannot fail would pass anything."""

import os
import re
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
FACADES = ("lib.rs", "main.rs", "mod.rs")


def module_path(src, path):
    """The module path of file `path` of a crate's `src`: src/a/b.rs → (a, b), src/a/mod.rs → (a,)."""
    parts = os.path.relpath(path, src).split(os.sep)
    if parts[-1] in FACADES:
        parts = parts[:-1]
    else:
        parts[-1] = parts[-1].removesuffix(".rs")
    return tuple(parts)


def code_of(path):
    """A file's code without its test module and its comment lines."""
    text = open(path).read().split("#[cfg(test)]\nmod tests")[0]
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))


def expand_uses(text):
    """Every path a `use` item names, brace groups expanded (`use a::{b, c::{d}}` → a::b, a::c::d)."""
    out = []
    for item in re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", text, re.M):
        stack, token = [""], ""
        for ch in item:
            if ch == "{":
                stack.append(stack[-1] + token.strip())
                token = ""
            elif ch in ",}":
                if token.strip():
                    out.append(stack[-1] + token.strip())
                token = ""
                if ch == "}" and len(stack) > 1:
                    stack.pop()
            else:
                token += ch
        if token.strip():
            out.append(stack[-1] + token.strip())
    return out


def used_modules(module, text):
    """The absolute module paths (as tuples) that code `text` of module `module` refers to."""
    paths = set(expand_uses(text))
    paths.update(re.findall(r"\b(?:crate|super|self)(?:::[A-Za-z_0-9]+)+", text))
    out = set()
    for p in paths:
        parts = [x.strip() for x in re.split(r"::", p.split(" as ")[0]) if x.strip()]
        if not parts:
            continue
        if parts[0] == "crate":
            resolved = []
        elif parts[0] in ("super", "self"):
            resolved = list(module)
        else:
            continue
        for x in parts[1:] if parts[0] == "crate" else parts:
            if x == "super":
                resolved = resolved[:-1]
            elif x != "self" and re.fullmatch(r"[A-Za-z_0-9]+", x):
                resolved.append(x)
        out.add(tuple(resolved))
    return out


def folder_graphs(src):
    """{folder's module path: {child: {children of the same folder it uses}}} of one crate."""
    files = []
    for root, _, names in os.walk(src):
        for f in names:
            if f.endswith(".rs"):
                path = os.path.join(root, f)
                files.append((module_path(src, path), code_of(path)))
    modules = {m for m, _ in files}
    children = {}
    for m in modules:
        for depth in range(len(m)):
            children.setdefault(m[:depth], set()).add(m[depth])
    graphs = {folder: {c: set() for c in kids} for folder, kids in children.items()}
    for module, text in files:
        used = used_modules(module, text)
        for depth in range(len(module)):
            folder, child = module[:depth], module[depth]
            for u in used:
                if len(u) > depth and u[:depth] == folder and u[depth] != child and u[depth] in children[folder]:
                    graphs[folder][child].add(u[depth])
    return graphs


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def report(root):
    """Every cycle of every crate under `root`, as messages."""
    found = []
    for crate in sorted(os.listdir(root)):
        src = os.path.join(root, crate, "src")
        if not os.path.isdir(src):
            continue
        for folder, graph in sorted(folder_graphs(src).items()):
            where = "/".join(("crates", crate, "src") + folder)
            for comp in cycles(graph):
                found.append(f"{where}: files import each other in a circle: {', '.join(comp)}")
    return found


def self_test():
    """The gate finds a circle two folders down (`super::` one way, `crate::` the other) and
    one at the root through a brace group, and passes the same trees once layered."""
    tree = {
        "lib.rs": "pub mod a;\npub mod b;\npub mod sched;\n",
        "a.rs": "use crate::{b::B, sched};\n",
        "b.rs": "pub struct B;\n",
        "sched/mod.rs": "mod credit;\nmod bucket;\n",
        "sched/credit.rs": "use super::bucket::Bucket;\npub struct Credit;\n",
        "sched/bucket.rs": "pub struct Bucket;\n// use crate::sched::credit::Credit;\n",
    }
    circles = {
        "b.rs": "use crate::a;\npub struct B;\n",
        "sched/bucket.rs": "pub struct Bucket(crate::sched::credit::Credit);\n",
    }
    with tempfile.TemporaryDirectory() as root:
        for name, text in tree.items():
            path = os.path.join(root, "demo", "src", name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").write(text)
        layered = report(root)
        for name, text in circles.items():
            open(os.path.join(root, "demo", "src", name), "w").write(text)
        circular = report(root)
    want = [
        "crates/demo/src: files import each other in a circle: a, b",
        "crates/demo/src/sched: files import each other in a circle: bucket, credit",
    ]
    return layered == [] and circular == want, (layered, circular)


def main():
    ok, seen = self_test()
    if not ok:
        print(f"module_cycles: the self-test failed (layered tree, circular tree): {seen}", file=sys.stderr)
        return 2
    found = report(ROOT)
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
