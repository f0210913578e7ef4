"""routed inside pearld: the VR's kernel is the truth for its routes and neighbours. A route
added with `ip -n VR route add` is forwarded by the fast path; neighbours the VR's kernel
resolves become fast-path next hops, so after the first packets nothing more takes the slow
path."""

import os
import time

import pytest
from scapy.all import IP, UDP, Ether, Raw, rdpcap, wrpcap

from netns import sh
from test_slow_path import HOST_A, config, ping, two_hosts


@pytest.fixture
def vr_net(bin_dir, tmp_path):
    prefix = f"rt{os.getpid() % 100000}"
    n = two_hosts(prefix)
    n.vr = f"{prefix}v"
    try:
        n.start_pearld(bin_dir, config(n.vr), tmp_path)
        yield n
    finally:
        n.close()


def vr_stats(n):
    return n.stats()["vrs"][0]


def test_resolved_neighbours_move_traffic_to_the_fast_path(vr_net):
    assert ping(vr_net, "a", "10.2.0.2").returncode == 0
    before = vr_stats(vr_net)
    done = sh("ping", "-c", "20", "-i", "0.05", "-W", "1", "10.2.0.2", ns=vr_net.hosts["a"], check=False)
    assert " 0% packet loss" in done.stdout, done.stdout
    after = vr_stats(vr_net)
    forwarded = after["forwarded_packets"] - before["forwarded_packets"]
    # Hosts' own multicast chatter (IPv6 router solicitations, MLD) goes to the slow path too.
    unicast = [r for r in after["exceptions"] if r not in ("multicast", "nd")]
    slow = sum(after["exceptions"][r] - before["exceptions"][r] for r in unicast)
    assert forwarded >= 40, f"requests and replies both fast-pathed: {forwarded}"
    assert slow <= 4, f"at most a few ARP refreshes on the slow path: {slow}"
    assert after["routed"]["neighbors"] >= 2, after["routed"]


def test_a_route_added_in_the_vr_kernel_is_forwarded_by_the_fast_path(vr_net, tmp_path):
    assert ping(vr_net, "a", "10.2.0.2").returncode == 0  # resolves the next hop
    sh("ip", "-n", vr_net.vr, "route", "add", "198.51.100.0/24", "via", "10.2.0.2")
    deadline = time.time() + 2
    while vr_stats(vr_net)["routed"]["routes_v4"] == 0 or not any(
            "198.51.100.0/24" in line for line in sh("ip", "-n", vr_net.vr, "route").stdout.splitlines()):
        assert time.time() < deadline
        time.sleep(0.05)
    frames = [Ether(dst="02:00:00:00:01:00", src=HOST_A) / IP(src="10.1.0.2", dst="198.51.100.7", ttl=9)
              / UDP(sport=4000, dport=5000) / Raw(b"x" * 20) for _ in range(10)]
    wrpcap(str(tmp_path / "in.pcap"), frames)
    before = vr_stats(vr_net)["forwarded_packets"]
    sniffer = vr_net.sniff("b", tmp_path / "b.pcap", 3)
    vr_net.send("a", tmp_path / "in.pcap")
    sniffer.wait(timeout=15)
    got = [p for p in rdpcap(str(tmp_path / "b.pcap")) if IP in p and p[IP].dst == "198.51.100.7"]
    assert len(got) == 10, f"{len(got)} of 10 arrived"
    assert all(p[IP].ttl == 8 for p in got)
    assert vr_stats(vr_net)["forwarded_packets"] - before >= 10, "the fast path carried them"
