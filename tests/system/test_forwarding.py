"""Real packets from host namespaces through pearld's fast path: two VRs with the same
addresses and prefixes on different ports, IPv4 and IPv6, UDP and ICMP; isolation; a burst of
malformed frames that is dropped and counted while good traffic keeps flowing."""

import os
import re
import time

import pytest
from scapy.all import ICMP, IP, UDP, Ether, ICMPv6EchoRequest, IPv6, Raw, rdpcap, wrpcap

from netns import Network

VR_MAC = {("red", 0): "02:00:00:00:01:00", ("red", 1): "02:00:00:00:01:01",
          ("blue", 0): "02:00:00:00:02:00", ("blue", 1): "02:00:00:00:02:01"}
HOST_MAC = {"ra": "02:aa:00:00:00:01", "rb": "02:aa:00:00:00:02",
            "ba": "02:bb:00:00:00:01", "bb": "02:bb:00:00:00:02"}


def vr_yaml(name, ports, code, hosts):
    a, b = hosts
    return f"""
  - name: {{prefix}}{name}
    kind: fast
    code: {code}
    interfaces:
      - {{name: eth0, port: {ports[0]}, mac: "{VR_MAC[(name, 0)]}", addresses: [10.1.0.1/24, "2001:db8:1::1/64"]}}
      - {{name: eth1, port: {ports[1]}, mac: "{VR_MAC[(name, 1)]}", addresses: [10.2.0.1/24, "2001:db8:2::1/64"]}}
    routes:
      - {{prefix: 198.51.100.0/24, via: 10.2.0.2}}
      - {{prefix: "2001:db8:100::/48", via: "2001:db8:2::2"}}
    neighbors:
      - {{ip: 10.1.0.2, mac: "{HOST_MAC[a]}", interface: eth0}}
      - {{ip: 10.2.0.2, mac: "{HOST_MAC[b]}", interface: eth1}}
      - {{ip: "2001:db8:1::2", mac: "{HOST_MAC[a]}", interface: eth0}}
      - {{ip: "2001:db8:2::2", mac: "{HOST_MAC[b]}", interface: eth1}}
"""


CONFIG = f"""
workers: {{workers}}
ports:
  - {{name: a0, interface: a0, driver: af_packet}}
  - {{name: a1, interface: a1, driver: af_packet}}
  - {{name: b0, interface: b0, driver: af_packet}}
  - {{name: b1, interface: b1, driver: af_packet}}
vrs:
{vr_yaml("red", ("a0", "a1"), "ip", ("ra", "rb"))}
{vr_yaml("blue", ("b0", "b1"), "ip", ("ba", "bb"))}
"""


@pytest.fixture(params=[1, 2], ids=["1-worker", "2-workers"])
def net(bin_dir, tmp_path, request):
    n = Network(f"tf{os.getpid() % 100000}")
    try:
        for host, port, addr4, addr6 in (("ra", "a0", "10.1.0.2/24", "2001:db8:1::2/64"),
                                         ("rb", "a1", "10.2.0.2/24", "2001:db8:2::2/64"),
                                         ("ba", "b0", "10.1.0.2/24", "2001:db8:1::2/64"),
                                         ("bb", "b1", "10.2.0.2/24", "2001:db8:2::2/64")):
            n.host(host, port, HOST_MAC[host], addrs=(addr4, addr6))
        # VR namespaces are global: the test's prefix keeps them its own.
        text = CONFIG.replace("{workers}", str(request.param)).replace("{prefix}", n.prefix)
        n.start_pearld(bin_dir, text, tmp_path)
        yield n
    finally:
        n.close()


def exchange(net, tmp_path, sender, frames, listeners, seconds=3):
    """Sends `frames` from `sender`; returns what each listener host received."""
    wrpcap(str(tmp_path / "in.pcap"), frames)
    sniffers = {h: net.sniff(h, tmp_path / f"{h}.pcap", seconds, wait=False) for h in listeners}
    net.listening(*sniffers.values())
    net.send(sender, tmp_path / "in.pcap")
    got = {}
    for h, p in sniffers.items():
        p.wait(timeout=seconds + 10)
        got[h] = rdpcap(str(tmp_path / f"{h}.pcap"))
    return got


def probes(vr, src_mac):
    mac = VR_MAC[(vr, 0)]
    return [
        Ether(src=src_mac, dst=mac) / IP(src="10.1.0.2", dst="10.2.0.2", ttl=64) / UDP(sport=1111, dport=2222) / Raw(b"v4-udp-" + vr.encode()),
        Ether(src=src_mac, dst=mac) / IP(src="10.1.0.2", dst="198.51.100.7", ttl=17) / ICMP(id=7, seq=1) / Raw(b"v4-icmp-" + vr.encode()),
        Ether(src=src_mac, dst=mac) / IPv6(src="2001:db8:1::2", dst="2001:db8:2::2", hlim=64) / UDP(sport=1111, dport=2222) / Raw(b"v6-udp-" + vr.encode()),
        Ether(src=src_mac, dst=mac) / IPv6(src="2001:db8:1::2", dst="2001:db8:100::7", hlim=9) / ICMPv6EchoRequest(id=7, seq=1) / Raw(b"v6-icmp-" + vr.encode()),
    ]


MARKER = re.compile(rb"(v[46]-(?:udp|icmp)-(?:red|blue)|good\d{3})")


def marker(frame):
    m = MARKER.search(bytes(frame))
    return m.group(1) if m else None


def payloads(frames):
    """The test markers carried by `frames` (scapy files ICMP echo data outside `Raw`)."""
    return sorted(m for m in map(marker, frames) if m)


