"""Every VR's life of its own: pearld makes a namespace per VR with a TAP per interface, and the
slow path joins them to the ports. Shown from host namespaces with real packets: ARP and ND
resolve, the VR answers ping, TTL 1 gets time exceeded, an unrouted destination gets
unreachable, TCP reaches a listener inside the VR, a custom EtherType reaches a raw socket in
the VR; kernel and shared VRs forward through their kernels; nothing is left behind."""

import os
import subprocess
import sys
import time

import pytest

from netns import sh, two_hosts

HOST_A = "02:aa:00:00:00:01"


def netns_names():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def config(vr, kind="fast", macs=("02:00:00:00:01:00", "02:00:00:00:01:01"), extra=""):
    return f"""
ports:
  - {{name: p0, interface: p0, driver: af_packet}}
  - {{name: p1, interface: p1, driver: af_packet}}
vrs:
  - name: {vr}
    kind: {kind}
    interfaces:
      - {{name: eth0, port: p0, mac: "{macs[0]}", addresses: [10.1.0.1/24, "2001:db8:1::1/64"]}}
      - {{name: eth1, port: p1, mac: "{macs[1]}", addresses: [10.2.0.1/24, "2001:db8:2::1/64"]}}
{extra}"""


@pytest.fixture
def fast(bin_dir, tmp_path):
    prefix = f"sp{os.getpid() % 100000}"
    vr = f"{prefix}v"
    n = two_hosts(prefix)
    try:
        n.start_pearld(bin_dir, config(vr, extra="    match: [{ethertype: 0x88b5}]\n"), tmp_path)
        n.vr = vr
        yield n
    finally:
        n.close()
    assert vr not in netns_names(), "stopping pearld removes the VR's namespace"


def ping(n, host, dst, *args):
    six = ["-6"] if ":" in dst else []
    return sh("ping", *six, "-c", "1", "-W", "2", *args, dst, ns=n.hosts[host], check=False)


def test_the_vr_has_a_namespace_with_a_tap_per_interface(fast):
    links = sh("ip", "-n", fast.vr, "-br", "link", "show", ns=None).stdout
    assert "eth0" in links and "eth1" in links and "02:00:00:00:01:00" in links, links
    addrs = sh("ip", "-n", fast.vr, "-br", "addr", "show", "eth0").stdout
    assert "10.1.0.1/24" in addrs and "2001:db8:1::1/64" in addrs, addrs
    tun = sh("ip", "-n", fast.vr, "-d", "link", "show", "eth0").stdout
    assert "tun type tap" in tun, tun


def test_arp_and_nd_resolve_and_the_vr_answers_ping(fast):
    for dst in ("10.1.0.1", "2001:db8:1::1"):
        done = ping(fast, "a", dst)
        assert done.returncode == 0, f"ping {dst}: {done.stdout}{done.stderr}"
    neigh = sh("ip", "neigh", "show", "dev", "eth0", ns=fast.hosts["a"]).stdout
    assert "02:00:00:00:01:00" in neigh, f"the host learned the VR's MAC by ARP/ND: {neigh}"
    exc = fast.stats()["vrs"][0]["exceptions"]
    assert exc["arp"] > 0 and exc["local"] > 0, exc


def test_traffic_crosses_the_vr_between_hosts(fast):
    for dst in ("10.2.0.2", "2001:db8:2::2"):
        done = ping(fast, "a", dst)
        assert done.returncode == 0, f"ping {dst}: {done.stdout}{done.stderr}"


def test_ttl_1_gets_time_exceeded_from_the_vr(fast):
    done = ping(fast, "a", "10.2.0.2", "-t", "1")
    assert "From 10.1.0.1" in done.stdout and "Time to live exceeded" in done.stdout, done.stdout
    done = ping(fast, "a", "2001:db8:2::2", "-t", "1")
    assert "2001:db8:1::1" in done.stdout and "Time exceeded" in done.stdout, done.stdout
    assert fast.stats()["vrs"][0]["exceptions"]["ttl_expired"] >= 2


def test_an_unrouted_destination_gets_unreachable_from_the_vr(fast):
    done = ping(fast, "a", "203.0.113.5")
    assert "From 10.1.0.1" in done.stdout and "Unreachable" in done.stdout, done.stdout
    assert fast.stats()["vrs"][0]["exceptions"]["no_route"] >= 1


