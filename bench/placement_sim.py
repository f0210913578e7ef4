#!/usr/bin/env python3
"""The FPGA substrate's allocation experiment (seeds/002, §5.4, Figure 10) through PEARL's
allocator: runs `pearl-bench placement-sim` and writes the `placement_sim` lines of
docs/benchmarks/placement.{json,md} and docs/benchmarks/placement-sim.svg (bandwidth increases
granted against the variance, with and without migration).

  bench/placement_sim.py [--seeds 5] [extra pearl-bench placement-sim options]
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
sys.path.insert(0, str(ROOT / "bench"))
from line_report import DOCS, record_lines  # noqa: E402

# What the paper says of Figure 10 in its text (the figure's values are not given): with large
# fluctuations, migration satisfies 10-15 % more bandwidth revision requests.
PAPER = "with large fluctuations, migration grants 10-15 % more revision requests (§5.4; the figure's values are not in the text)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--bin", default=str(ROOT / "target/release"))
    args, extra = ap.parse_known_args()
    runs = []
    for seed in range(1, args.seeds + 1):
        out = subprocess.run([str(pathlib.Path(args.bin) / "pearl-bench"), "placement-sim", "--seed", str(seed), *extra],
                             capture_output=True, text=True, check=True).stdout
        runs += [json.loads(line) for line in out.splitlines()]
    med = statistics.median
    rows = []
    for variance in sorted({r["variance_percent"] for r in runs}):
        row = {"variance_percent": variance}
        for migrate in (False, True):
            rs = [r for r in runs if r["variance_percent"] == variance and r["migration"] == migrate]
            key = "with_migration" if migrate else "without_migration"
            row[key] = {
                "increases_granted_percent": round(med(100 * r["increases_granted"] / max(1, r["increases"]) for r in rs), 1),
                "revisions_granted_percent": round(med(r["granted_percent"] for r in rs), 1),
                "migrations": round(med(r["migrations"] for r in rs)),
                "additions_refused": round(med(r["additions_refused"] for r in rs)),
            }
        row["gain_points"] = round(row["with_migration"]["increases_granted_percent"] - row["without_migration"]["increases_granted_percent"], 1)
        rows.append(row)
    svg(rows, DOCS / "placement-sim.svg")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    command = " ".join(["bench/placement_sim.py", *sys.argv[1:]])
    md = ["## The FPGA substrate's allocation experiment (placement-sim)", "",
          f"`{command}` on {now}: `pearl-bench placement-sim` drives `pearl_control::Allocator` (the code that places "
          "`auto` VRs) with the paper's workload: 1,000 virtual networks arriving a mean 2 h apart (Poisson), living a mean "
          "64 h, each asking every hour for its initial bandwidth changed by a uniform amount within ±variance (an increase not "
          "met keeps the bandwidth); software (the kernel) 100 Mb/s in all, hardware (the fast path) 1 Gb/s over 20 slots "
          "(Virtex 5); additions prefer software, as in the paper. The paper's bandwidths are a PlanetLab sample it does not "
          "list: a log-normal with median 20 Mb/s and σ 1 stands in. Medians over "
          f"{args.seeds} seeds. Plot: `placement-sim.svg`.", "",
          f"The paper: {PAPER}.", "",
          "| variance | increases granted, no migration | with migration | gain, points | all revisions granted (no / with) | migrations | additions refused (no / with) |",
          "|---|---|---|---|---|---|---|"]
    for r in rows:
        no, yes = r["without_migration"], r["with_migration"]
        md.append(f"| {r['variance_percent']:.0f} % | {no['increases_granted_percent']} % | {yes['increases_granted_percent']} % | "
                  f"{r['gain_points']} | {no['revisions_granted_percent']} / {yes['revisions_granted_percent']} % | {yes['migrations']:,} | "
                  f"{no['additions_refused']} / {yes['additions_refused']} |")
    entry = {"bench": "placement_sim", "date": now, "seeds": args.seeds, "paper": PAPER, "rows": rows, "markdown": md}
    record_lines("placement", "Placement and migration (issue 18)", [entry])
    print("\n".join(md))


def svg(rows, path):
    """Increases granted (%) against variance, one line per policy."""
    w, h, left, bottom = 520, 300, 50, 40
    lo = min(min(r["without_migration"]["increases_granted_percent"] for r in rows), 80)
    x = lambda v: left + (w - left - 20) * v / 100  # noqa: E731
    y = lambda p: 20 + (h - bottom - 20) * (100 - p) / (100 - lo)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="12">bandwidth increases granted (%) against variance (%), PEARL allocator, paper workload</text>']
    for p in range(int(lo // 5 * 5), 101, 5):
        out.append(f'<line x1="{left}" x2="{w - 20}" y1="{y(p):.1f}" y2="{y(p):.1f}" stroke="#ddd"/><text x="{left - 30}" y="{y(p) + 4:.1f}">{p}</text>')
    for r in rows:
        v = r["variance_percent"]
        out.append(f'<text x="{x(v) - 8:.1f}" y="{h - bottom + 16}">{v:.0f}</text>')
    for key, colour in (("without_migration", "#c33"), ("with_migration", "#36c")):
        points = " ".join(f"{x(r['variance_percent']):.1f},{y(r[key]['increases_granted_percent']):.1f}" for r in rows)
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
        last = rows[-1]
        out.append(f'<text x="{x(last["variance_percent"]) - 110:.1f}" y="{y(last[key]["increases_granted_percent"]) - 6:.1f}" '
                   f'fill="{colour}">{key.replace("_", " ")}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
