"""Flow offload (`node.flow_offload`, on by default): a fast VR's TCP flows, once the fast path
has routed them, are forwarded by the kernel (a tcx program on the port) with the fast path's
decision, whole super-packets and all; counted in the VR's statistics; gone from the kernel
the moment the tables they were decided from change; never while a capture runs. Hosts keep
the kernel's default offloads."""

import os
import subprocess
import threading
import time

import pytest
from scapy.all import TCP, rdpcap

from netns import one_vr, sh, two_hosts
from frr_host import wait_until
from test_api import get


@pytest.fixture
def rig(bin_dir, tmp_path):
    started = []

    def start(node=""):
        prefix = f"fo{os.getpid() % 10000}{len(started)}"
        n = two_hosts(prefix)
        started.append(n)
        n.vr = f"{prefix}v"
        n.start_pearld(bin_dir, node + one_vr(n.vr), tmp_path)
        return n

    yield start
    for n in started:
        n.close()


def vr_stats(n):
    return next(v for v in n.stats()["vrs"] if v["name"] == n.vr)


def ctl(bin_dir, n, *args):
    return subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(n.api), *map(str, args)], capture_output=True, text=True, timeout=30)


def test_a_tcp_stream_is_forwarded_by_the_kernel_for_the_vr_and_counted_as_the_vrs(rig, bin_dir):
    n = rig()
    before = vr_stats(n)
    end = n.iperf("a", "b", "10.2.0.2", seconds=3)
    received = end["sum_received"]["bytes"]
    after = vr_stats(n)
    offloaded = after["offloaded_bytes"] - before["offloaded_bytes"]
    forwarded = after["forwarded_bytes"] - before["forwarded_bytes"]
    # Nearly all of the stream left through the kernel; the VR's counters hold all of it
    # (headers included), the offloaded part as well.
    assert offloaded > 0.9 * received, (offloaded, received)
    assert forwarded >= received, (forwarded, received)
    assert after["offloaded_packets"] > before["offloaded_packets"]
    p1 = next(p for p in n.stats()["ports"] if p["name"] == "p1")
    assert p1["tx_bytes"] >= received
    status, _, body = get(n, "/metrics")
    assert status == 200
    line = next(l for l in body.decode().splitlines() if l.startswith("pearl_vr_offloaded_bytes_total") and n.vr in l)
    assert float(line.split()[-1]) >= offloaded


def test_an_offloaded_flow_stops_the_moment_its_next_hop_changes_and_resumes_with_it(rig, bin_dir):
    """The VR's kernel learns another MAC for host b (routed mirrors it into the next hops):
    the kernel's copy of the flow goes with the old next hop, so host b, whose MAC it no
    longer is, receives nothing more; given b's MAC again, the stream resumes."""
    n = rig()
    result = {}
    stream = threading.Thread(target=lambda: result.update(end=n.iperf("a", "b", "10.2.0.2", seconds=8)))
    received = lambda: int(sh("cat", "/sys/class/net/eth0/statistics/rx_bytes", ns=n.hosts["b"]).stdout)
    stream.start()
    try:
        time.sleep(1.5)
        assert vr_stats(n)["offloaded_bytes"] > 0, "the stream is offloaded before the change"
        wrong = ctl(bin_dir, n, "exec", n.vr, "--", "ip", "neigh", "replace", "10.2.0.2", "lladdr", "02:de:ad:00:00:02",
                    "nud", "permanent", "dev", "eth1")
        assert wrong.returncode == 0, wrong.stderr
        time.sleep(0.3)
        at = received()
        time.sleep(0.7)
        # Host b gets no frame of the stream any more (a few hundred bytes of its own at most).
        assert received() - at < 20_000, received() - at
        right = ctl(bin_dir, n, "exec", n.vr, "--", "ip", "neigh", "replace", "10.2.0.2", "lladdr", "02:aa:00:00:00:02",
                    "nud", "reachable", "dev", "eth1")
        assert right.returncode == 0, right.stderr
        # TCP retransmits after its backed-off timeout (about a second and a half by now).
        at = received()
        wait_until("the stream resumed", 6, lambda: received() - at > 10_000_000)
    finally:
        stream.join(timeout=40)
    assert "end" in result


def test_a_capture_sees_every_frame_of_a_flow_that_was_offloaded(rig, bin_dir, tmp_path):
    n = rig()
    stream = threading.Thread(target=lambda: n.iperf("a", "b", "10.2.0.2", seconds=5))
    stream.start()
    try:
        time.sleep(1.5)
        assert vr_stats(n)["offloaded_bytes"] > 0
        pcap = tmp_path / "stream.pcap"
        done = ctl(bin_dir, n, "capture", n.vr, "--seconds", "1", "-w", pcap)
        assert done.returncode == 0, done.stderr
        frames = [f for f in rdpcap(str(pcap)) if TCP in f and f[TCP].dport == 5211]
        assert len(frames) > 100, len(frames)
    finally:
        stream.join(timeout=40)


def test_with_flow_offload_off_tcp_stays_in_the_fast_path(rig):
    n = rig("node: {flow_offload: false}\n")
    end = n.iperf("a", "b", "10.2.0.2", seconds=2)
    s = vr_stats(n)
    assert s["offloaded_bytes"] == 0
    assert s["forwarded_bytes"] >= end["sum_received"]["bytes"]


def test_a_bad_flow_offload_value_is_refused_naming_the_field(bin_dir, tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("node: {flow_offload: sometimes}\nports: []\nvrs: []\n")
    done = subprocess.run([str(bin_dir / "pearld"), "--config", str(cfg), "--api", str(tmp_path / "x.sock"), "--state", str(tmp_path)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "node.flow_offload" in done.stderr + done.stdout
