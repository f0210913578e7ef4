#!/usr/bin/env python3
"""The tool matrix of issue 57, the full set: every case of tests/conformance/nd_matrix.py (one
invocation each of thc-ipv6's alive6, thcping6, trace6, toobig6, implementation6,
fragmentation6 and ipv6toolkit's frag6, icmp6, tcp6, ni6, scan6) from host A, through the Linux
kernel router and through a pearld fast VR (`driver: af_xdp, rx: af_packet`, as the README
advises on veth), one topology each, in the same run; what hosts A and B received compared per
case. Writes docs/benchmarks/nd-matrix.json and the "Tool matrix" section of
docs/benchmarks/nd-exhaustion.md.

  sudo bench/nd_matrix.py [--cases 'alive6-*'] [--kinds fast,kernel] [--oracle-twice] [--bin target/release]

Exits 1 on a difference neither explained (nd_matrix.EXPLAINED) nor unstable in the kernel router.
"""

import argparse
import datetime
import fnmatch
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from conformance import nd_matrix, topo  # noqa: E402

PEARLD_PORTS = {"fast": "af_xdp+rx_af_packet", "kernel": "af_packet", "shared": "af_packet"}
MARK = "<!-- nd_matrix.py: the tool matrix (bench/nd_matrix.py rewrites from here) -->"


def run_router(prefix, router, kind, driver, ids, bin_dir):
    t = topo.Topology(prefix, router=router, kind=kind, driver=driver, bin_dir=bin_dir)
    try:
        start = time.monotonic()
        runs = nd_matrix.run_cases(t, ids, log=lambda s: print(s, flush=True))
        extra = {"seconds": round(time.monotonic() - start, 1)}
        if router == "pearld":
            stats = t.stats()
            vr = next(v for v in stats["vrs"] if v["name"] == t.vr)
            extra["drops"] = {k: n for k, n in vr["drops"].items() if n}
            extra["exceptions"] = {k: n for k, n in vr["exceptions"].items() if n}
        return t.describe(), runs, extra
    finally:
        t.close()


def cell(d):
    """A difference, short: per host, signature kernel→pearld."""
    out = []
    for host, sigs in d.items():
        for s, (k, p) in sigs.items():
            out.append(f"{host.upper()}: `{s}` {k}→{p}")
    return "; ".join(out).replace("|", "\\|")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="*", help="globs over case ids, comma-separated")
    ap.add_argument("--kinds", default="fast")
    ap.add_argument("--bin", default=str(ROOT / "target/release"))
    ap.add_argument("--json", default=str(ROOT / "docs/benchmarks/nd-matrix.json"))
    ap.add_argument("--md", default=str(ROOT / "docs/benchmarks/nd-exhaustion.md"))
    ap.add_argument("--oracle-twice", action="store_true",
                    help="run the kernel router twice: cases it answers differently on its two runs are named unstable")
    args = ap.parse_args()
    ids = [c for c in nd_matrix.CASES if any(fnmatch.fnmatch(c, g) for g in args.cases.split(","))]
    prefix = f"nm{os.getpid() % 1000}"
    kernel_name, kernel, kextra = run_router(prefix, "linux", None, None, ids, args.bin)
    unstable = {}
    if args.oracle_twice:
        _, again, _ = run_router(prefix, "linux", None, None, ids, args.bin)
        unstable = {c: d for c, d in nd_matrix.compare(kernel, again).items() if d}
    routers = []
    for kind in args.kinds.split(","):
        routers.append(run_router(prefix, "pearld", kind, PEARLD_PORTS[kind], ids, args.bin))
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    commit = "commit " + subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                        text=True).stdout.strip()
    if pathlib.Path(args.bin).resolve() != (ROOT / "target/release").resolve():
        commit += f", pearld of {args.bin}"
    report = {"date": now, "commit": commit, "cpu": cpu, "cpus": os.cpu_count(), "cases": len(ids),
              "kernel": {"router": kernel_name, **kextra, "runs": kernel}, "kernel_unstable": unstable, "pearld": []}
    lines = [MARK, "", "## Tool matrix: single invocations of thc-ipv6 and ipv6toolkit", "",
             f"`sudo bench/nd_matrix.py{' --cases ' + repr(args.cases) if args.cases != '*' else ''}"
             f"{' --kinds ' + args.kinds if args.kinds != 'fast' else ''}{' --oracle-twice' if args.oracle_twice else ''}` on {now} ({cpu}, {os.cpu_count()} CPUs, "
             f"{commit}): {len(ids)} cases of tests/conformance/nd_matrix.py, each one tool invocation from host A "
             "(bounded by `timeout`), through the Linux kernel router and through pearld "
             f"({', '.join(r[0] for r in routers)}), one topology each, in the same run. A case agrees when hosts "
             "A and B received the same multiset of frame signatures (addresses named, hop limit, extension "
             "headers, fragment offset, ICMPv6 type/code/MTU/pointer/quote length, ND target, TCP flags, lengths; "
             "MACs, identifiers, ports, sequence numbers, checksums, random payloads and timing left out; both routers "
             "use the same MACs, so the router's link-local addresses are the same by construction and are compared). "
             "Router ICMP rate limits lifted on both (the conformance run's deterministic settings); hosts at kernel "
             "defaults. Each case's signatures and the tool's last lines are in docs/benchmarks/nd-matrix.json." +
             (f" The kernel router ran twice: {len(unstable)} cases it answered differently on its two runs are marked "
              "unstable (timing-dependent in the oracle itself)." if args.oracle_twice else ""), ""]
    failed = False
    for name, runs, extra in routers:
        cmp = nd_matrix.compare(kernel, runs)
        same = [c for c, d in cmp.items() if not d]
        failed |= any(not nd_matrix.explained(c, d) and c not in unstable for c, d in cmp.items())
        quiet = [c for c in same if not kernel[c]["a"] and not kernel[c]["b"]]
        report["pearld"].append({"router": name, **extra, "agree": len(same), "runs": runs, "differences": cmp})
        lines += [f"**{name}: {len(same)} of {len(ids)} cases answer as the kernel router does** "
                  f"({len(quiet)} of them with no frame at either host on both routers; kernel router "
                  f"{kextra['seconds']} s, pearld {extra['seconds']} s; pearld's VR drops over the run: "
                  f"{', '.join(f'{k} {n}' for k, n in extra['drops'].items()) or 'none'}).", ""]
        lines += ["| case | tool invocation (host A) | kernel router: A / B frames | pearld: A / B frames | same? | why, where different |",
                  "|---|---|---|---|---|---|"]
        for c in ids:
            k, p, d = kernel[c], runs[c], cmp[c]
            why = nd_matrix.EXPLAINED.get(c, ("",))[0] if d else ""
            lines.append(f"| {c} | `{' '.join(nd_matrix.CASES[c][0])}` | {sum(k['a'].values())} / {sum(k['b'].values())} | "
                         f"{sum(p['a'].values())} / {sum(p['b'].values())} | "
                         f"{'same' if not d else 'different'}{' (kernel unstable)' if c in unstable else ''} | "
                         f"{(cell(d) + (' — ' + why if why else '')) if d else ''} |")
        lines.append("")
    pathlib.Path(args.json).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    md = pathlib.Path(args.md)
    head = md.read_text().split(MARK)[0].rstrip("\n") + "\n\n" if md.exists() else ""
    md.write_text(head + "\n".join(lines))
    print("\n".join(lines[:8]))
    for r in report["pearld"]:
        print(r["router"], r["agree"], "of", len(ids))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
