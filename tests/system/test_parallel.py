"""A VR's traffic over several workers (issue 18): with `workers: 2` and a VR asking for
`resources: {workers: 2}`, the kernel spreads its ports' frames over both workers as the VR's
`distribution:` says: `flow` keeps a flow on one worker and in order, `round_robin` deals its
frames out in turn (PdP's policy, which reorders). Shown with one UDP flow from hosts with the
kernel's defaults, counted per worker by pearld and per sequence number at the receiver. The
throughput figures are a benchmark, not asserted here."""

import json
import os
import subprocess
import sys
import time

import pytest

from netns import HERE, two_hosts
from test_frr import remove_vr_leftovers


def config(vr, distribution):
    return f"""
workers: 2
ports:
  - {{name: p0, interface: p0, driver: af_packet}}
  - {{name: p1, interface: p1, driver: af_packet}}
vrs:
  - name: {vr}
    resources: {{workers: 2}}
    distribution: {distribution}
    interfaces:
      - {{name: eth0, port: p0, mac: "02:00:00:00:0c:00", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: p1, mac: "02:00:00:00:0c:01", addresses: [10.2.0.1/24]}}
    neighbors:
      - {{ip: 10.2.0.2, mac: "02:aa:00:00:00:02", interface: eth1}}
"""


@pytest.fixture
def net():
    n = two_hosts(f"tw{os.getpid() % 100000}")
    n.vr = f"{n.prefix}va"
    try:
        yield n
    finally:
        n.close()
        remove_vr_leftovers(n.vr)


def one_flow(net, pps=3000, seconds=3):
    """Sends one UDP flow a → b; (frames each worker received meanwhile, what the sink saw, sent)."""
    before = [w["rx_packets"] for w in net.stats()["workers"]]
    sink = subprocess.Popen(["ip", "netns", "exec", net.hosts["b"], sys.executable, str(HERE / "seq_udp.py"), "sink", "4001",
                             str(seconds)], stdout=subprocess.PIPE, text=True)
    net.procs.append(sink)
    time.sleep(0.5)
    # Pinned: a veth queues what it is sent on the sending CPU's backlog, so a sender that moves
    # between CPUs reorders its own datagrams before any router sees them.
    sent = int(subprocess.run(["ip", "netns", "exec", net.hosts["a"], "taskset", "-c", "0", sys.executable, str(HERE / "seq_udp.py"), "send", "10.2.0.2",
                               "4001", str(pps), str(seconds)], capture_output=True, text=True, check=True).stdout)
    got = json.loads(sink.communicate(timeout=seconds + 30)[0])
    after = [w["rx_packets"] for w in net.stats()["workers"]]
    return [a - b for a, b in zip(after, before)], got, sent


@pytest.mark.parametrize("distribution", ["flow", "round_robin", "proportional"])
def test_a_vrs_frames_are_spread_over_the_workers_as_its_distribution_says(net, bin_dir, tmp_path, distribution):
    net.start_pearld(bin_dir, config(net.vr, distribution), tmp_path)
    vr = json.loads(subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), "vr", "show", net.vr, "--json"],
                                   capture_output=True, text=True, check=True).stdout)
    assert (vr["distribution"], vr["resources"]["workers"]) == (distribution, 2)
    subprocess.run(["ip", "netns", "exec", net.hosts["a"], "ping", "-c", "2", "-W", "1", "10.2.0.2"], check=True, capture_output=True)
    per_worker, got, sent = one_flow(net)
    print(distribution, "per worker", per_worker, "sink", got, "sent", sent)
    assert got["unique"] == sent, got
    share = sorted(w / sum(per_worker) for w in per_worker)
    if distribution == "flow":
        assert share[-1] > 0.95, per_worker
        # One worker carries the flow, in order. The kernel may still swap a few frames after
        # pearld: a veth hands what a thread sends to the backlog of the CPU it runs on, and
        # when that backlog's softirq is deferred (ksoftirqd, on a busy machine) while the
        # unpinned worker moves to the other CPU, the next frames can overtake (seen: 3 of
        # 9,000 in one run of 14). Spreading the flow would reorder a third of it.
        assert got["reordered"] <= sent // 1000, got
    else:
        assert share[0] > 0.35, per_worker


