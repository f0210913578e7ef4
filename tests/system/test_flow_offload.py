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

    def start(node="", driver="driver: af_packet", mtu=None):
        prefix = f"fo{os.getpid() % 10000}{len(started)}"
        n = two_hosts(prefix, mtu=mtu)
        started.append(n)
        n.vr, n.bin_dir = f"{prefix}v", bin_dir
        n.start_pearld(bin_dir, node + one_vr(n.vr, driver=driver), tmp_path)
        return n

    yield start
    for n in started:
        n.close()


def vr_stats(n):
    return next(v for v in n.stats()["vrs"] if v["name"] == n.vr)


def ctl(n, *args):
    return subprocess.run([str(n.bin_dir / "pearlctl"), "--socket", str(n.api), *map(str, args)], capture_output=True, text=True, timeout=30)


# "": a port as a new user first writes it, which on veth receives through a PACKET ring.
@pytest.mark.parametrize("driver", ["driver: af_packet", "driver: af_xdp, rx: af_packet", ""])
@pytest.mark.parametrize("dst", ["10.2.0.2", "2001:db8:2::2"])
def test_a_tcp_stream_is_forwarded_by_the_kernel_for_the_vr_and_counted_as_the_vrs(rig, driver, dst):
    n = rig(driver=driver)
    before = vr_stats(n)
    end = n.iperf("a", "b", dst, seconds=3)
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


def test_a_vr_whose_decisions_are_not_addresses_alone_keeps_its_flows(rig):
    """A rate-limited VR: the kernel would forward past its limit, so its TCP stays in the fast
    path, limited."""
    n = rig()
    done = ctl(n, "vr", "set", n.vr, "limits.rate_mbps=200")
    assert done.returncode == 0, done.stderr
    end = n.iperf("a", "b", "10.2.0.2", seconds=2)
    assert vr_stats(n)["offloaded_bytes"] == 0
    assert end["sum_received"]["bits_per_second"] < 300e6


def test_an_offloaded_flow_stops_the_moment_its_next_hop_changes_and_resumes_with_it(rig):
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
        wrong = ctl(n, "exec", n.vr, "--", "ip", "neigh", "replace", "10.2.0.2", "lladdr", "02:de:ad:00:00:02",
                    "nud", "permanent", "dev", "eth1")
        assert wrong.returncode == 0, wrong.stderr
        time.sleep(0.3)
        at = received()
        time.sleep(0.7)
        # Host b gets no frame of the stream any more (a few hundred bytes of its own at most).
        assert received() - at < 20_000, received() - at
        right = ctl(n, "exec", n.vr, "--", "ip", "neigh", "replace", "10.2.0.2", "lladdr", "02:aa:00:00:00:02",
                    "nud", "reachable", "dev", "eth1")
        assert right.returncode == 0, right.stderr
        # TCP retransmits after its backed-off timeout (about a second and a half by now).
        at = received()
        wait_until("the stream resumed", 6, lambda: received() - at > 10_000_000)
    finally:
        stream.join(timeout=40)
    assert "end" in result


def test_a_capture_sees_every_frame_of_a_flow_that_was_offloaded(rig, tmp_path):
    n = rig()
    stream = threading.Thread(target=lambda: n.iperf("a", "b", "10.2.0.2", seconds=5))
    stream.start()
    try:
        time.sleep(1.5)
        assert vr_stats(n)["offloaded_bytes"] > 0
        pcap = tmp_path / "stream.pcap"
        done = ctl(n, "capture", n.vr, "--seconds", "1", "-w", pcap)
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


def segments_from_a_to_b(n, port, count, size, pause):
    """Host a writes `count` messages of `size` random bytes to host b's `port`, one at a time
    (TCP_NODELAY and `pause` seconds between, so each leaves as a segment of its own); b reads
    until a closes. Returns what each side counted: (bytes, sha256) sent and received."""
    server = subprocess.Popen(["ip", "netns", "exec", n.hosts["b"], "python3", "-c",
                               "import hashlib, socket\n"
                               "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                               f"s.bind(('10.2.0.2', {port})); s.listen(1); c, _ = s.accept(); c.settimeout(20)\n"
                               "h, n = hashlib.sha256(), 0\n"
                               "while (d := c.recv(65536)):\n"
                               "    h.update(d); n += len(d)\n"
                               "print(n, h.hexdigest())\n"], stdout=subprocess.PIPE, text=True)
    n.procs.append(server)
    time.sleep(0.5)
    sent = sh("python3", "-c",
              "import hashlib, random, socket, time\n"
              f"r = random.Random({port}); h, n = hashlib.sha256(), 0\n"
              f"s = socket.create_connection(('10.2.0.2', {port})); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)\n"
              f"for i in range({count}):\n"
              f"    m = r.randbytes({size}); s.sendall(m); h.update(m); n += len(m); time.sleep({pause})\n"
              "s.close(); print(n, h.hexdigest())\n", ns=n.hosts["a"]).stdout.split()
    return sent, server.communicate(timeout=30)[0].split()


def test_jumbo_segments_of_an_offloaded_flow_arrive_whole(rig):
    """At MTU 9000 a segment that is no super-packet carries up to 8,948 bytes. The kernel
    program leaves its checksum marked for the receiver, as the Linux router does, instead of
    summing it; host b's stack must accept every such segment. Host a writes 8,000-byte
    messages one at a time (TCP_NODELAY, a pause between: each is a segment of its own), and b
    receives every byte, in order, most of them through the kernel program."""
    n = rig(mtu=9000)
    before = vr_stats(n)
    sent, got = segments_from_a_to_b(n, 7008, 60, 8000, 0.03)
    assert got == sent, f"host b received {got}, host a sent {sent} (bytes, sha256)"
    assert vr_stats(n)["offloaded_packets"] - before["offloaded_packets"] >= 40


def test_an_offloaded_flows_segments_arrive_whole_through_a_port_that_finishes_checksums_itself(rig, tmp_path):
    """Host a's stack leaves each TCP checksum for the device (checksum offload on its veth),
    and the offloaded flow's segments keep that mark, as the Linux router keeps it. PEARL's
    port toward b is made to finish checksums in software (tx checksumming off, as on a NIC
    without checksum offload; the hosts keep their defaults): it sums each segment over what
    its sender left in the checksum field, so a checksum filled in on the way would leave
    wrong and b would drop the segment. Every byte arrives, most of them forwarded by the
    kernel, and every segment b captures carries a right checksum."""
    n = rig()
    sh("ethtool", "-K", "p1", "tx", "off", ns=n.router)
    pcap = tmp_path / "b.pcap"
    sniffer = n.sniff("b", pcap, 6)
    before = vr_stats(n)
    sent, got = segments_from_a_to_b(n, 7007, 40, 80, 0.05)
    assert got == sent, f"host b received {got}, host a sent {sent} (bytes, sha256)"
    assert vr_stats(n)["offloaded_packets"] - before["offloaded_packets"] >= 20
    sniffer.wait(timeout=20)
    from scapy.all import IP
    segments = [p for p in rdpcap(str(pcap)) if TCP in p and p[TCP].dport == 7007 and len(p[TCP].payload) > 0]
    assert len(segments) >= 30, len(segments)
    for p in segments:
        want = p[TCP].chksum
        again = IP(bytes(p[IP]))
        del again[TCP].chksum
        assert IP(bytes(again))[TCP].chksum == want, f"segment {bytes(p[TCP].payload)[:20]!r} arrived with a wrong checksum"
