#!/usr/bin/env python3
"""The management plane under a crowd (issue 16, item 4): /healthz latency on the Unix socket and
on --api-tcp while 1,000 idle and 100 slow clients sit on each, against the same pearld with no
crowd in the same run (the peer). Also times `pearlctl stats` in the crowd. Medians of --runs
runs, crowd and no crowd alternating. Writes its line of docs/benchmarks/isolation.{json,md}
(`bench: management_plane`).

  sudo bench/api_load.py [--runs 3] [--idle 1000] [--slow 100] [--probes 200]
"""

import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
from netns import Network  # noqa: E402
from test_api import one_vr, start_pearld_tcp  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from isolation_report import record  # noqa: E402


def load(net, bin_dir, idle, slow, probes):
    done = subprocess.run(["ip", "netns", "exec", net.router, sys.executable, str(ROOT / "tests/system/api_load.py"),
                           "--unix", str(net.api), "--tcp", net.url.removeprefix("http://"), "--idle", str(idle),
                           "--slow", str(slow), "--probes", str(probes), "--pearlctl", str(bin_dir / "pearlctl")],
                          capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--slow", type=int, default=100)
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument("--bin", default=str(ROOT / "target/release"))
    args = ap.parse_args()
    bin_dir = pathlib.Path(args.bin)
    net = Network(f"bl{os.getpid() % 100000}")
    runs = []
    try:
        net.host("a", "q0", "02:aa:00:00:00:01")
        start_pearld_tcp(net, bin_dir, one_vr(net.prefix), pathlib.Path(tempfile.mkdtemp(prefix="pearl-apiload-")))
        for _ in range(args.runs):
            for crowd in (False, True):
                r = load(net, bin_dir, args.idle if crowd else 0, args.slow if crowd else 0, args.probes)
                r["crowd"] = crowd
                runs.append(r)
                print(json.dumps(r), flush=True)
    finally:
        net.close()

    rows = []
    for listener in ("unix", "tcp"):
        for crowd in (False, True):
            sel = [r for r in runs if r["crowd"] == crowd]
            row = {"listener": listener, "crowd": f"{args.idle} idle + {args.slow} slow per listener" if crowd else "none",
                   "p50_ms": statistics.median(r["healthz"][listener]["p50_ms"] for r in sel),
                   "p99_ms": statistics.median(r["healthz"][listener]["p99_ms"] for r in sel),
                   "max_ms": statistics.median(r["healthz"][listener]["max_ms"] for r in sel),
                   "statuses": sorted({s for r in sel for s in r["healthz"][listener]["statuses"]}),
                   "pearlctl_stats_s": statistics.median(r["pearlctl_stats"]["seconds"] for r in sel),
                   "pearlctl_stats_ok": all(r["pearlctl_stats"]["rc"] == 0 for r in sel)}
            rows.append(row)
    for row in rows:
        if row["crowd"] != "none":
            alone = next(r for r in rows if r["listener"] == row["listener"] and r["crowd"] == "none")
            row["p99_ratio"] = round(row["p99_ms"] / alone["p99_ms"], 2) if alone["p99_ms"] else None
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [
        "## Management plane under a crowd of idle and slow clients (item 4)",
        "",
        f"`sudo bench/api_load.py --runs {args.runs} --idle {args.idle} --slow {args.slow} --probes {args.probes}` on {now} "
        f"({os.cpu_count()} CPUs). One pearld with `--api-tcp`; each run opens {args.idle} idle clients (connect, send nothing) "
        f"and {args.slow} slow ones (a request trickled a byte per 50 ms, reconnecting when let go) on each listener, then asks "
        f"/healthz {args.probes} times per listener, one at a time, and runs `pearlctl stats`. The peer is the same pearld with "
        "no crowd, in the same run. Medians over the runs. Bar (issue 16): /healthz ≤ 100 ms with 1,000 connections open.",
        "",
        "| listener | crowd | /healthz p50 ms | p99 ms | max ms | p99 / no crowd | pearlctl stats s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['listener']} | {r['crowd']} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | "
                     f"{r.get('p99_ratio', '')} | {r['pearlctl_stats_s']} |")
    crowd = [r for r in rows if r["crowd"] != "none"]
    record({"bench": "management_plane", "date": now, "cpus": os.cpu_count(), "idle": args.idle, "slow": args.slow,
            "healthz_p99_ms": max(r["p99_ms"] for r in crowd), "p99_ratio": max(r["p99_ratio"] or 0 for r in crowd),
            "pearlctl_stats_ok": all(r["pearlctl_stats_ok"] for r in crowd), "summary": rows, "runs": runs}, lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
