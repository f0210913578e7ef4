"""Route leaking between VRs (`leak: [{from: VR, prefixes: [...]}]`, admin only): the importing
VR forwards packets to a leaked prefix by the source VR's routes, in the fast path, counted as
its own; overlapping address spaces stay apart everywhere else.

red and blue both own 10.1.0.0/24, each with a host 10.1.0.2 on it (a behind red, c behind
blue, different MACs). Host a has a LAN, 198.51.100.0/24, that red routes to; blue also has
10.2.0.0/24 with host d. blue imports 198.51.100.0/24 from red and red imports 10.2.0.0/24 from
blue, so d and a's LAN reach each other, while 10.1.0.2 means c to blue and a to red."""

import json
import os
import subprocess

import pytest

from frr_host import rx_packets
from netns import Network, sh

A_MAC, C_MAC, D_MAC = "02:aa:00:00:00:0a", "02:aa:00:00:00:0c", "02:aa:00:00:00:0d"
ADMIN, BLUE_TOKEN = "admin-token-0123456789", "blue-token-0123456789"
LEAKS = {"blue": "[{from: red, prefixes: [198.51.100.0/24]}]", "red": "[{from: blue, prefixes: [10.2.0.0/24]}]"}


def config(prefix, leaks=LEAKS):
    red, blue = f"{prefix}red", f"{prefix}blue"
    leak = lambda vr: f"    leak: {leaks[vr].replace('from: red', f'from: {red}').replace('from: blue', f'from: {blue}')}\n" if vr in leaks else ""  # noqa: E731
    return f"""
api: {{admin_token: {ADMIN}}}
ports:
  - {{name: pa, interface: pa, driver: af_packet}}
  - {{name: pc, interface: pc, driver: af_packet}}
  - {{name: pd, interface: pd, driver: af_packet}}
vrs:
  - name: {red}
    interfaces:
      - {{name: eth0, port: pa, mac: "02:00:00:00:01:00", addresses: [10.1.0.1/24]}}
    neighbors: [{{ip: 10.1.0.2, mac: "{A_MAC}", interface: eth0}}]
    routes: [{{prefix: 198.51.100.0/24, via: 10.1.0.2}}]
{leak("red")}  - name: {blue}
    token: {BLUE_TOKEN}
    interfaces:
      - {{name: eth0, port: pc, mac: "02:00:00:00:02:00", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: pd, mac: "02:00:00:00:02:01", addresses: [10.2.0.1/24]}}
    neighbors: [{{ip: 10.1.0.2, mac: "{C_MAC}", interface: eth0}}, {{ip: 10.2.0.2, mac: "{D_MAC}", interface: eth1}}]
{leak("blue")}"""


@pytest.fixture
def net(bin_dir, tmp_path):
    n = Network(f"lk{os.getpid() % 100000}")
    n.red, n.blue, n.bin_dir = f"{n.prefix}red", f"{n.prefix}blue", bin_dir
    try:
        n.host("a", "pa", A_MAC, addrs=("10.1.0.2/24",), routes=("route add default via 10.1.0.1",))
        sh("ip", "link", "add", "lan0", "type", "veth", "peer", "name", "lan1", ns=n.hosts["a"])
        sh("ip", "addr", "add", "198.51.100.1/24", "dev", "lan0", ns=n.hosts["a"])
        for dev in ("lan0", "lan1"):
            sh("ip", "link", "set", dev, "up", ns=n.hosts["a"])
        n.host("c", "pc", C_MAC, addrs=("10.1.0.2/24",), routes=("route add default via 10.1.0.1",))
        n.host("d", "pd", D_MAC, addrs=("10.2.0.2/24",), routes=("route add default via 10.2.0.1",))
        n.start_pearld(bin_dir, config(n.prefix), tmp_path)
        yield n
    finally:
        n.close()
        for vr in (n.red, n.blue):
            sh("ip", "netns", "del", vr, check=False)


def vr_stats(net, name):
    stats = json.loads(ctl(net, net.bin_dir, "stats", "--json").stdout)
    return next(v for v in stats["vrs"] if v["name"] == name)


