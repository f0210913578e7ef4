"""pearld on AF_XDP: IPv4 UDP crosses a fast-path VR both ways through AF_XDP
ports and stderr says they bound; their XDP programs go when pearld dies, even by SIGKILL; ports
AF_XDP cannot take (an MTU too large for its chunks, several rx queues, several workers) still
forward, on AF_PACKET, and stderr says why; with `rx: af_packet` the ports receive on PACKET
rings (no XDP program) and send through AF_XDP, as ports that name no driver do on veth, whose
peer would lose TSO to an XDP program."""

import os
import re
import signal
import time

import pytest
from scapy.all import IP, UDP, Ether, Raw, rdpcap, wrpcap

from netns import Network, sh

VR_MAC = ("02:00:00:00:07:00", "02:00:00:00:07:01")
HOST_MAC = {"a": "02:aa:00:00:00:07", "b": "02:bb:00:00:00:07"}

CONFIG = f"""
workers: {{workers}}
ports:
  - {{name: x0, interface: x0{{driver}}{{rx}}}}
  - {{name: x1, interface: x1{{driver}}{{rx}}}}
vrs:
  - name: red
    kind: fast
    code: ip
    interfaces:
      - {{name: eth0, port: x0, mac: "{VR_MAC[0]}", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: x1, mac: "{VR_MAC[1]}", addresses: [10.2.0.1/24]}}
    routes: [{{prefix: 198.51.100.0/24, via: 10.2.0.2}}]
    neighbors:
      - {{ip: 10.1.0.2, mac: "{HOST_MAC['a']}", interface: eth0}}
      - {{ip: 10.2.0.2, mac: "{HOST_MAC['b']}", interface: eth1}}
"""


def network(prefix):
    n = Network(f"{prefix}{os.getpid() % 100000}")
    n.host("a", "x0", HOST_MAC["a"], addrs=("10.1.0.2/24",))
    n.host("b", "x1", HOST_MAC["b"], addrs=("10.2.0.2/24",))
    return n


def start(n, bin_dir, tmp_path, workers=1, rx=None, driver="af_xdp"):
    """Starts pearld; returns its stderr once the API answers (every port is open by then)."""
    config = CONFIG.replace("{workers}", str(workers)).replace("{rx}", f", rx: {rx}" if rx else "")
    config = config.replace("{driver}", f", driver: {driver}" if driver else "")
    n.start_pearld(bin_dir, config, tmp_path)
    return (tmp_path / "pearld.log").read_text()


def has_xdp(n, dev):
    return "xdp" in sh("ip", "link", "show", "dev", dev, ns=n.router).stdout


def probes(src_mac, dst_mac, src, dst, tag):
    return [Ether(src=src_mac, dst=dst_mac) / IP(src=src, dst=dst, ttl=64) / UDP(sport=4000 + i, dport=5000)
            / Raw(b"%s%03d" % (tag, i) + bytes(range(i * 13 % 200))) for i in range(20)]


def crosses(n, tmp_path, sender, receiver, frames, out_mac, in_mac):
    """Sends `frames` from `sender`; checks each arrives at `receiver` once, bytes intact but for
    the TTL (one less, header checksum updated) and the MACs (rewritten)."""
    wrpcap(str(tmp_path / "in.pcap"), frames)
    sniffer = n.sniff(receiver, tmp_path / "out.pcap", 3)
    n.send(sender, tmp_path / "in.pcap")
    sniffer.wait(timeout=15)
    got = {bytes(f[Raw].load): f for f in rdpcap(str(tmp_path / "out.pcap")) if UDP in f and Raw in f}
    for s in frames:
        r = got.pop(bytes(s[Raw].load), None)
        assert r is not None, f"{bytes(s[Raw].load)[:6]} did not cross"
        assert (r[Ether].src, r[Ether].dst) == (out_mac, in_mac)
        want = s[IP].copy()
        want.ttl -= 1
        want.chksum = None
        assert bytes(r[IP]) == bytes(IP(bytes(want))), "the IP packet changed beyond its TTL"
    assert not got, "frames crossed more than once"


