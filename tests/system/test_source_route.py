"""IPv4 source routing per VR: a loose source route through a VR is dropped by default, as the
Linux router drops it (RFC 7126 §4.3), and followed once the VR says
`accept_source_route: true`, changed while it runs with `pearlctl vr set`."""

import json
import os
import subprocess

from netns import one_vr, two_hosts

HOST_A = "02:aa:00:00:00:01"
VR_MAC = "02:00:00:00:01:00"


def lsrr_arrivals(n, tmp_path, tag):
    """Sends from host A a UDP packet to the VR's eth0 address with a loose source route on to
    host B; returns the payloads of those that reached B."""
    from scapy.all import IP, UDP, Ether, IPOption_LSRR, Raw, rdpcap, wrpcap
    probe = Ether(src=HOST_A, dst=VR_MAC) / IP(src="10.1.0.2", dst="10.1.0.1", options=[IPOption_LSRR(routers=["10.2.0.2"])]) \
        / UDP(sport=1000, dport=7) / Raw(tag)
    out, pcap = tmp_path / f"lsrr-{tag.decode()}.pcap", tmp_path / f"b-{tag.decode()}.pcap"
    wrpcap(str(out), [probe])
    sniffer = n.sniff("b", pcap, 3)
    n.send("a", out)
    sniffer.wait(timeout=10)
    return [bytes(p[Raw].load) for p in rdpcap(str(pcap)) if Raw in p and UDP in p and p[UDP].dport == 7]


def test_a_source_route_is_dropped_by_default_and_followed_when_the_vr_accepts_it(bin_dir, tmp_path):
    prefix = f"sr{os.getpid() % 10000}"
    n = two_hosts(prefix)
    try:
        vr = f"{prefix}v"
        n.start_pearld(bin_dir, one_vr(vr), tmp_path)
        assert lsrr_arrivals(n, tmp_path, b"default") == [], "followed a source route by default"
        assert n.stats()["vrs"][0]["exceptions"]["ipv4_options"] >= 1, "handed to the VR's kernel, which dropped it"
        ctl = [str(bin_dir / "pearlctl"), "--socket", str(n.api)]
        done = subprocess.run(ctl + ["vr", "set", vr, "accept_source_route=true"], capture_output=True, text=True, timeout=20)
        assert done.returncode == 0, done.stderr
        shown = json.loads(subprocess.run(ctl + ["vr", "show", vr, "--json"], capture_output=True, text=True, timeout=20).stdout)
        assert shown["accept_source_route"] is True
        assert lsrr_arrivals(n, tmp_path, b"accepted") == [b"accepted"], "the source route was not followed"
        bad = subprocess.run(ctl + ["vr", "set", vr, "accept_source_route=maybe"], capture_output=True, text=True, timeout=20)
        assert bad.returncode == 1 and "accept_source_route" in bad.stderr, bad.stderr
    finally:
        n.close()
