#!/usr/bin/env python3
"""Fails if the files of a crate import each other in a circle (a module's `use crate::x` /
`crate::x::` paths, test modules and comments aside): each crate's modules must form layers, so
that one can be read, tested and changed from the bottom up. Prints every cycle it finds."""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")


def module_graph(src):
    """{top-level module: {top-level modules it uses}} of one crate's `src` directory."""
    texts = {}
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith(".rs"):
                path = os.path.join(root, f)
                top = os.path.relpath(path, src).split(os.sep)[0].removesuffix(".rs")
                text = open(path).read().split("#[cfg(test)]\nmod tests")[0]
                text = "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))
                texts[top] = texts.get(top, "") + text
    graph = {}
    for top, text in texts.items():
        used = set(re.findall(r"\bcrate::([a-z_0-9]+)", text))
        if top == "mod":
            continue
        graph[top] = {u for u in used if u != top and u in texts and u not in ("lib", "main")}
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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


def main():
    found = False
    for crate in sorted(os.listdir(ROOT)):
        src = os.path.join(ROOT, crate, "src")
        if os.path.isdir(src):
            for comp in cycles(module_graph(src)):
                found = True
                print(f"crates/{crate}: modules import each other in a circle: {', '.join(comp)}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
