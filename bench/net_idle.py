#!/usr/bin/env python3
"""What an idle lab costs, and what a lone ping across its wires takes: a chain of N fast VRs
of one net (h1 — v1 — … — vN — h2, N−1 wires) on pearld, for each of the pearld builds given
(`--bin-dirs BEFORE,AFTER`), in the same run. Idle CPU is pearld's utime+stime (/proc/PID/stat)
over `--seconds` with no traffic; latency is the median round trip of `--pings` single pings
0.2 s apart (each finds the workers asleep).

    sudo python3 bench/net_idle.py --bin-dirs /tmp/before,target/release --chain 3 --seconds 10
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "system"))
sys.path.insert(0, str(HERE))
from net_chain import chain_net  # noqa: E402
from netns import Network, remove_netns, sh  # noqa: E402


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(bin_dir, n, seconds, pings):
    prefix = f"l62i{os.getpid() % 100}"
    net = Network(prefix)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="l62"))
    ctl = []
    try:
        net.start_pearld(bin_dir, "vrs: []\n", tmp)
        ctl = ["ip", "netns", "exec", net.router, str(bin_dir / "pearlctl"), "--socket", str(net.api)]
        f = tmp / "chain.yaml"
        f.write_text(chain_net(prefix, n))
        subprocess.run([*ctl, "net", "apply", "-f", f], check=True, capture_output=True)
        h1 = f"{prefix}-h1"
        deadline = time.time() + 30
        while sh("ping", "-c", "1", "-W", "1", f"10.0.{n}.2", ns=h1, check=False).returncode != 0:
            if time.time() > deadline:
                raise RuntimeError("the chain does not carry a ping")
        time.sleep(2)
        pid = net.pearld.pid
        before = cpu_seconds(pid)
        time.sleep(seconds)
        idle = (cpu_seconds(pid) - before) / seconds
        out = sh("ping", "-c", str(pings), "-i", "0.2", "-W", "1", f"10.0.{n}.2", ns=h1).stdout
        rtts = [float(line.split("time=")[1].split()[0]) for line in out.splitlines() if "time=" in line]
        return {"idle_cpu_percent": round(100 * idle, 2), "ping_median_ms": round(statistics.median(rtts), 3),
                "pings": len(rtts)}
    finally:
        if ctl:
            subprocess.run([*ctl, "net", "destroy", prefix], capture_output=True)
        net.close()
        for ns in (f"{prefix}-h1", f"{prefix}-h2", *(f"{prefix}v{k}" for k in range(1, n + 1))):
            remove_netns(ns)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dirs", required=True, help="pearld builds to compare, comma-separated")
    ap.add_argument("--chain", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--pings", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
    dirs = [pathlib.Path(d).resolve() for d in args.bin_dirs.split(",")]
    runs = {str(d): [] for d in dirs}
    for _ in range(args.runs):
        for d in dirs:  # taking turns, so that the machine's load falls on both alike
            runs[str(d)].append(measure(d, args.chain, args.seconds, args.pings))
            print(d, runs[str(d)][-1], flush=True)
    rows = [{"bin_dir": d, "idle_cpu_percent": statistics.median(r["idle_cpu_percent"] for r in rs),
             "ping_median_ms": statistics.median(r["ping_median_ms"] for r in rs), "runs": rs} for d, rs in runs.items()]
    report = {"cpu": cpu, "cpus": os.cpu_count(), "chain": args.chain, "wires": args.chain - 1, "seconds": args.seconds,
              "command": " ".join(sys.argv), "rows": rows}
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
