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
    sent = int(subprocess.run(["ip", "netns", "exec", net.hosts["a"], sys.executable, str(HERE / "seq_udp.py"), "send", "10.2.0.2",
                               "4001", str(pps), str(seconds)], capture_output=True, text=True, check=True).stdout)
    got = json.loads(sink.communicate(timeout=seconds + 30)[0])
    after = [w["rx_packets"] for w in net.stats()["workers"]]
    return [a - b for a, b in zip(after, before)], got, sent


@pytest.mark.parametrize("distribution", ["flow", "round_robin"])
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
        assert got["reordered"] == 0, got
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
