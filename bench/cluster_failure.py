#!/usr/bin/env python3
"""Failure timings of a PEARL cluster (issue 55): one machine, a real 3-member etcd, three
pearld in namespaces (tests/system/cluster_lab.py). For each of RUNS rounds:

- auto: a `node: auto` VR with two hosts runs on some node; that node's machine dies (pearld
  SIGKILL, its VR's namespaces gone); timed: → the node seen down by the others (`node list`),
  → the VR owned by a live node (its owner key), → the hosts reaching each other through it
  again (the VR and its hosts made there: the figure that matters).
- line (when the vxlan port driver is built): r1 — r2 — r3 on n1 n2 n3 with FRR OSPF; n2's
  pearld killed; timed: → carrier off at r1's link to r2, → OSPF withdrew the route behind it.

Medians to docs/benchmarks/cluster.{json,md}. Usage: bench/cluster_failure.py [RUNS] (as root).
"""

import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))

from cluster_lab import Cluster  # noqa: E402
from frr_host import FrrView, wait_until  # noqa: E402
from netns import sh  # noqa: E402
import test_cluster as tc  # noqa: E402

BIN = pathlib.Path(os.environ.get("PEARL_BIN_DIR", ROOT / "target" / "release"))


def poll(check, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return time.monotonic()
        time.sleep(interval)
    raise RuntimeError("timed out")


def auto_round(c, name):
    first = wait_until("placed", 30, lambda: c.vr_at(name, f"{tc.P}a"))
    wait_until("pings", 30, lambda: tc.pings(f"{name}-h1", "10.61.2.2"))
    other = next(n for n in c.node_ns if n != first)
    t0 = time.monotonic()
    c.kill_node(first, machine=True, vrs=[f"{tc.P}a", f"{name}-h1", f"{name}-h2"])
    down = poll(lambda: c.nodes(other)[first]["state"] == "down", 20)
    back = poll(lambda: (n := c.vr_at(name, f"{tc.P}a", via=other)) and n != first, 30)
    ping = poll(lambda: tc.pings(f"{name}-h1", "10.61.2.2"), 30, interval=0.1)
    c.start_node(first)
    wait_until("up again", 20, lambda: c.nodes(other)[first]["state"] == "up")
    return {"node_down_s": down - t0, "auto_vr_owned_on_a_live_node_s": back - t0, "hosts_reach_again_s": ping - t0}


def line_round(c, name):
    r1 = f"{tc.P}r1"
    def full():
        try:
            return len(FrrView(f"{tc.P}r2").ospf_full_neighbors()) == 2
        except RuntimeError:  # its daemons not up yet
            return False
    wait_until("OSPF full at r2", 90, full, interval=0.5)
    wait_until("route at r1", 30, lambda: tc.route_to(r1, "10.63.3.0/24"))
    t0 = time.monotonic()
    c.kill_node("n2")
    link = poll(lambda: not tc.carrier(r1, "eth1"), 20, interval=0.02)
    ospf = poll(lambda: not tc.route_to(r1, "10.63.3.0/24"), 10, interval=0.02)
    c.start_node("n2")
    healed = poll(lambda: tc.pings(f"{name}-h1", "10.63.3.2"), 90, interval=0.2)
    return {"link_down_at_far_vr_s": link - t0, "ospf_reconverged_s": ospf - t0, "healed_after_restart_s": healed - t0}


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="c62bench"))
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((l.split(":", 1)[1].strip() for l in cpu.splitlines() if l.startswith("Model name")), "?")
    result = {"cpu": model, "runs": runs, "lease_ttl_s": 5, "rounds": {"auto": [], "line": []},
              "note": "one machine shared with other builds and tests: a loaded machine",
              "peers": {"kubernetes_notready_s": 40, "kubernetes_eviction_s": 300, "calico_graceful_restart_s": 120}}
    c = Cluster(BIN, tmp, prefix=tc.P)
    try:
        c.watch_netns(f"{tc.P}a", "c62m-h1", "c62m-h2", *[f"{tc.P}r{i}" for i in (1, 2, 3)], "c62l-h1", "c62l-h2")
        assert c.apply("n1", "c62m", tc.one_vr_net("c62m", "auto")).returncode == 0
        for i in range(runs):
            r = auto_round(c, "c62m")
            print(f"auto round {i}: {r}", flush=True)
            result["rounds"]["auto"].append(r)
        c.ctl("n1", "net", "destroy", "c62m")
        if tc.has_vxlan(BIN):
            done = c.apply("n1", "c62l", tc.line_net("c62l", tmp))
            assert done.returncode == 0, done.stderr
            for i in range(runs):
                r = line_round(c, "c62l")
                print(f"line round {i}: {r}", flush=True)
                result["rounds"]["line"].append(r)
        else:
            result["line_skipped"] = "this build has no vxlan port driver (issue 55, part 1)"
    finally:
        c.close()
        shutil.rmtree(tmp, ignore_errors=True)
    med = {}
    for kind, rounds in result["rounds"].items():
        for k in (rounds[0] if rounds else {}):
            med[k] = round(statistics.median(r[k] for r in rounds), 2)
    result["medians_s"] = med
    out = ROOT / "docs" / "benchmarks"
    (out / "cluster.json").write_text(json.dumps(result, indent=2) + "\n")
    rows = "\n".join(f"| {k} | {v:.2f} |" for k, v in med.items())
    (out / "cluster.md").write_text(f"""# Cluster failure timings (issue 55)

Medians of {runs} runs, lease TTL 5 s (renewed every 1.7 s), one machine ({model}) shared
with other helpers' builds and tests (loaded). Published peers: Kubernetes marks a node
NotReady after 40 s and evicts its pods after 300 s; Calico's BGP graceful restart holds
routes 120 s.

| from the node's death to | seconds |
|---|---|
{rows}

{"Line (VXLAN) rounds skipped: " + result.get("line_skipped", "") if "line_skipped" in result else ""}

Reproduce: `sudo bench/cluster_failure.py {runs}` (writes this file and cluster.json).
""")
    print(json.dumps(med))


if __name__ == "__main__":
    main()