def ctl(net, bin_dir, *args, token=ADMIN):
    return subprocess.run(["ip", "netns", "exec", net.router, str(bin_dir / "pearlctl"), "--socket", str(net.api),
                           "--token", token, *map(str, args)], capture_output=True, text=True, timeout=30)


def test_a_leaked_prefix_is_forwarded_across_vrs_in_the_fast_path(net):
    sh("ping", "-c", "2", "-W", "2", "198.51.100.1", ns=net.hosts["d"])  # the first ones may meet cold paths
    before = {vr: vr_stats(net, vr) for vr in (net.red, net.blue)}
    count = 50
    sh("ping", "-c", count, "-i", "0.01", "-W", "2", "198.51.100.1", ns=net.hosts["d"])
    for vr in (net.red, net.blue):
        after = vr_stats(net, vr)
        # blue forwards the requests (by red's route), red the replies (by blue's).
        assert after["forwarded_packets"] - before[vr]["forwarded_packets"] >= count, (vr, before[vr], after)
        # None of the pings went through a kernel (the hosts' own IPv6 ND and MLD may, meanwhile).
        for reason in ("no_route", "unresolved_neighbor", "local", "ttl_expired"):
            assert after["exceptions"].get(reason, 0) == before[vr]["exceptions"].get(reason, 0), (vr, reason)


def echo_requests(ns):
    """ICMP echo requests the host's kernel took in (`Icmp: InEchos`): unlike a count of frames,
    not moved by the ARP and IPv6 neighbour traffic that comes and goes on the link."""
    lines = [line.split() for line in sh("cat", "/proc/net/snmp", ns=ns).stdout.splitlines() if line.startswith("Icmp:")]
    return int(lines[1][lines[0].index("InEchos")])


def test_overlapping_addresses_stay_apart_outside_the_leaked_prefix(net):
    a_before, c_before = echo_requests(net.hosts["a"]), echo_requests(net.hosts["c"])
    sh("ping", "-c", "20", "-i", "0.01", "-W", "2", "10.1.0.2", ns=net.hosts["d"])
    c_after = echo_requests(net.hosts["c"])
    assert c_after - c_before >= 18, "blue's 10.1.0.2 is host c"
    assert echo_requests(net.hosts["a"]) == a_before, "red's 10.1.0.2 (host a) saw blue's pings"
    # And red does not reach blue's hosts outside what it imports.
    assert sh("ping", "-c", "1", "-W", "1", "-I", "198.51.100.1", "10.1.0.2", ns=net.hosts["a"], check=False).returncode == 0
    assert echo_requests(net.hosts["c"]) == c_after, "host a's ping to its own neighbour stayed on red's side"


def test_leaks_are_the_admins_and_change_at_run_time(net, bin_dir):
    refused = ctl(net, bin_dir, "vr", "set", net.blue, f"leak=[{{from: {net.red}, prefixes: [10.1.0.0/24]}}]", token=BLUE_TOKEN)
    assert refused.returncode != 0 and "leak" in refused.stderr and "admin" in refused.stderr, refused.stderr
    shown = json.loads(ctl(net, bin_dir, "vr", "show", net.blue, "--json").stdout)
    assert shown["leak"] == [{"from": net.red, "prefixes": ["198.51.100.0/24"]}], shown.get("leak")
    # red's owner, had it a token, would not see blue at all; blue's own token sees its imports.
    assert json.loads(ctl(net, bin_dir, "vr", "show", net.blue, "--json", token=BLUE_TOKEN).stdout)["leak"]

    bad = ctl(net, bin_dir, "vr", "set", net.blue, "leak=[{from: nobody, prefixes: [198.51.100.0/24]}]")
    assert bad.returncode != 0 and "leak[0].from" in bad.stderr and "nobody" in bad.stderr, bad.stderr

    assert ctl(net, bin_dir, "vr", "set", net.blue, "leak=[]").returncode == 0
    assert sh("ping", "-c", "2", "-i", "0.2", "-W", "1", "198.51.100.1", ns=net.hosts["d"], check=False).returncode != 0
    done = ctl(net, bin_dir, "vr", "set", net.blue, f"leak=[{{from: {net.red}, prefixes: [198.51.100.0/24]}}]")
    assert done.returncode == 0, done.stderr
    sh("ping", "-c", "2", "-W", "2", "198.51.100.1", ns=net.hosts["d"])
