#!/usr/bin/env python3
"""A VR's traffic over several workers (issue 18): docs/benchmarks/parallel.{json,md}, one
`{"bench": "parallel", "policy", "workers", "mpps", "speedup", "reordered_percent", ...}` a line.

- The in-memory pipeline (`pearl-bench pipeline`, full BGP table, 4 VRs) with 1 and 2 workers,
  alternated, on the same trace: Mpps and the speedup.
- On veth, hosts with the kernel's defaults: one VR between hosts a and b with `workers: 1`, and
  with `workers: 2` for each distribution (flow, round_robin, proportional): one UDP flow of
  `--pps` sequenced datagrams (reordering counted at the receiver, as PdP's Table 1 and 2 count
  TCP segments out of order at the destination), and iperf3 TCP with 8 streams (Gb/s).

  sudo bench/parallel.py [--runs 3] [--pps 20000] [--seconds 5]
  bench/parallel.py --replot        redraws parallel.svg from docs/benchmarks/parallel.json
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
sys.path.insert(0, str(ROOT / "bench"))
from line_report import record_lines  # noqa: E402
from netns import two_hosts  # noqa: E402
from test_frr import remove_vr_leftovers  # noqa: E402
from test_parallel import config, one_flow  # noqa: E402

TABLE = ROOT.parent / "shared" / "data" / "bgp-full-table-2025.txt.gz"
# PdP (seeds/004, §4.5): TCP segments out of order at the destination.
PDP = {"1 FE": 0.31, "2 FEs, round robin": 10.19, "3 FEs, round robin": 13.02,
       "2 FEs at 75 %/50 % CPU, round robin": 12.27, "2 FEs at 75 %/50 % CPU, proportional": 10.02}


def pipeline(bin_dir, workers):
    out = subprocess.run([str(bin_dir / "pearl-bench"), "pipeline", "--table", str(TABLE), "--family", "v4", "--vrs", "4",
                          "--workers", str(workers), "--destinations", "65536", "--seconds", "3", "--repeat", "1"],
                         capture_output=True, text=True, check=True).stdout
    return next(json.loads(line) for line in out.splitlines() if line.startswith("{"))["mpps"]


def veth_run(bin_dir, distribution, workers, pps, seconds, i):
    net = two_hosts(f"bw{os.getpid() % 1000}{i}")
    net.vr = f"{net.prefix}va"
    try:
        text = config(net.vr, distribution)
        if workers == 1:
            text = text.replace("workers: 2\n", "workers: 1\n", 1).replace("resources: {workers: 2}", "resources: {workers: 1}")
        net.start_pearld(bin_dir, text, pathlib.Path(tempfile.mkdtemp(prefix="pearl-parallel-")))
        subprocess.run(["ip", "netns", "exec", net.hosts["a"], "ping", "-c", "2", "-W", "1", "10.2.0.2"], check=True, capture_output=True)
        per_worker, got, sent = one_flow(net, pps=pps, seconds=seconds)
        tcp = net.iperf("a", "b", "10.2.0.2", "-P", "8", seconds=seconds)
        return {"reordered_percent": 100 * got["reordered"] / max(1, got["received"]), "lost": sent - got["unique"],
                "sent": sent, "per_worker": per_worker, "tcp_gbps": tcp["sum_received"]["bits_per_second"] / 1e9}
    finally:
        net.close()
        remove_vr_leftovers(net.vr)


def svg(lines, path):
    """Frames out of order (%) by policy, PEARL's (one UDP flow) beside PdP's (TCP segments)."""
    bars = [(f"PEARL {ln['policy']}, {ln['workers']} worker{'s' if ln['workers'] > 1 else ''}", ln["reordered_percent"], "#36c")
            for ln in lines]
    bars += [(f"PdP {k}", v, "#c33") for k, v in PDP.items()]
    w, left, row, top = 640, 250, 22, 30
    h = top + row * len(bars) + 30
    top_value = max(v for _, v, _ in bars) * 1.1
    x = lambda v: left + (w - left - 60) * v / top_value  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<text x="10" y="14">out of order at the receiver (%): PEARL (blue, one UDP flow on veth), PdP §4.5 (red, TCP)</text>']
    for i, (label, value, colour) in enumerate(bars):
        y = top + i * row
        out.append(f'<text x="10" y="{y + 13}">{label}</text>')
        out.append(f'<rect x="{left}" y="{y + 2}" width="{max(x(value) - left, 1):.1f}" height="{row - 6}" fill="{colour}"/>')
        out.append(f'<text x="{x(value) + 4:.1f}" y="{y + 13}">{value} %</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replot", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pps", type=int, default=20000)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--bin", default=str(ROOT / "target/release"))
    args = ap.parse_args()
    plot = ROOT / "docs" / "benchmarks" / "parallel.svg"
    if args.replot:
        recorded = [json.loads(t) for t in (ROOT / "docs" / "benchmarks" / "parallel.json").read_text().splitlines() if t.strip()]
        return svg([ln for ln in recorded if ln.get("bench") == "parallel"], plot)
    bin_dir = pathlib.Path(args.bin)
    med = statistics.median
    mpps = {1: [], 2: []}
    for _ in range(args.runs):
        for w in (1, 2):
            mpps[w].append(pipeline(bin_dir, w))
    cases = [("flow", 1), ("flow", 2), ("round_robin", 2), ("proportional", 2)]
    veth = {c: [] for c in cases}
    for i in range(args.runs):
        for c in cases:
            veth[c].append(veth_run(bin_dir, c[0], c[1], args.pps, args.seconds, i))
            print(c, {k: veth[c][-1][k] for k in ("reordered_percent", "tcp_gbps", "per_worker")}, flush=True)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    one_tcp = med(r["tcp_gbps"] for r in veth[("flow", 1)])
    lines = []
    for policy, workers in cases:
        rs = veth[(policy, workers)]
        line = {"bench": "parallel", "date": now, "policy": policy, "workers": workers, "runs": args.runs,
                "reordered_percent": round(med(r["reordered_percent"] for r in rs), 2),
                "lost": round(med(r["lost"] for r in rs)), "udp_pps": args.pps,
                "tcp_gbps": round(med(r["tcp_gbps"] for r in rs), 2),
                "tcp_ratio_to_one_worker": round(med(r["tcp_gbps"] for r in rs) / one_tcp, 3)}
        if policy == "flow":
            line["mpps"] = round(med(mpps[workers]), 3)
            line["speedup"] = round(med(mpps[workers]) / med(mpps[1]), 3)
        lines.append(line)
    md = ["## A VR's traffic over several workers", "",
          f"`sudo bench/parallel.py --runs {args.runs} --pps {args.pps} --seconds {args.seconds}` on {now} ({os.cpu_count()} CPUs). "
          "In-memory pipeline: `pearl-bench pipeline` on the full BGP table, 4 VRs, 1 and 2 workers alternated in the same run. "
          f"veth (hosts with the kernel's defaults): one VR, one UDP flow of {args.pps:,} sequenced datagrams/s (what Python "
          "sends of it, the sender pinned to one CPU: a veth queues frames on the sending CPU, so a sender that moves "
          "reorders its own) with reordering counted at the receiver, then iperf3 TCP with 8 streams; the peer is the same VR on one "
          f"worker, in the same run. Medians of {args.runs} runs. Bars (issue 18): flow 0 % reordering and ≥ 1.8× with 2 workers "
          "in the pipeline; TCP through 2 workers at least as fast as through 1.", "",
          "| distribution | workers | pipeline Mpps | speedup | reordered (UDP, one flow) | TCP 8 streams Gb/s | TCP vs 1 worker |",
          "|---|---|---|---|---|---|---|"]
    for line in lines:
        md.append(f"| {line['policy']} | {line['workers']} | {line.get('mpps', '–')} | {line.get('speedup', '–')} | "
                  f"{line['reordered_percent']} % | {line['tcp_gbps']} | {line['tcp_ratio_to_one_worker']} |")
    md += ["", "PdP (seeds/004, §4.5, Tables 1 and 2; TCP segments out of order at the destination, wireshark): "
           + "; ".join(f"{k}: {v} %" for k, v in PDP.items())
           + ". PEARL's `proportional` draws each frame's worker at random in proportion to the VR's slices of the workers "
             "(the port's steering program); here the VR holds both workers whole. PdP's second table gave its two engines "
             "75 % and 50 % of a CPU. `flow` and `proportional` frames are steered by PEARL's BPF program (SliceAlloc's "
             "workers), `round_robin` by the kernel's PACKET_FANOUT_LB over all workers. Plot: `parallel.svg`."]
    svg(lines, plot)
    lines[0]["markdown"] = md
    record_lines("parallel", "A VR's traffic over several workers (issue 18)", lines, replaces={"parallel"})
    print("\n".join(md))


if __name__ == "__main__":
    main()
