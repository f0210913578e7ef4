"""NAT into reserved ports (`nat: {address, ports}`): two VRs with the same private addresses
reach one outside host at the same time through one node address, each source-NATed into its
own range in the fast path, and the answers find their way back to the right VR.

red and blue both route 10.0.0.0/24 with a host 10.0.0.2 on it (r and b); both have an outside
interface on port `up` holding 203.0.113.1/24, where host o (203.0.113.100) serves UDP and TCP
and says who it sees."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from frr_host import wait_until
from netns import Network, sh

SERVER = textwrap.dedent("""
    import socket, sys, threading
    def udp(port):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", port))
        while True:
            data, peer = s.recvfrom(2048)
            s.sendto(f"{peer[0]}:{peer[1]}".encode(), peer)
    def tcp(port):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        s.listen(16)
        while True:
            c, peer = s.accept()
            while c.recv(65536):
                pass
            c.sendall(f"{peer[0]}:{peer[1]}".encode() + b"x" * 200000)
            c.close()
    for p in (9000, 9001):
        threading.Thread(target=udp, args=(p,), daemon=True).start()
    print("ready", flush=True)
    tcp(8080)
""")

CLIENT = textwrap.dedent("""
    import socket, sys
    kind, sport = sys.argv[1], int(sys.argv[2])
    if kind == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", sport))
        s.settimeout(1)
        seen = []
        for port in (9000, 9001):
            # As a UDP application does: ask again when no answer comes (the first datagram
            # waits on the VR's neighbour resolution, and is dropped rather than leaked).
            for attempt in range(5):
                s.sendto(b"hello", ("203.0.113.100", port))
                try:
                    seen.append(s.recvfrom(2048)[0].decode())
                    break
                except TimeoutError:
                    continue
        print(" ".join(seen))
    else:
        s = socket.create_connection(("203.0.113.100", 8080), timeout=5, source_address=("0.0.0.0", sport))
        s.sendall(b"y" * 100000)   # more than a segment: with default offloads, a GSO super-packet
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        print(data[:data.index(b"x")].decode(), len(data))
""")


def config(prefix, blue_ports="21000-21999"):
    vr = lambda name, n, ports: f"""  - name: {prefix}{name}
    interfaces:
      - {{name: eth0, port: p{name[0]}, mac: "02:00:00:00:0{n}:00", addresses: [10.0.0.1/24]}}
      - {{name: eth1, port: up, mac: "02:00:00:00:0{n}:01", addresses: [203.0.113.1/24]}}
    nat: {{address: 203.0.113.1, ports: {ports}}}
"""  # noqa: E731
    return f"""
ports:
  - {{name: pr, interface: pr, driver: af_packet}}
  - {{name: pb, interface: pb, driver: af_packet}}
  - {{name: up, interface: pu, driver: af_packet}}
