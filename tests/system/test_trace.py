"""`pearlctl trace` (issue 53): real pings from hosts at kernel defaults through a fast VR, each
traced packet shown stage by stage with the VR, route and next hop the fast path used; a packet
to an address the VR has no route for shows why it left the fast path, one with a bad header
checksum its drop reason; a forwarded packet is followed past its queue to what the port did; `--match` takes only the packets it matches; `--pcapng` reads back in
tshark with each packet's trace in its comment; a kernel VR's packets are shown going to its
TAP."""

import json
import os
import subprocess
import time

import pytest
from scapy.all import IP, ICMP, Ether, wrpcap

from netns import one_vr, sh, two_hosts

VR_MACS = ("02:00:00:00:01:00", "02:00:00:00:01:01")
B_MAC = "02:aa:00:00:00:02"


def start_trace(bin_dir, net, *args):
    """pearlctl trace, armed in the background while the test sends."""
    cmd = ["ip", "netns", "exec", net.router, str(bin_dir / "pearlctl"), "--socket", str(net.api), "trace", net.vr,
           *map(str, args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)  # armed on the workers before the first packet
    return proc


def finish(proc, timeout=30):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return out


def ping(net, dst, count=5):
    sh("ping", "-c", count, "-i", "0.2", "-W", "1", dst, ns=net.hosts["a"], check=False)


def packets(out):
    return json.loads(out)["packets"]


@pytest.fixture(params=["fast", "kernel"])
def net(bin_dir, tmp_path, request):
    prefix = f"tt{os.getpid() % 100000}"
    n = two_hosts(prefix)
    n.vr = f"{prefix}v"
    try:
        n.start_pearld(bin_dir, one_vr(n.vr, kind=request.param, macs=VR_MACS), tmp_path)
        n.kind = request.param
        # The VR's kernel resolves both hosts first, so that the fast path's next hops are known.
        ping(n, "10.2.0.2", count=2)
        yield n
    finally:
        n.close()


def test_pings_are_traced_stage_by_stage_with_route_and_next_hop(net, bin_dir):
    proc = start_trace(bin_dir, net, "--count", 4, "--match", "ip_dst=10.2.0.2/32", "--json", "--timeout", 10)
    ping(net, "10.2.0.2", count=8)
    got = packets(finish(proc))
    print("\n".join("\n".join(p["text"]) for p in got))
    assert len(got) == 4, got
    for p in got:
        assert p["port"] == "p0" and p["vr"] == net.vr and p["rule"] is None, p
        assert "10.1.0.2 → 10.2.0.2 icmp" in p["text"][1], p["text"]
        if net.kind == "kernel":
            assert p["outcome"] == {"kind": "kernel", "reason": "kernel_vr"}, p
            assert any(line.startswith("kernel") and "TAP" in line for line in p["text"]), p["text"]
            assert p["tx"] is None, p
            continue
        assert p["program"] == "route by destination", p
        # The neighbour the VR's kernel resolved, mirrored by routed as a host route.
        assert p["route"]["prefix"] == "10.2.0.2/32", p["route"]
        assert f"route    10.2.0.2 by 10.2.0.2/32" in p["text"][4], p["text"]
        assert p["route"]["next_hops"] == [{"kind": "forward", "resolved": True, "interface": "eth1", "port": "p1",
                                            "mac": B_MAC}], p["route"]
        assert p["outcome"] == {"kind": "out", "port": "p1", "queue": 0, "mac": B_MAC}, p
        # Followed past the queue to the worker's transmit: port p1 took it.
        assert p["tx"] == {"result": "sent"}, p
        assert p["text"][-1] == "tx       sent: the port took it", p["text"]


def test_match_takes_only_matching_packets_and_the_text_names_each_stage(net, bin_dir):
    proc = start_trace(bin_dir, net, "--count", 3, "--match", "ip_dst=10.1.0.2/32 ip_proto=1", "--timeout", 10)
    ping(net, "10.2.0.2", count=6)
    text = finish(proc)
    print(text)
    blocks = [b for b in text.split("packet ")[1:]]
    assert len(blocks) == 3, text
    for b in blocks:
        # Only b's echo replies back to a, none of a's requests.
        assert "10.2.0.2 → 10.1.0.2 icmp" in b and "10.1.0.2 → 10.2.0.2" not in b, b
        stages = [line.split()[0] for line in b.splitlines()[1:]]
        want = ["rx", "extract", "classify", "program", "kernel"] if net.kind == "kernel" else \
            ["rx", "extract", "classify", "program", "route", "output", "tx"]
        assert stages == want, b
        assert f"classify VR {net.vr} by its interface MAC, queue 0" in b, b


def test_unroutable_and_bad_checksum_show_their_reasons(net, bin_dir, tmp_path):
    if net.kind == "kernel":
        pytest.skip("a kernel VR's kernel decides these; the fast path hands it every packet")
    proc = start_trace(bin_dir, net, "--count", 2, "--match", "ip_dst=198.51.100.0/24", "--json", "--timeout", 10)
    ping(net, "198.51.100.1", count=1)
    bad = bytearray(bytes(IP(src="10.1.0.2", dst="198.51.100.2") / ICMP()))
    bad[10] ^= 0xff  # the header checksum
    wrpcap(str(tmp_path / "bad.pcap"), [Ether(src="02:aa:00:00:00:01", dst=VR_MACS[0]) / IP(bytes(bad))])
    net.send("a", tmp_path / "bad.pcap")
    got = packets(finish(proc))
    print("\n".join("\n".join(p["text"]) for p in got))
    outcomes = sorted((p["outcome"]["kind"], p["outcome"]["reason"]) for p in got)
    assert outcomes == [("dropped", "bad_checksum"), ("kernel", "no_route")], got
    unrouted = next(p for p in got if p["outcome"]["kind"] == "kernel")
    assert unrouted["decision"] == "to the kernel (no_route)" and unrouted["route"] is None, unrouted


def test_pcapng_reads_back_in_tshark_with_each_trace_as_its_comment(net, bin_dir, tmp_path):
    out = tmp_path / "trace.pcapng"
    proc = start_trace(bin_dir, net, "--count", 3, "--match", "ip_dst=10.2.0.2/32", "--pcapng", out, "--timeout", 10)
    ping(net, "10.2.0.2", count=6)
    finish(proc)
    fields = sh("tshark", "-r", out, "-T", "fields", "-e", "ip.dst", "-e", "icmp.type", "-e", "frame.comment").stdout
    rows = [line.split("\t") for line in fields.splitlines() if line]
    assert len(rows) == 3, fields
    for dst, icmp_type, comment in rows:
        assert (dst, icmp_type) == ("10.2.0.2", "8"), rows
        comment = comment.replace("\\n", "\n")
        assert comment.startswith("rx       port p0") and f"classify VR {net.vr}" in comment, comment
        assert ("output   port p1 queue 0, to " + B_MAC in comment) if net.kind == "fast" else ("TAP" in comment), comment


def test_a_trace_refuses_unknown_names_by_field(net, bin_dir):
    for args, word in ((["--port", "nosuch"], "nosuch"), (["--match", "ip_dst=nowhere"], "ip_dst")):
        proc = start_trace(bin_dir, net, *args, "--timeout", 1)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode != 0 and word in err, err
