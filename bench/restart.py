#!/usr/bin/env python3
"""The forwarding gap of a pearld restart (issue 50, live restore): docs/benchmarks/restart.{json,md}.
One VR between hosts a and b (fast, kernel or shared) forwards a numbered UDP datagram every
`--interval` from a to b while pearld gets SIGTERM (what `systemctl restart` sends) and is started again on the same
file; per run: datagrams lost, the longest gap between two arrivals, and how long pearld took from
the signal to answering its API again. The peer: the Linux kernel router on the same topology
(the router namespace forwarding itself), whose gap is the sending interval: it has no daemon to
restart. BGP: a fast VR whose FRR holds a session with FRR on host a, restarted the same way;
the session's established count, uptime and daemon pids before and after.

  sudo bench/restart.py [--runs 3] [--interval 0.001]
"""

import argparse
import datetime
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
from frr_host import FrrView, frr_bgp_config, prefixes, wait_until  # noqa: E402
from netns import Network, sh, two_hosts  # noqa: E402
from test_frr import bgp_speaker, lan_behind, vr_config  # noqa: E402
from test_slow_path import config, ping  # noqa: E402


RECEIVER = """
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 9999))
s.settimeout(0.2)
end, seen, arrivals = time.monotonic() + float(sys.argv[1]), set(), []
while time.monotonic() < end:
    try:
        data = s.recv(64)
    except socket.timeout:
        continue
    seen.add(int(data))
    arrivals.append(time.monotonic())
gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
print(json.dumps({"received": len(seen), "longest_gap_ms": max(gaps, default=0) * 1e3}))
"""

SENDER = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
interval, count = float(sys.argv[1]), int(sys.argv[2])
start = time.monotonic()
for seq in range(count):
    while time.monotonic() < start + seq * interval:
        pass
    try:
        s.sendto(str(seq).encode(), ("10.2.0.2", 9999))
    except OSError:
        pass