vrs:
{vr("red", 1, "20000-20999")}{vr("blue", 2, blue_ports)}"""


@pytest.fixture
def net(bin_dir, tmp_path):
    n = Network(f"nt{os.getpid() % 100000}")
    n.red, n.blue = f"{n.prefix}red", f"{n.prefix}blue"
    try:
        n.host("hr", "pr", "02:aa:00:00:00:01", addrs=("10.0.0.2/24",), routes=("route add default via 10.0.0.1",))
        n.host("hb", "pb", "02:aa:00:00:00:02", addrs=("10.0.0.2/24",), routes=("route add default via 10.0.0.1",))
        n.host("ho", "pu", "02:aa:00:00:00:0f", addrs=("203.0.113.100/24",))
        server = subprocess.Popen(["ip", "netns", "exec", n.hosts["ho"], sys.executable, "-c", SERVER],
                                  stdout=subprocess.PIPE, text=True)
        n.procs.append(server)
        assert server.stdout.readline().strip() == "ready"
        n.start_pearld(bin_dir, config(n.prefix), tmp_path)
        n.bin_dir = bin_dir
        yield n
    finally:
        n.close()
        for vr in (n.red, n.blue):
            sh("ip", "netns", "del", vr, check=False)


def clients(net, kind, sport=5000):
    """The same client, from the same private address and port, behind both VRs at once."""
    procs = {h: subprocess.Popen(["ip", "netns", "exec", net.hosts[h], sys.executable, "-c", CLIENT, kind, str(sport)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for h in ("hr", "hb")}
    out = {}
    for h, p in procs.items():
        stdout, stderr = p.communicate(timeout=30)
        assert p.returncode == 0, f"host {h}: {stderr}"
        out[h] = stdout.split()
    return out


def vr_stats(net, name):
    return next(v for v in net.stats()["vrs"] if v["name"] == name)


def outside(seen, first, last):
    address, port = seen.split(":")
    assert address == "203.0.113.1", seen
    assert first <= int(port) <= last, f"{seen} outside {first}-{last}"
    return int(port)


def test_two_vrs_with_the_same_private_addresses_share_one_outside_address(net):
    udp = clients(net, "udp")
    assert len(udp["hr"]) == len(udp["hb"]) == 2, udp
    red = [outside(s, 20000, 20999) for s in udp["hr"]]
    blue = [outside(s, 21000, 21999) for s in udp["hb"]]
    assert len(set(red)) == 1 and len(set(blue)) == 1, f"endpoint-independent mapping: one port per endpoint ({udp})"
    tcp = clients(net, "tcp", sport=5001)
    outside(tcp["hr"][0], 20000, 20999)
    outside(tcp["hb"][0], 21000, 21999)
    assert int(tcp["hr"][1]) == int(tcp["hb"][1]) > 200000, tcp
    for vr in (net.red, net.blue):
        s = vr_stats(net, vr)
        assert s["forwarded_packets"] > 20, s
        assert s["drops"].get("nat_refused", 0) == 0, s["drops"]
        # The first datagram met an unresolved neighbour: held back, never sent untranslated.
        assert s["exceptions"].get("nat_unresolved", 0) >= 1, s["exceptions"]
        assert s["exceptions"].get("unresolved_neighbor", 0) == 0, s["exceptions"]


def test_both_vrs_ping_the_outside_host_at_once(net):
    """ICMP echo identifiers are mapped like ports; the replies carry no port for the classifier
    and reach the VR whose MAC the outside host resolved 203.0.113.1 to, which hands them on."""
    pings = {h: subprocess.Popen(["ip", "netns", "exec", net.hosts[h], "ping", "-c", "6", "-i", "0.3", "-W", "2",
                                  "203.0.113.100"], stdout=subprocess.PIPE, text=True) for h in ("hr", "hb")}
    for h, p in pings.items():
        out, _ = p.communicate(timeout=30)
        received = int(out.split(" received")[0].rsplit(" ", 1)[1])
        # The first request may wait on the VRs' neighbour resolution (held back, not leaked).
        assert received >= 5, f"host {h}: {out}"


def test_what_nat_cannot_translate_is_dropped_and_counted_and_reservations_may_not_overlap(net):
    subprocess.run(["ip", "netns", "exec", net.hosts["hr"], "ping", "-c", "2", "-W", "1", "203.0.113.100"], capture_output=True)
    before = vr_stats(net, net.red)["drops"].get("nat_refused", 0)
    # An IP protocol NAT does not know (253, for experiments, RFC 3692).
    raw = "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_RAW, 253); [s.sendto(b'x', ('203.0.113.100', 0)) for _ in range(3)]"
    subprocess.run(["ip", "netns", "exec", net.hosts["hr"], sys.executable, "-c", raw], check=True, timeout=10)
    wait_until("three refused", 5, lambda: vr_stats(net, net.red)["drops"].get("nat_refused", 0) >= before + 3)
    ctl = lambda *a: subprocess.run(["ip", "netns", "exec", net.router, str(net.bin_dir / "pearlctl"), "--socket",  # noqa: E731
                                     str(net.api), *a], capture_output=True, text=True, timeout=30)
    refused = ctl("vr", "set", net.blue, "nat={address: 203.0.113.1, ports: 20500-21499}")
    assert refused.returncode == 1 and "nat.ports" in refused.stderr and "overlaps" in refused.stderr, refused.stderr
    shown = json.loads(ctl("vr", "show", net.blue, "--json").stdout)
    assert shown["nat"] == {"address": "203.0.113.1", "ports": "21000-21999", "interface": "eth1"}, "nothing changed"
