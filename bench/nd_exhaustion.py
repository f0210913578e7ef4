#!/usr/bin/env python3
"""Neighbour-discovery exhaustion and ND floods (issue 57), the full set: each thc-ipv6 flood
(tests/conformance/nd_tools.py FLOODS) from host A for --seconds while A pings B, through the
Linux kernel router and a pearld fast VR (`driver: af_xdp, rx: af_packet`, as the README
advises on veth; --kinds adds kernel and shared VRs, on af_packet) in the same run, --runs times each; the medians of flow kept, frames offered
and pearld's drops by reason go to docs/benchmarks/nd-exhaustion.{json,md}.

  sudo bench/nd_exhaustion.py [--seconds 20] [--runs 3] [--tools ndpexhaust26,flood_solicitate6] [--kinds fast,kernel]
"""

import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from conformance import nd_tools, topo  # noqa: E402

# The kernel router, then pearld's VR kinds (`--kinds`) on the README's veth ports.
PEARLD_PORTS = {"fast": "af_xdp+rx_af_packet", "kernel": "af_packet", "shared": "af_packet"}


def one_run(prefix, router, kind, driver, tool, seconds, bin_dir):
    t = topo.Topology(prefix, router=router, kind=kind, driver=driver, bin_dir=bin_dir, sysctls="defaults")
    try:
        return nd_tools.flood_with_flow(t, tool, seconds)
    finally:
        t.close()


def median_of(runs, key):
    return statistics.median(r[key] for r in runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tools", default=",".join(nd_tools.FLOODS))
    ap.add_argument("--bin", default=str(ROOT / "target/release"))
    ap.add_argument("--kinds", default="fast", help="pearld's VR kinds, comma-separated: fast, kernel, shared")
    ap.add_argument("--out", default=str(ROOT / "docs/benchmarks/nd-exhaustion"))
    ap.add_argument("--rx-ring-frames", type=int, help="the pearld ports' rx_ring_frames (its default if not given)")
    args = ap.parse_args()
    if args.rx_ring_frames:
        for driver in set(PEARLD_PORTS.values()):
            topo.DRIVERS[driver] += f", rx_ring_frames: {args.rx_ring_frames}"
    routers = [("linux", None, None)] + [("pearld", k, PEARLD_PORTS[k]) for k in args.kinds.split(",")]
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    rows = []
    for tool in args.tools.split(","):
        for router, kind, driver in routers:
            runs = []
            for i in range(args.runs):
                r = one_run(f"nx{os.getpid() % 1000}", router, kind, driver, tool, args.seconds, args.bin)
                print(json.dumps(r), flush=True)
                runs.append(r)
            rows.append({"tool": tool, "router": runs[0]["router"], "runs": runs,
                         "flow_kept_percent": median_of(runs, "flow_kept_percent"),
                         "frames_offered": median_of(runs, "frames_offered")})
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    commit = "commit " + subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                        text=True).stdout.strip()
    if pathlib.Path(args.bin).resolve() != (ROOT / "target/release").resolve():
        commit = f"pearld of {args.bin}"
    report = {"date": now, "commit": commit, "cpu": cpu, "cpus": os.cpu_count(), "seconds": args.seconds,
              "runs": args.runs, "rows": rows}
    pathlib.Path(args.out + ".json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        "# Neighbour-discovery exhaustion and ND floods (issue 57)", "",
        f"`sudo bench/nd_exhaustion.py --seconds {args.seconds} --runs {args.runs}` on {now} ({cpu}, "
        f"{os.cpu_count()} CPUs, {commit}). Host A runs each thc-ipv6 flood for {args.seconds} s while it "
        f"pings host B (IPv6, every {nd_tools.PING_INTERVAL * 1000:.0f} ms) through the router: the Linux kernel "
        f"router, then pearld VRs ({args.kinds}; a fast VR on `driver: af_xdp, rx: af_packet` ports, kernel and shared "
        "VRs on `af_packet`; veth, kernel defaults), each on a fresh topology (tests/conformance/topo.py); pearld's ports with "
        f"{f'rx_ring_frames: {args.rx_ring_frames}' if args.rx_ring_frames else 'their default ring'}. Medians of the "
        "runs; each run's figures in the .json. Frames offered: what host A's eth0 sent (on veth the Linux router's "
        "receive work runs on the sender's CPU and slows it; pearld's does not).", "",
        "| flood | router | flow kept (median, runs) | frames offered (median) | pearld drops by reason (median run) |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        kept = ", ".join(f"{r['flow_kept_percent']}" for r in row["runs"])
        mid = sorted(row["runs"], key=lambda r: r["flow_kept_percent"])[len(row["runs"]) // 2]
        acct = mid.get("pearld")
        drops = "—" if acct is None else ", ".join(
            f"{k} {n:,}" for k, n in {**acct["drops"], "slow_path_full": acct["slow_path_full"],
                                      "rx_dropped": acct["rx_dropped"]}.items() if n) or "none"
        lines.append(f"| {row['tool']} | {row['router']} | {row['flow_kept_percent']} % ({kept}) | "
                     f"{row['frames_offered']:,.0f} | {drops} |")
    md = pathlib.Path(args.out + ".md")
    # bench/nd_matrix.py's section (the tool matrix) stays as it was
    mark = "<!-- nd_matrix.py: the tool matrix"
    tail = md.read_text()[md.read_text().find(mark):] if md.exists() and mark in md.read_text() else ""
    md.write_text("\n".join(lines) + "\n" + ("\n" + tail if tail else ""))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
