#!/usr/bin/env python3
"""The offline fuzzing run of issue 16, item 5: every fuzz target for --runs executions (10 M by
default) through `scripts/fuzz.sh`, AddressSanitizer on, with time enough for the slowest; reads
the one-line summaries it ends with and writes the `fuzz` line of docs/benchmarks/isolation.{json,md}
(executions and crashes per target). Targets not run keep their figures from the previous line.
The five fast targets take about 25 min on a CPU; config under ASan over two hours.

  bench/fuzz_offline.py [--runs 10000000] [--targets extract,config,...] [--sanitizer address|none]
"""

import argparse
import datetime
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from isolation_report import record  # noqa: E402

TARGETS = ("extract", "config", "api_request", "api_body", "netlink", "pcap")
SUMMARY = re.compile(r"^fuzz (\w+): (?:ok - (\d+) runs in (\d+)s|FAILED)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000_000)
    ap.add_argument("--config-runs", type=int, help="executions of the config target (its YAML parser runs ~50× slower "
                    "under AddressSanitizer than the others); --runs by default")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--sanitizer", default="address", help="none: much faster for config; the figure says which")
    args = ap.parse_args()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    results = previous_results()
    for target in args.targets.split(","):
        runs = args.config_runs if target == "config" and args.config_runs else args.runs
        # fuzz.sh's time limit is only a bound here: -runs ends the run.
        done = subprocess.run(["bash", str(ROOT / "scripts/fuzz.sh"), "86400", target, "--", f"-runs={runs}"],
                              capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, FUZZ_SANITIZER=args.sanitizer))
        line = next((m for m in map(SUMMARY.match, done.stdout.splitlines()) if m and m.group(1) == target), None)
        if line is None:
            # fuzz.sh did not get to fuzzing (a build failed): nothing to record.
            sys.exit(f"fuzz {target}: no summary from scripts/fuzz.sh:\n{done.stderr[-2000:]}")
        ok = line.group(2) is not None
        results[target] = {"runs_asked": runs, "executions": int(line.group(2)) if ok else None,
                           "seconds": int(line.group(3)) if ok else None,
                           "crashes": 0 if ok and done.returncode == 0 else 1,
                           "sanitizer": args.sanitizer, "date": now,
                           "command": " ".join(["bench/fuzz_offline.py"] + sys.argv[1:])}
        print(target, results[target], flush=True)
    md = ["## Fuzzing (item 5)", "",
          f"`bench/fuzz_offline.py` ({os.cpu_count()} CPUs): each libFuzzer target from its committed corpus (`fuzz/corpus/`) "
          "for the executions given; the test command runs each for 10 s.", "",
          "| target | executions | seconds | crashes | sanitizer | date | command |", "|---|---|---|---|---|---|---|"]
    md += [f"| {t} | {r['executions'] or '–'} | {r['seconds'] or '–'} | {r['crashes']} | {r.get('sanitizer', 'address')} "
           f"| {r.get('date', '')} | `{r.get('command', '')}` |" for t, r in sorted(results.items(), key=lambda tr: TARGETS.index(tr[0]))]
    record({"bench": "fuzz", "date": now, "targets": results,
            "executions": sum(r["executions"] or 0 for r in results.values()),
            "crashes": sum(r["crashes"] for r in results.values())}, md)
    return 0 if all(r["crashes"] == 0 for r in results.values()) else 1


def previous_results():
    """Each target's figures from the `fuzz` line already recorded, so one target can be rerun alone."""
    path = ROOT / "docs/benchmarks/isolation.json"
    if not path.exists():
        return {}
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    fuzz = next((line for line in lines if line["bench"] == "fuzz"), {})
    return {t: dict(r, date=r.get("date", fuzz.get("date", ""))) for t, r in fuzz.get("targets", {}).items() if t in TARGETS}


if __name__ == "__main__":
    sys.exit(main())
