#!/usr/bin/env python3
"""Owner tokens cannot starve others (issue 16, item 3): VR B's token reads its routes 40 times a
second while VR A's token hammers the API at --rate requests/s (two processes, each request its
own connection, as a careless script would), against the same probes with nobody hammering in
the same run (the peer); runs alternate. A's allowance is the default
`api.owner_requests_per_second` (100): the rest of its requests are answered 429. Writes its line
of docs/benchmarks/isolation.{json,md} (`bench: owner_tokens`, with `p99_ratio`).

  sudo bench/owner_hammer.py [--runs 3] [--rate 1000] [--seconds 10]
"""

import argparse
import datetime
import multiprocessing
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
sys.path.insert(0, str(ROOT / "bench"))
from isolation_report import record  # noqa: E402
from test_runtime import ADMIN, TOKEN_A, TOKEN_B, Rig, config, vr_spec  # noqa: E402

PROBES_PER_SECOND = 40
HAMMERS = 2


def hammer(rig, rate, seconds, counts):
    """One hammering process: `rate` requests/s of A's token, paced; counts statuses."""
    period, start, i = 1.0 / rate, time.monotonic(), 0
    ok = limited = 0
    while time.monotonic() - start < seconds:
        status = rig.api("GET", f"/v1/vrs/{rig.a}/routes", TOKEN_A)[0]
        ok += status == 200
        limited += status == 429
        i += 1
        ahead = start + i * period - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    counts.put((ok, limited, time.monotonic() - start))


def probe(rig, seconds):
    """B's request latencies (ms) at PROBES_PER_SECOND for `seconds`."""
    took = []
    start, i = time.monotonic(), 0
    while time.monotonic() - start < seconds:
        t = time.monotonic()
        status = rig.api("GET", f"/v1/vrs/{rig.b}/routes", TOKEN_B)[0]
        took.append((time.monotonic() - t) * 1000)
        assert status == 200, f"B's request answered {status}"
        i += 1
        time.sleep(max(0.0, start + i / PROBES_PER_SECOND - time.monotonic()))
    return took


def p99(xs):
    return sorted(xs)[int(len(xs) * 0.99)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--bin", default=str(ROOT / "target/release"))
    args = ap.parse_args()
    rig = Rig("bo")
    runs = {"alone": [], "hammered": []}
    hammered = []
    try:
        rig.start(pathlib.Path(args.bin), pathlib.Path(tempfile.mkdtemp(prefix="pearl-hammer-")),
                  config([vr_spec(rig.a, "a", token=TOKEN_A), vr_spec(rig.b, "b", token=TOKEN_B)], api={"admin_token": ADMIN}))
        for _ in range(args.runs):
            runs["alone"].append(p99(probe(rig, args.seconds)))
            counts = multiprocessing.Queue()
            hammers = [multiprocessing.Process(target=hammer, args=(rig, args.rate / HAMMERS, args.seconds + 1, counts))
                       for _ in range(HAMMERS)]
            for h in hammers:
                h.start()
            time.sleep(0.5)
            runs["hammered"].append(p99(probe(rig, args.seconds)))
            for h in hammers:
                h.join()
            got = [counts.get() for _ in hammers]
            hammered.append({"sent_per_second": sum((ok + lim) / secs for ok, lim, secs in got),
                             "limited_share": sum(lim for _, lim, _ in got) / max(1, sum(ok + lim for ok, lim, _ in got))})
            print({k: round(v[-1], 2) for k, v in runs.items()}, hammered[-1], flush=True)
    finally:
        rig.net.close()
    alone, loud = statistics.median(runs["alone"]), statistics.median(runs["hammered"])
    sent = statistics.median(h["sent_per_second"] for h in hammered)
    share = statistics.median(h["limited_share"] for h in hammered)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    md = [
        "## Owner tokens under a hammering owner (item 3)", "",
        f"`sudo bench/owner_hammer.py --runs {args.runs} --rate {args.rate} --seconds {args.seconds:g}` on {now} "
        f"({os.cpu_count()} CPUs): VR B's token reads its routes {PROBES_PER_SECOND} times a second while VR A's token "
        f"sends {sent:.0f} requests/s (a connection each, {HAMMERS} processes), against the same probes alone in the same run; "
        f"medians of {args.runs} runs of {args.seconds:g} s.", "",
        "| B's p99 alone | B's p99 with A hammering | ratio | A's requests/s | A's answered 429 |", "|---|---|---|---|---|",
        f"| {alone:.2f} ms | {loud:.2f} ms | {loud / alone:.2f} | {sent:.0f} | {share:.0%} |",
    ]
    record({"bench": "owner_tokens", "date": now, "p99_alone_ms": round(alone, 3), "p99_hammered_ms": round(loud, 3),
            "p99_ratio": round(loud / alone, 3), "a_requests_per_second": round(sent), "a_limited_share": round(share, 3)}, md)
    print("\n".join(md))


if __name__ == "__main__":
    main()