def both_ways(n, tmp_path):
    crosses(n, tmp_path, "a", "b", probes(HOST_MAC["a"], VR_MAC[0], "10.1.0.2", "198.51.100.7", b"ab"),
            VR_MAC[1], HOST_MAC["b"])
    crosses(n, tmp_path, "b", "a", probes(HOST_MAC["b"], VR_MAC[1], "10.2.0.2", "10.1.0.2", b"ba"),
            VR_MAC[0], HOST_MAC["a"])
    assert n.stats()["vrs"][0]["forwarded_packets"] == 40


def test_ipv4_udp_crosses_af_xdp_ports_both_ways(bin_dir, tmp_path):
    n = network("xt")
    try:
        log = start(n, bin_dir, tmp_path)
        # veth runs XDP in its driver; zero-copy needs a NIC that offers it.
        for i, port in enumerate(("x0", "x1")):
            assert f"pearld: ports[{i}] ({port}): AF_XDP, native XDP, copy mode\n" in log, log
            assert has_xdp(n, port)
        assert "AF_PACKET" not in log, log
        both_ways(n, tmp_path)
    finally:
        n.close()


def test_rx_af_packet_receives_on_packet_rings_and_sends_through_af_xdp(bin_dir, tmp_path):
    n = network("xs")
    try:
        log = start(n, bin_dir, tmp_path, rx="af_packet")
        for i, port in enumerate(("x0", "x1")):
            assert f"pearld: ports[{i}] ({port}): AF_XDP tx (copy mode), AF_PACKET rx\n" in log, log
            assert not has_xdp(n, port), "an XDP program would take the frames before the PACKET ring"
        both_ways(n, tmp_path)
    finally:
        n.close()


def test_ports_that_name_no_driver_on_veth_receive_on_packet_rings_and_say_why(bin_dir, tmp_path):
    n = network("xd")
    try:
        log = start(n, bin_dir, tmp_path, driver=None)
        for i, port in enumerate(("x0", "x1")):
            assert (f"pearld: ports[{i}] ({port}): AF_XDP tx (copy mode), AF_PACKET rx, chosen for a virtual device "
                    "(no driver: in the configuration)\n") in log, log
            assert not has_xdp(n, port), "an XDP program on the router's end would turn the host's TSO off"
        k = sh("ethtool", "-k", "eth0", ns=n.hosts["a"]).stdout
        assert "tcp-segmentation-offload: on" in k, k
        both_ways(n, tmp_path)
    finally:
        n.close()


def test_sigkill_leaves_no_xdp_program_behind(bin_dir, tmp_path):
    n = network("xk")
    try:
        start(n, bin_dir, tmp_path)
        assert has_xdp(n, "x0") and has_xdp(n, "x1")
        os.kill(n.pearld.pid, signal.SIGKILL)  # `ip netns exec` execs, so this is pearld itself
        n.pearld.wait(timeout=10)
        deadline = time.time() + 5
        while (has_xdp(n, "x0") or has_xdp(n, "x1")) and time.time() < deadline:
            time.sleep(0.05)
        assert not has_xdp(n, "x0") and not has_xdp(n, "x1"), "the kernel detaches a dead process's programs"
    finally:
        n.close()


@pytest.mark.parametrize("workers", [1, 2], ids=["unbindable-ports", "2-workers"])
def test_ports_af_xdp_cannot_take_forward_on_af_packet(bin_dir, tmp_path, workers):
    n = network("xf")
    try:
        if workers == 1:
            sh("ip", "link", "set", "dev", "x0", "mtu", "1800", ns=n.router)
            sh("ethtool", "-L", "x1", "rx", "2", ns=n.router)
        log = start(n, bin_dir, tmp_path, workers)
        if workers == 1:
            assert re.search(r"ports\[0\] \(x0\): AF_PACKET, because AF_XDP did not bind: af_xdp x0: MTU 1800 ", log), log
            assert re.search(r"ports\[1\] \(x1\): AF_PACKET, because AF_XDP did not bind: af_xdp x1: 2 rx queues", log), log
        else:
            for i, port in enumerate(("x0", "x1")):
                assert f"ports[{i}] ({port}): AF_PACKET with fanout, because AF_XDP binds one rx queue" in log, log
        assert not has_xdp(n, "x0") and not has_xdp(n, "x1")
        both_ways(n, tmp_path)
    finally:
        n.close()