def check_forwarded(sent, received, vr, host):
    """Each probe arrived once: TTL/hop limit one less, checksums valid, MACs rewritten."""
    assert payloads(received) == payloads(sent)
    by_payload = {marker(f): f for f in received if marker(f)}
    for s in sent:
        r = by_payload[marker(s)]
        assert r[Ether].src == VR_MAC[(vr, 1)] and r[Ether].dst == HOST_MAC[host]
        if IP in s:
            assert r[IP].ttl == s[IP].ttl - 1
            chk = r[IP].chksum
            r[IP].chksum = None
            assert IP(bytes(r[IP]))[IP].chksum == chk, "IPv4 header checksum"
        else:
            assert r[IPv6].hlim == s[IPv6].hlim - 1
        assert l4_checksum_ok(r), f"L4 checksum of {marker(r)}"


def l4_checksum_ok(frame):
    """Recomputes the transport checksum and compares it with the one carried."""
    for layer, field in ((UDP, "chksum"), (ICMP, "chksum"), (ICMPv6EchoRequest, "cksum")):
        if layer in frame:
            carried = getattr(frame[layer], field)
            copy = frame.copy()
            setattr(copy[layer], field, None)
            return getattr(Ether(bytes(copy))[layer], field) == carried
    raise AssertionError("no transport layer")


def test_ipv4_and_ipv6_udp_and_icmp_cross_two_vrs_independently(net, tmp_path):
    for vr, src, dst, other in (("red", "ra", "rb", "bb"), ("blue", "ba", "bb", "rb")):
        sent = probes(vr, HOST_MAC[src])
        got = exchange(net, tmp_path, src, sent, (dst, other))
        check_forwarded(sent, got[dst], vr, dst)
        assert payloads(got[other]) == [], f"{vr}'s packets leaked to {other}"
    stats = net.stats()
    for v in stats["vrs"]:
        assert v["forwarded_packets"] == 4, v


def test_exceptions_are_counted_per_vr_and_reason(net, tmp_path):
    mac = VR_MAC[("red", 0)]
    src = HOST_MAC["ra"]
    frames = [
        Ether(src=src, dst=mac) / IP(src="10.1.0.2", dst="10.2.0.2", ttl=1) / UDP(),            # ttl_expired
        Ether(src=src, dst=mac) / IP(src="10.1.0.2", dst="203.0.113.9") / UDP(),                 # no_route
        Ether(src=src, dst=mac) / IP(src="10.1.0.2", dst="10.1.0.1") / ICMP(),                   # local
        Ether(src=src, dst=mac) / IP(src="10.1.0.2", dst="10.2.0.77") / UDP(),                   # unresolved_neighbor
        Ether(src=src, dst=mac) / IP(src="10.1.0.2", dst="10.2.0.2", options=b"\x94\x04\x00\x00") / UDP(),  # ipv4_options
        Ether(src=src, dst=mac, type=0x88b5) / Raw(b"x" * 50),                                   # non_ip
        Ether(src=src, dst=mac) / IPv6(src="2001:db8:1::2", dst="2001:db8:2::2", hlim=1) / UDP(),  # ttl_expired
    ]
    got = exchange(net, tmp_path, "ra", frames, ("rb",), seconds=2)
    assert payloads(got["rb"]) == []
    exc = net.stats()["vrs"][0]["exceptions"]
    want = {"ttl_expired": 2, "no_route": 1, "local": 1, "unresolved_neighbor": 1, "ipv4_options": 1, "non_ip": 1}
    # The hosts' kernels add their own router solicitations and MLD reports (nd, multicast).
    background = {"nd", "multicast"}
    assert {k: v for k, v in exc.items() if v and k not in background} == want
    blue = net.stats()["vrs"][1]["exceptions"]
    assert {k: v for k, v in blue.items() if v and k not in background} == {}, "blue saw red's exceptions"


def test_malformed_burst_is_dropped_and_counted_while_good_traffic_flows(net, tmp_path):
    mac = VR_MAC[("red", 0)]
    src = HOST_MAC["ra"]
    good = [Ether(src=src, dst=mac) / IP(src="10.1.0.2", dst="10.2.0.2") / UDP(sport=5, dport=6) / Raw(b"good%03d" % i)
            for i in range(60)]
    ip = bytes(IP(src="10.1.0.2", dst="10.2.0.2") / UDP() / Raw(b"y" * 20))
    eth = bytes(Ether(src=src, dst=mac, type=0x0800))
    bad_ihl = bytearray(ip)
    bad_ihl[0] = 0x43
    long_total = bytearray(ip)
    long_total[2:4] = (1400).to_bytes(2, "big")
    bad = {
        "truncated": Ether(eth + ip[:12]),
        "bad_ihl": Ether(eth + bytes(bad_ihl)),
        "bad_total_length": Ether(eth + bytes(long_total)),
    }
    frames = []
    for i, g in enumerate(good):
        frames.append(g)
        if 10 <= i < 50:  # the burst, interleaved with good traffic
            frames.extend(bad.values())
    got = exchange(net, tmp_path, "ra", frames, ("rb",), seconds=5)
    assert payloads(got["rb"]) == payloads(good), "good traffic during and after the burst"
    stats = net.stats()
    port = stats["ports"][0]
    assert {k: v for k, v in port["malformed"].items() if v} == {name: 40 for name in bad}
    assert stats["vrs"][0]["forwarded_packets"] == 60
    # Per worker too: the workers' drops add up to the port's.
    assert sum(w["drops"]["malformed"] for w in stats["workers"]) == 120