print(count)
"""


def stream_through(n, seconds, interval):
    """A UDP datagram every `interval` from host a to host b, numbered, for `seconds`: the
    receiver's process (started first) and the sender's."""
    receiver = subprocess.Popen(["ip", "netns", "exec", n.hosts["b"], sys.executable, "-c", RECEIVER, str(seconds + 1.5)],
                                stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    sender = subprocess.Popen(["ip", "netns", "exec", n.hosts["a"], sys.executable, "-c", SENDER, str(interval),
                               str(int(seconds / interval))], stdout=subprocess.PIPE, text=True)
    return receiver, sender


def gap_of(flow):
    """(datagrams lost, datagrams sent, the longest time between two arrivals in ms)."""
    receiver, sender = flow
    sent = int(sender.communicate(timeout=120)[0])
    got = json.loads(receiver.communicate(timeout=120)[0])
    return sent - got["received"], sent, got["longest_gap_ms"]


def restart_run(bin_dir, kind, interval, k):
    prefix = f"bR{os.getpid() % 1000}{k}"
    n = two_hosts(prefix)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pearl-restart-"))
    try:
        # A shared VR's MACs name its id (0) and interfaces.
        macs = ("02:00:00:00:00:00", "02:00:00:00:00:01") if kind == "shared" else ("02:00:00:00:01:00", "02:00:00:00:01:01")
        text = config(f"{prefix}v", kind=kind, macs=macs)
        n.start_pearld(bin_dir, text, tmp)
        wait_until("forwarding", 10, lambda: ping(n, "a", "10.2.0.2").returncode == 0)
        flow = stream_through(n, 5, interval)
        time.sleep(1.5)
        stopped = time.monotonic()
        n.pearld.send_signal(signal.SIGTERM)
        n.pearld.wait(timeout=30)
        n.start_pearld(bin_dir, text, tmp)
        back = time.monotonic() - stopped
        lost, sent, longest = gap_of(flow)
        return {"lost": lost, "sent": sent, "longest_gap_ms": longest, "restart_ms": back * 1e3}
    finally:
        n.close()


def kernel_router_run(interval, k):
    """The router namespace forwarding by itself, nothing restarted."""
    prefix = f"bK{os.getpid() % 1000}{k}"
    n = two_hosts(prefix)
    try:
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=n.router)
        sh("ip", "addr", "add", "10.1.0.1/24", "dev", "p0", ns=n.router)
        sh("ip", "addr", "add", "10.2.0.1/24", "dev", "p1", ns=n.router)
        wait_until("forwarding", 10, lambda: ping(n, "a", "10.2.0.2").returncode == 0)
        lost, sent, longest = gap_of(stream_through(n, 5, interval))
        return {"lost": lost, "sent": sent, "longest_gap_ms": longest, "restart_ms": 0.0}
    finally:
        n.close()


def bgp_run(bin_dir, k):
    prefix = f"bB{os.getpid() % 1000}{k}"
    n = Network(prefix)
    n.closers = []
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pearl-restart-bgp-"))
    vr = f"{prefix}v"
    try:
        n.host("a", "p0", "02:aa:00:00:00:01", addrs=("10.1.0.2/24",), routes=("route add 10.2.0.0/24 via 10.1.0.1",))
        n.host("b", "p1", "02:aa:00:00:00:02", addrs=("10.2.0.2/24",), routes=("route add default via 10.2.0.1",))
        lan_behind(n.hosts["a"])
        conf = tmp / "vr-frr.conf"
        conf.write_text(frr_bgp_config(65001, "10.1.0.1", [("10.1.0.2", 65002)]))
        text = vr_config(vr, conf, ["bgpd"])
        n.start_pearld(bin_dir, text, tmp)
        n.closers.append(bgp_speaker(n.hosts["a"], prefixes(100)).close)
        view = FrrView(vr)
        wait_until("the session established", 60, lambda: view.bgp_peer("10.1.0.2").get("state") == "Established")
        before = view.bgp_peer("10.1.0.2")
        pids = {d: open(f"/var/run/frr/{vr}/{d}.pid").read().strip() for d in ("zebra", "bgpd")}
        n.pearld.send_signal(signal.SIGTERM)
        n.pearld.wait(timeout=30)
        n.start_pearld(bin_dir, text, tmp)
        time.sleep(2)
        after = view.bgp_peer("10.1.0.2")
        return {
            "state_after": after.get("state"),
            "established_before": before.get("connectionsEstablished"),
            "established_after": after.get("connectionsEstablished"),
            # FRR states it as now less the uptime, in whole seconds: one either way is the same.
            "uptime_kept": abs(before.get("peerUptimeEstablishedEpoch", 0) - after.get("peerUptimeEstablishedEpoch", -9)) <= 1,
            "daemons_kept": pids == {d: open(f"/var/run/frr/{vr}/{d}.pid").read().strip() for d in pids},
        }
    finally:
        for close in reversed(n.closers):
            close()
        n.close()


def median_of(runs, key):
    return statistics.median(r[key] for r in runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--interval", type=float, default=0.001)
    ap.add_argument("--bin", default=str(ROOT / "target/release"))
    ap.add_argument("--out", default=str(ROOT / "docs/benchmarks/restart.json"))
    args = ap.parse_args()
    bin_dir = pathlib.Path(args.bin)
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "cpu": next((line.split(":", 1)[1].strip() for line in subprocess.run(["lscpu"], capture_output=True, text=True)
                           .stdout.splitlines() if line.startswith("Model name")), "unknown"),
              "interval_ms": args.interval * 1e3, "runs": args.runs, "restart": {}}
    kinds = {"kernel router (no daemon)": lambda k: kernel_router_run(args.interval, k)}
    for kind in ("fast", "kernel", "shared"):
        kinds[f"{kind} VR"] = lambda k, kind=kind: restart_run(bin_dir, kind, args.interval, k)
    for name, run in kinds.items():
        runs = [run(k) for k in range(args.runs)]
        result["restart"][name] = {"runs": runs, **{f"median_{key}": median_of(runs, key)
                                                    for key in ("lost", "longest_gap_ms", "restart_ms")}}
        print(name, json.dumps(result["restart"][name]), flush=True)
    result["bgp"] = [bgp_run(bin_dir, k) for k in range(args.runs)]
    print("bgp", json.dumps(result["bgp"]), flush=True)
    pathlib.Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
