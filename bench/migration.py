#!/usr/bin/env python3
"""Live migration between the fast path and the kernel (issue 18): the `migration` lines of
docs/benchmarks/placement.{json,md}. One VR between hosts a and b holds a BGP session with host a
(FRR both sides, keepalive 1 s, hold 3 s) and forwards `--pps` datagrams/s each way (a → b, and
b → a prefix learned over BGP) while `pearlctl vr migrate` moves it to the kernel and back
`--cycles` times. Per direction of move: datagrams lost, the API's duration (validation, storing
the document, building and publishing the plan), and the largest gap a receiver saw. The peer, in
the same run: what moving a VR took before migration existed, deleting it and creating it again
with the other kind (`recreate`), under the same traffic.

  sudo bench/migration.py [--cycles 10] [--pps 2000] [--dwell 1.5]
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
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
sys.path.insert(0, str(ROOT / "bench"))
from frr_host import wait_until  # noqa: E402
from line_report import record_lines  # noqa: E402
from netns import api_get  # noqa: E402
from test_migration import (close_migration_network, ctl, migration_network, migration_run, session, start,  # noqa: E402
                            under_traffic)


def recreate(net, bin_dir, host, tmp, to):
    """Deletes the VR and creates it again placed on `to`, as one had to before migration; the
    time of the two calls, and how long until its BGP session was back."""
    spec = next(v for v in api_get(net.api, "/v1/config")["vrs"] if v["name"] == net.vr)
    spec.pop("kind", None)
    spec["placement"] = to
    path = tmp / "recreated.json"
    path.write_text(json.dumps(spec))
    started = time.monotonic()
    ctl(net, bin_dir, "vr", "delete", net.vr)
    ctl(net, bin_dir, "vr", "create", "-f", path)
    called = time.monotonic() - started
    wait_until("the BGP session back", 60, lambda: session(host, "10.1.0.1")[0] == "Established", interval=0.05)
    return {"duration_ms": called * 1e3, "session_back_ms": (time.monotonic() - started) * 1e3}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--pps", type=int, default=2000)
    ap.add_argument("--dwell", type=float, default=1.5)
    ap.add_argument("--bin", default=str(ROOT / "target/release"))
    args = ap.parse_args()
    bin_dir = pathlib.Path(args.bin)
    net = migration_network(f"bm{os.getpid() % 10000}")
    try:
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="pearl-migration-"))
        host = start(net, bin_dir, tmp)
        moved = migration_run(net, bin_dir, host, ["kernel", "fast"] * args.cycles, pps=args.pps, dwell=args.dwell)
        peer = under_traffic(net, bin_dir, host, [lambda: recreate(net, bin_dir, host, tmp, "kernel")], args.pps, 8.0)
    finally:
        close_migration_network(net)
    med = statistics.median
    sessions_kept = moved["before"]["session"] == moved["after"]["session"] and moved["after"]["session"][0] == "Established"
    rec = peer["steps"][0]
    peer_line = {"bench": "migration_peer_recreate", "to": "kernel", "lost": sum(peer["lost"].values()),
                 "duration_ms": round(rec["duration_ms"], 1), "session_back_ms": round(rec["session_back_ms"], 1),
                 "max_gap_ms": max(g["max_gap_ms"] for g in peer["got"].values()),
                 "bgp_session_kept": peer["before"]["session"][1] == peer["after"]["session"][1]}
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = []
    for to in ("kernel", "fast"):
        durations = [m["reply"]["duration_ms"] for m in moved["moves"] if m["to"] == to]
        lines.append({"bench": "migration", "to": to, "date": now, "migrations": len(durations),
                      "lost": sum(moved["lost"].values()), "sent": sum(moved["sent"].values()), "pps_each_way": args.pps,
                      "duration_ms": round(med(durations), 3), "duration_ms_max": round(max(durations), 3),
                      "max_gap_ms": max(g["max_gap_ms"] for g in moved["got"].values()),
                      "reordered": sum(g["reordered"] for g in moved["got"].values()),
                      "bgp_session_kept": sessions_kept,
                      "duration_ratio_to_recreate": round(med(durations) / peer_line["duration_ms"], 4)})
    md = ["## Live migration between the fast path and the kernel", "",
          f"`sudo bench/migration.py --cycles {args.cycles} --pps {args.pps} --dwell {args.dwell}` on {now} ({os.cpu_count()} CPUs). "
          f"One VR with a BGP session to host a forwards {args.pps:,} datagrams/s each way (a → b, and b → a prefix learned over BGP; "
          "hosts with the kernel's defaults) while `pearlctl vr migrate` moves it to the kernel and back; losses are counted "
          "by sequence number at the receivers over the whole run. Duration: the API call (validation, storing, the data plane's new "
          "plan). The peer, in the same run, is moving it the way it was done before: `vr delete` and `vr create` with the other kind. "
          "Bars (issue 18): 0 lost, BGP session untouched, ≤ 10 ms.", "",
          "| move | migrations | lost (of sent) | duration ms, median / max | largest gap at a receiver, ms | reordered | BGP session kept |",
          "|---|---|---|---|---|---|---|"]
    for line in lines:
        md.append(f"| to {line['to']} | {line['migrations']} | {line['lost']} (of {line['sent']:,}, both moves) | "
                  f"{line['duration_ms']} / {line['duration_ms_max']} | {line['max_gap_ms']} | {line['reordered']} | {line['bgp_session_kept']} |")
    md.append(f"| peer: delete and create as kernel | 1 | {peer_line['lost']} | {peer_line['duration_ms']} "
              f"(session back after {peer_line['session_back_ms']:.0f}) | {peer_line['max_gap_ms']} | – | {peer_line['bgp_session_kept']} |")
    lines[0]["markdown"] = md
    record_lines("placement", "Placement and migration (issue 18)", lines + [peer_line])
    print("\n".join(md))
    return 0 if all(line["lost"] == 0 for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
