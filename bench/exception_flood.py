#!/usr/bin/env python3
"""An exception flood (issue 16, item 2): a host on VR A's link floods A's slow path as fast as the
rig sends (datagrams to A's address, TTL 1, no route, ARP) for --seconds while A and B each hold
a BGP session with keepalive 1 s and hold time 3 s and B forwards 2,000 frames/s and answers
pings. Run twice in one go: with A's default punt policing, and with it out of the way
(`limits.punt_pps` at its maximum, the peer). Writes its line of docs/benchmarks/isolation.{json,md}
(`bench: exception_flood`).

  sudo bench/exception_flood.py [--seconds 60]
"""

import argparse
import datetime
import os
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
sys.path.insert(0, str(ROOT / "bench"))
from isolation_report import record  # noqa: E402
from test_isolation import close_flooded_network, flood_run, flooded_network  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--bin", default=str(ROOT / "target/release"))
    args = ap.parse_args()
    results = {}
    for name, limits in (("policed (default punt_pps)", ""), ("not policed (punt_pps 10,000,000)", "limits: {punt_pps: 10000000}")):
        net = flooded_network(f"bf{os.getpid() % 100000}")
        try:
            r = flood_run(net, pathlib.Path(args.bin), pathlib.Path(tempfile.mkdtemp(prefix="pearl-flood-")), args.seconds, limits)
        finally:
            close_flooded_network(net)
        results[name] = {
            "flood_pps": round(r["flood"]["pps"]), "flood_sent": r["flood"]["sent"], "bgp_kept": r["bgp_kept"],
            "b_lost": max(0, r["b_sent"] - r["b_arrived"]), "b_ping_loss": next(
                (w for w in r["pings"].split(", ") if w.endswith("packet loss")), "?"),
            "a_punt_policed": r["a"]["drops"]["punt_policed"], "a_slow_path_full": r["a"]["exception_drops"],
        }
        print(name, results[name], flush=True)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [
        "## Exception flood (item 2)", "",
        f"`sudo bench/exception_flood.py --seconds {args.seconds}` on {now} ({os.cpu_count()} CPUs). Host a floods VR A's "
        "slow path with `pearl-bench flood` (64 flows each of datagrams to A's address, TTL 1, no route, and broadcast ARP) "
        f"for {args.seconds} s; A and B each hold a BGP session with their host (FRR both sides, keepalive 1 s, hold 3 s); "
        "B forwards 2,000 frames/s from host b to host c and answers 20 pings. The peer is the same run with A's "
        "policer out of the way.", "",
        "| A's punt path | flood frames/s | A's BGP kept | B's BGP kept | B lost | B's pings | A punt_policed | A slow path full |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        lines.append(f"| {name} | {r['flood_pps']:,} | {r['bgp_kept']['a']} | {r['bgp_kept']['b']} | {r['b_lost']} | "
                     f"{r['b_ping_loss']} | {r['a_punt_policed']:,} | {r['a_slow_path_full']:,} |")
    policed = results["policed (default punt_pps)"]
    record({"bench": "exception_flood", "date": now, "seconds": args.seconds, "bgp_kept": policed["bgp_kept"]["a"],
            "other_vr_bgp_kept": policed["bgp_kept"]["b"], "other_vr_lost": policed["b_lost"], "runs": results}, lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