def test_tcp_reaches_a_listener_inside_the_vr(fast):
    server = subprocess.Popen(
        ["ip", "netns", "exec", fast.vr, sys.executable, "-c",
         "import socket\n"
         "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
         "s.bind(('10.1.0.1', 7777)); s.listen(1)\n"
         "c, _ = s.accept(); c.sendall(b'hello from the VR ' + c.recv(100)); c.close()\n"])
    fast.procs.append(server)
    time.sleep(0.5)
    client = sh(sys.executable, "-c",
                "import socket\n"
                "s = socket.create_connection(('10.1.0.1', 7777), timeout=5); s.sendall(b'red')\n"
                "print(s.recv(100).decode())\n", ns=fast.hosts["a"], check=False)
    assert client.stdout.strip() == "hello from the VR red", client.stdout + client.stderr
    server.wait(timeout=5)


def test_a_custom_ethertype_reaches_a_raw_socket_in_the_vr(fast, tmp_path):
    out = tmp_path / "raw.txt"
    reader = subprocess.Popen(
        ["ip", "netns", "exec", fast.vr, sys.executable, "-c",
         "import socket, sys\n"
         "s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88b5)); s.bind(('eth0', 0))\n"
         "s.settimeout(8)\n"
         "f = s.recv(2048)\n"
         f"open('{out}', 'w').write(f[12:14].hex() + ' ' + f[14:].rstrip(b'\\0').decode())\n"])
    fast.procs.append(reader)
    time.sleep(0.5)
    # To a MAC that is not the VR's: only the match rule claims it.
    sh(sys.executable, "-c",
       "from scapy.all import Ether, Raw, sendp\n"
       f"sendp(Ether(dst='02:99:00:00:00:09', src='{HOST_A}', type=0x88b5) / Raw(b'pearl-experiment'),"
       " iface='eth0', verbose=False)\n", ns=fast.hosts["a"])
    reader.wait(timeout=10)
    assert out.read_text() == "88b5 pearl-experiment"
    assert fast.stats()["vrs"][0]["exceptions"]["non_ip"] >= 1


def test_a_kernel_vr_forwards_every_packet_through_its_kernel(bin_dir, tmp_path):
    prefix = f"sk{os.getpid() % 100000}"
    vr = f"{prefix}v"
    n = two_hosts(prefix)
    try:
        n.start_pearld(bin_dir, config(vr, kind="kernel"), tmp_path)
        for dst in ("10.2.0.2", "2001:db8:2::2"):
            done = ping(n, "a", dst)
            assert done.returncode == 0, f"ping {dst}: {done.stdout}{done.stderr}"
        stats = n.stats()["vrs"][0]
        assert stats["kind"] == "kernel"
        assert stats["forwarded_packets"] == 0, "a kernel VR has no fast path"
        assert stats["exceptions"]["kernel_vr"] >= 4 and stats["slow_path"]["sent_packets"] >= 4, stats
    finally:
        n.close()
    assert vr not in netns_names()


def test_shared_vrs_share_one_channel_demultiplexed_by_mac(bin_dir, tmp_path):
    prefix = f"ss{os.getpid() % 100000}"
    n = two_hosts(prefix)
    # Two shared VRs with overlapping addresses, each on one port: 02:VR:00:00:00:IF.
    text = f"""
ports:
  - {{name: p0, interface: p0, driver: af_packet}}
  - {{name: p1, interface: p1, driver: af_packet}}
vrs:
  - name: {prefix}x
    kind: shared
    interfaces:
      - {{name: eth0, port: p0, mac: "02:00:00:00:00:00", addresses: [10.1.0.1/24]}}
  - name: {prefix}y
    kind: shared
    interfaces:
      - {{name: eth0, port: p1, mac: "02:01:00:00:00:00", addresses: [10.2.0.1/24]}}
"""
    try:
        n.start_pearld(bin_dir, text, tmp_path)
        assert ping(n, "a", "10.1.0.1").returncode == 0
        assert ping(n, "b", "10.2.0.1").returncode == 0
        vrs = n.stats()["vrs"]
        assert [v["kind"] for v in vrs] == ["shared", "shared"]
        assert all(v["slow_path"]["to_kernel_packets"] >= 2 for v in vrs), vrs
    finally:
        n.close()
    assert f"{prefix}x" not in netns_names() and f"{prefix}y" not in netns_names()