def test_a_distribution_that_a_ports_other_vrs_do_not_share_is_refused_by_field(net, bin_dir, tmp_path):
    net.start_pearld(bin_dir, config(net.vr, "round_robin"), tmp_path)
    other = f"{net.prefix}vb"
    try:
        done = subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), "vr", "create", other, "--interface",
                               "name=eth0,port=p0,mac=02:00:00:00:0c:10,address=10.9.0.1/24"], capture_output=True, text=True)
        assert done.returncode != 0 and "vrs[1].distribution" in done.stderr and "round_robin" in done.stderr, done.stderr
        assert not os.path.exists(f"/run/netns/{other}")
    finally:
        remove_vr_leftovers(other)


def many_flows(net, flows=32, each=40):
    """Sends `each` datagrams on each of `flows` UDP flows a → b; the frames each worker received meanwhile."""
    before = [w["rx_packets"] for w in net.stats()["workers"]]
    # A round of one datagram a flow every 5 ms: bursts the rings hold even when the machine is busy.
    script = ("import socket, time\n"
              f"socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range({flows})]\n"
              f"for _ in range({each}):\n"
              "    for s in socks: s.sendto(b'x' * 64, ('10.2.0.2', 4009))\n"
              "    time.sleep(0.005)\n")
    subprocess.run(["ip", "netns", "exec", net.hosts["a"], sys.executable, "-c", script], check=True)
    time.sleep(0.5)
    after = [w["rx_packets"] for w in net.stats()["workers"]]
    return [a - b for a, b in zip(after, before)]


def test_a_vr_runs_on_the_workers_slice_alloc_gives_it_and_moves_when_its_request_changes(net, bin_dir, tmp_path):
    """PdP's SliceAlloc: a VR asking for one of two workers gets one whole (idle) worker, and
    its ports' frames, of every flow, go to that worker alone; asking for both at run time
    spreads them over both. Without slicing, 32 flows would spread over both from the start."""
    net.start_pearld(bin_dir, config(net.vr, "flow").replace("resources: {workers: 2}", "resources: {workers: 1}"), tmp_path)
    ctl = [str(bin_dir / "pearlctl"), "--socket", str(net.api)]

    def shown():
        return json.loads(subprocess.run(ctl + ["vr", "show", net.vr, "--json"], capture_output=True, text=True, check=True).stdout)

    vr = shown()
    assert vr["workers"] == [0] and vr["slices"] == [{"worker": 0, "pps": 950000}], vr
    node = json.loads(subprocess.run(ctl + ["node", "--json"], capture_output=True, text=True, check=True).stdout)
    assert [v["workers"] for v in node["vrs"] if v["name"] == net.vr] == [[0]], node["vrs"]
    subprocess.run(["ip", "netns", "exec", net.hosts["a"], "ping", "-c", "2", "-W", "1", "10.2.0.2"], check=True, capture_output=True)
    per_worker = many_flows(net)
    print("workers: 1 →", per_worker)
    assert per_worker[0] >= 0.9 * 32 * 40 and per_worker[1] == 0, per_worker

    subprocess.run(ctl + ["vr", "set", net.vr, "resources.workers=2"], check=True, capture_output=True)
    vr = shown()
    assert vr["workers"] == [0, 1] and "slices" not in vr, vr
    # 64 flows: with 32, a fair hash leaves a worker under a fifth of them about once in 2,000
    # runs (CI met one); with 64, about once in a million.
    per_worker = many_flows(net, flows=64)
    print("workers: 2 →", per_worker)
    assert sum(per_worker) >= 0.9 * 64 * 40 and min(per_worker) > 0.2 * sum(per_worker), per_worker
