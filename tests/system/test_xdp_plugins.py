"""XDP programs as plugin VRs (`plugin: {xdp: prog.o}`, issue 17): eBPF objects built with clang
and libbpf's headers, as a researcher already has them, run by pearld's eBPF interpreter on the
VR's frames. Interface numbers are the VR's: `ingress_ifindex` where a frame came in,
`bpf_redirect(i, 0)` out of interface i. The maps are the VR's tables, read and written with
`pearlctl plugin table`. A program that loops or reads outside its memory loses the frame, counted
by reason, while the VR beside it loses nothing."""

import json
import os
import subprocess
import sys
import time

import pytest

from netns import Network, sh, two_hosts
from test_plugins import neighbour_traffic, one_subnet, ping, plugins, poison, start_beside_a_router, vr, wait_for_ping  # noqa: F401 (a fixture)


def xdp_vr(name, obj, limits="", addrs=("", "")):
    return f"""
  - name: {name}
    kind: plugin
    plugin: {{xdp: {obj}}}
    interfaces:
      - {{name: eth0, port: p0, mac: "02:00:00:00:07:00"{addrs[0]}}}
      - {{name: eth1, port: p1, mac: "02:00:00:00:07:01"{addrs[1]}}}
{limits}"""


def start_one_xdp_vr(net, bin_dir, tmp_path, obj):
    """pearld with one XDP plugin VR running `obj` between the hosts of `one_subnet`; its name."""
    name = f"{net.prefix}x"
    net.start_pearld(bin_dir, one_subnet(net) + xdp_vr(name, obj), tmp_path)
    return name


def ctl(bin_dir, net, *args):
    return subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), *map(str, args)], capture_output=True, text=True, timeout=30)


def counters(bin_dir, net, name, table):
    """A map of u64 counters, by index."""
    done = ctl(bin_dir, net, "plugin", "table", name, table, "--json")
    assert done.returncode == 0, done.stderr
    return [int.from_bytes(bytes.fromhex(e["value"]), "little") for e in json.loads(done.stdout)["entries"]]


def settled(read, tries=20):
    """What `read` returns once two reads in a row agree (counters that frames may still move)."""
    last = read()
    for _ in range(tries):
        time.sleep(0.1)
        now = read()
        if now == last:
            return now
        last = now
    raise AssertionError(f"still changing after {tries} reads: {last}")


def globals_u64(bin_dir, net, name):
    """A program's `.bss` (its zero-initialised globals) as u64s, in order."""
    done = ctl(bin_dir, net, "plugin", "table", name, ".bss", "--json")
    assert done.returncode == 0, done.stderr
    bss = bytes.fromhex(json.loads(done.stdout)["entries"][0]["value"])
    return [int.from_bytes(bss[k:k + 8], "little") for k in range(0, len(bss) - 7, 8)]


def test_the_xdp_wire_carries_arp_ping_and_tcp_and_counts_in_its_map(plugins, bin_dir, tmp_path):
    """examples/xdp/wire.c between two hosts of one subnet with default offloads (GSO
    super-packets, partial checksums): ARP, ping and TCP cross it, and its array map `frames`
    counts the frames from each side, read through the API."""
    net = Network(f"xw{os.getpid() % 100000}")
    try:
        name = start_one_xdp_vr(net, bin_dir, tmp_path, plugins.parents[1] / "xdp" / "wire.o")
        done = ping(net, "a", "10.9.0.2", count=5)
        assert done.returncode == 0 and "ttl=64" in done.stdout, done.stdout + (tmp_path / "pearld.log").read_text()
        tcp = net.iperf("a", "b", "10.9.0.2", seconds=2)
        assert tcp["sum_received"]["bytes"] > 10_000_000, tcp["sum_received"]
        from_a, from_b = counters(bin_dir, net, name, "frames")
        stats = vr(net, name)
        assert from_a > 1000 and from_b > 100, (from_a, from_b)
        assert from_a + from_b == stats["forwarded_packets"], ("every frame counted once", from_a, from_b, stats)
        listed = json.loads(ctl(bin_dir, net, "plugin", "table", name, "--json").stdout)
        assert listed["tables"] == [{"name": "frames", "max_entries": 2, "entries": 2}], listed
        shown = json.loads(ctl(bin_dir, net, "vr", "show", name, "--json").stdout)
        assert shown["plugin"]["xdp"].endswith("wire.o") and "code" not in shown, shown
    finally:
        net.close()


def test_the_xdp_router_forwards_by_the_routes_its_owner_writes_into_its_trie(plugins, bin_dir, tmp_path):
    """examples/xdp/router.c routes between two subnets by its LPM-trie map `routes`, which the
    owner fills with `pearlctl plugin table` (prefix → interface and MACs): TTL −1, and its
    `stats` map counts what it forwarded; ARP and pings to the VR's own addresses are passed to
    the VR's kernel, which answers."""
    net = two_hosts(f"xr{os.getpid() % 100000}")
    name = f"{net.prefix}v"
    try:
        config = "ports:\n  - {name: p0, interface: p0, driver: af_packet}\n  - {name: p1, interface: p1, driver: af_packet}\nvrs:"
        config += xdp_vr(name, plugins.parents[1] / "xdp" / "router.o", addrs=(", addresses: [10.1.0.1/24]", ", addresses: [10.2.0.1/24]"))
        net.start_pearld(bin_dir, config, tmp_path)
        assert ping(net, "a", "10.1.0.1").returncode == 0, "the VR's own address, answered by its kernel"
        assert ping(net, "b", "10.2.0.1").returncode == 0

        def route(prefix_len, net_bytes, interface, dst_mac, src_mac):
            key = prefix_len.to_bytes(4, "little") + bytes(net_bytes)
            value = interface.to_bytes(4, "little") + bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", ""))
            done = ctl(bin_dir, net, "plugin", "table", name, "routes", "set", "0x" + key.hex(), "0x" + value.hex())
            assert done.returncode == 0, done.stderr
        route(24, [10, 2, 0, 0], 1, "02:aa:00:00:00:02", "02:00:00:00:07:01")
        route(24, [10, 1, 0, 0], 0, "02:aa:00:00:00:01", "02:00:00:00:07:00")
        before = counters(bin_dir, net, name, "stats")[0]
        done = ping(net, "a", "10.2.0.2", count=5)
        assert done.returncode == 0 and "ttl=63" in done.stdout, done.stdout
        tcp = net.iperf("a", "b", "10.2.0.2", seconds=2)
        assert tcp["sum_received"]["bytes"] > 10_000_000, tcp["sum_received"]
        forwarded = counters(bin_dir, net, name, "stats")[0] - before
        assert forwarded > 1000, f"the program forwarded {forwarded} frames itself"
        wrong = ctl(bin_dir, net, "plugin", "table", name, "routes", "set", "0x0102", "0x00")
        assert wrong.returncode != 0 and "keys are 8 bytes" in wrong.stderr, wrong.stderr
    finally:
        net.close()


def test_an_xdp_program_with_global_variables_is_read_and_set_through_its_tables(plugins, bin_dir, tmp_path):
    """examples/xdp/reflect.c, written as libbpf programs usually are: a function clang keeps
    apart swaps each frame's MACs, `.bss` and `.data` count frames and swaps, and the `.rodata`
    setting `out_interface` (a `const volatile`, which a libbpf skeleton sets before loading)
    says where frames leave. Its owner reads the globals as tables and sets the setting with
    `pearlctl plugin table`: pointed at an interface the VR does not have, frames are dropped and
    counted as `program_bad_port`."""
    net = Network(f"xg{os.getpid() % 100000}")
    try:
        name = start_one_xdp_vr(net, bin_dir, tmp_path, plugins.parents[1] / "xdp" / "reflect.o")
        listed = json.loads(ctl(bin_dir, net, "plugin", "table", name, "--json").stdout)
        assert sorted(t["name"] for t in listed["tables"]) == [".bss", ".data", ".rodata"], listed
        assert ping(net, "a", "10.9.0.2", count=3).returncode != 0, "each frame goes back where it came from"
        # Host a's kernel may still send a frame (neighbour discovery) between two reads: the
        # two tables are read until a pair of reads agrees.
        seen, swaps, forwarded = settled(lambda: (counters(bin_dir, net, name, ".bss")[0], counters(bin_dir, net, name, ".data")[0],
                                                  vr(net, name)["forwarded_packets"]))
        assert seen > 0 and swaps == 1000 + seen, (seen, swaps)
        assert forwarded == seen, "out of interface 0, as compiled"

        done = ctl(bin_dir, net, "plugin", "table", name, ".rodata", "set", "0x00000000", "0x09000000")
        assert done.returncode == 0, done.stderr
        # Host a never resolved b (its ARP came back reflected), so whether a ping sends a frame
        # depends on where its ARP retries stand; with b's MAC pinned each echo is one frame.
        sh("ip", "neigh", "replace", "10.9.0.2", "lladdr", "02:aa:00:00:00:02", "dev", "eth0", "nud", "permanent", ns=net.hosts["a"])
        time.sleep(0.5)
        before = vr(net, name)
        ping(net, "a", "10.9.0.2", count=3)
        after = vr(net, name)
        assert after["drops"]["program_bad_port"] >= before["drops"]["program_bad_port"] + 3, (before["drops"], after["drops"])
        assert after["forwarded_packets"] == before["forwarded_packets"], "nothing leaves by interface 0 any more"
        shown = ctl(bin_dir, net, "plugin", "table", name, ".rodata", "--json")
        assert json.loads(shown.stdout)["entries"][0]["value"] == "09000000", shown.stdout
    finally:
        net.close()


FAULTY = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int faulty(struct xdp_md *ctx) {
    unsigned char *data = (void *)(long)ctx->data;
    unsigned char *end = (void *)(long)ctx->data_end;
    if (data + 14 > end)
        return XDP_DROP;
    if (data[12] == 0x88 && data[13] == 0xb5) {
        FAULT
    }
    return bpf_redirect(1 - ctx->ingress_ifindex, 0);
}

char LICENSE[] SEC("license") = "GPL";
"""
FAULTS = {
    # Past the frame's end: the kernel's verifier would refuse it; here it is stopped at run time.
    "wild": ("return data[4000] ? XDP_PASS : XDP_DROP;", "program_trap"),
    "loop": ("volatile unsigned long n = 0; for (;;) n++;", "program_fuel"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_faulting_xdp_program_loses_its_frame_alone(fault, bin_dir, tmp_path):
    body, reason = FAULTS[fault]
    source = tmp_path / f"{fault}.c"
    source.write_text(FAULTY.replace("FAULT", body))
    obj = tmp_path / f"{fault}.o"
    arch = subprocess.run(["gcc", "-dumpmachine"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{arch}", "-c", str(source), "-o", str(obj)],
                   check=True, capture_output=True, text=True)
    net = Network(f"xf{os.getpid() % 100000}")
    try:
        start_beside_a_router(net, bin_dir, tmp_path, xdp_vr(f"{net.prefix}x", obj, limits="    limits: {fuel_per_packet: 2000}"))
        finish = neighbour_traffic(net, seconds=4)
        for _ in range(3):
            poison(net, 50)
            time.sleep(0.5)
        sent, got = finish()
        faulty = vr(net, f"{net.prefix}x")
        assert faulty["drops"][reason] == 150, faulty["drops"]
        assert got["unique"] == sent, f"the VR next to the faulting program lost {sent - got['unique']} of {sent}"
        assert ping(net, "a", "10.9.0.2", count=2).returncode == 0, "the program goes on with the next frame"
    finally:
        net.close()


def test_an_object_that_is_no_xdp_program_is_refused_naming_its_field(bin_dir, tmp_path):
    """An ELF file of another machine (an x86 executable) is refused when pearld applies the
    configuration, naming the field and what is wrong; nothing is left running."""
    net = Network(f"xn{os.getpid() % 100000}")
    try:
        net.host("a", "p0", "02:aa:00:00:00:01")
        net.host("b", "p1", "02:aa:00:00:00:02")
        config = "ports:\n  - {name: p0, interface: p0, driver: af_packet}\n  - {name: p1, interface: p1, driver: af_packet}\nvrs:"
        config += xdp_vr(f"{net.prefix}v", "/bin/true")
        with pytest.raises(RuntimeError) as refused:
            net.start_pearld(bin_dir, config, tmp_path)
        assert "vrs[0].plugin.xdp" in str(refused.value) and "is not BPF" in str(refused.value), refused.value
    finally:
        net.close()


UDP_TO = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(sys.argv[2].encode(), (sys.argv[1], 5000))
"""

IPIP_FROM = """
import socket, sys
r = socket.socket(socket.AF_INET, socket.SOCK_RAW, 4)
r.settimeout(5)
print(r.recvfrom(2048)[0].hex())
"""

IPIP_TO = """
import socket, struct, sys

def checksum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s > 0xffff:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff

def ipv4(src, dst, proto, payload):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, proto, 0, socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack("!H", checksum(h)) + h[12:] + payload

payload = sys.argv[1].encode()
inner = ipv4("10.9.0.2", "10.9.0.1", 17, struct.pack("!HHHH", 5001, 5000, 8 + len(payload), 0) + payload)
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
s.sendto(ipv4("10.9.0.2", "10.9.0.1", 4, inner), ("10.9.0.1", 0))
"""

UDP_FROM = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 5000))
s.settimeout(5)
print(s.recv(2048).decode())
"""


def internet_checksum(b):
    b += b"\0" * (len(b) % 2)
    s = sum(int.from_bytes(b[i:i + 2], "big") for i in range(0, len(b), 2))
    while s > 0xffff:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def test_an_xdp_tunnel_end_moves_its_frames_heads_to_add_and_remove_an_outer_header(plugins, bin_dir, tmp_path):
    """examples/xdp/ipip.c (`bpf_xdp_adjust_head`) between two hosts with default offloads: a
    datagram from host a reaches host b inside an IP-in-IP header (b has no tunnel device: a raw
    socket of protocol 4 shows what arrived, outer header and all), and an IP-in-IP packet from b
    reaches a's socket without its outer header; the program's `bpf_printk` line is in pearld's log."""
    net = Network(f"xt{os.getpid() % 100000}")
    try:
        name = start_one_xdp_vr(net, bin_dir, tmp_path, plugins.parents[1] / "xdp" / "ipip.o")
        py = lambda host, code, *args: subprocess.Popen(["ip", "netns", "exec", net.hosts[host], sys.executable, "-c", code, *args],  # noqa: E731
                                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        at_b = py("b", IPIP_FROM)
        time.sleep(0.5)
        subprocess.run(["ip", "netns", "exec", net.hosts["a"], sys.executable, "-c", UDP_TO, "10.9.0.2", "through the tunnel"], check=True)
        out, err = at_b.communicate(timeout=10)
        packet = bytes.fromhex(out.strip() or "00")
        assert packet[9] == 4 and packet[12:20] == bytes([10, 9, 0, 1, 10, 9, 0, 2]), (out, err)
        inner = packet[20:]
        assert inner[0] == 0x45 and inner[9] == 17 and inner[28:] == b"through the tunnel", inner
        # a's kernel left the UDP checksum for the device to finish (default offloads): it was
        # finished where the datagram is after the outer header was put in front.
        udp = inner[20:]
        pseudo = inner[12:20] + bytes([0, 17]) + len(udp).to_bytes(2, "big")
        assert udp[6:8] != b"\0\0" and internet_checksum(pseudo + udp) == 0, udp.hex()
        at_a = py("a", UDP_FROM)
        time.sleep(0.5)
        subprocess.run(["ip", "netns", "exec", net.hosts["b"], sys.executable, "-c", IPIP_TO, "out of the tunnel"], check=True)
        out, err = at_a.communicate(timeout=10)
        assert out.strip() == "out of the tunnel", (out, err)
        # Its bpf_printk line, in pearld's log: the inner packet, 20 + 8 + 17 bytes, behind Ethernet.
        log = (tmp_path / "pearld.log").read_text()
        assert f'VR "{name}": bpf_printk: ipip: took the outer header off a packet of 59 bytes' in log, log[-2000:]
        encapsulated, decapsulated = globals_u64(bin_dir, net, name)[:2]
        assert encapsulated >= 1 and decapsulated == 1, (encapsulated, decapsulated)
        stats = vr(net, name)
        assert stats["drops"].get("program_trap", 0) == 0, stats["drops"]
    finally:
        net.close()


def test_tcp_from_hosts_with_default_offloads_crosses_an_xdp_ip_in_ip_tunnel(plugins, bin_dir, tmp_path):
    """Two XDP VRs running examples/xdp/ipip.c as the two ends of an IP-in-IP tunnel: host a's TCP
    (TSO on: super-packets of up to 64 KiB) is encapsulated by the first VR, which grows each
    super-packet's head; pearld cuts it in software, each segment with its own outer header
    (length, identification, checksum), and the second VR takes the outer header off towards
    host b. The tunnel's link (a veth pair between two of pearld's ports) has MTU 9000, as an
    underlay carrying a tunnel does: a 1500-byte packet and its outer header must fit."""
    net = Network(f"xi{os.getpid() % 100000}")
    try:
        net.host("a", "p0", "02:aa:00:00:00:01", addrs=("10.9.0.1/24",))
        net.host("b", "p3", "02:aa:00:00:00:02", addrs=("10.9.0.2/24",))
        subprocess.run(["ip", "link", "add", "p1", "netns", net.router, "mtu", "9000", "type", "veth", "peer", "name", "p2",
                        "netns", net.router, "mtu", "9000"], check=True)
        for port in ("p1", "p2"):
            subprocess.run(["ip", "-n", net.router, "link", "set", port, "up"], check=True)
        obj = plugins.parents[1] / "xdp" / "ipip.o"
        ports = "".join(f"\n  - {{name: {p}, interface: {p}, driver: af_packet}}" for p in ("p0", "p1", "p2", "p3"))
        config = f"ports:{ports}\nvrs:"
        for name, (inside, underlay), mac in ((f"{net.prefix}x", ("p0", "p1"), "07"), (f"{net.prefix}y", ("p3", "p2"), "08")):
            config += f"""
  - name: {name}
    kind: plugin
    plugin: {{xdp: {obj}}}
    interfaces:
      - {{name: eth0, port: {inside}, mac: "02:00:00:00:{mac}:00"}}
      - {{name: eth1, port: {underlay}, mac: "02:00:00:00:{mac}:01"}}
"""
        net.start_pearld(bin_dir, config, tmp_path)
        assert wait_for_ping(net, "a", "10.9.0.2"), (tmp_path / "pearld.log").read_text()[-2000:]
        end = net.iperf("a", "b", "10.9.0.2", seconds=2)
        received = end["sum_received"]["bytes"]
        assert received > 20_000_000, end["sum_received"]
        first, second = vr(net, f"{net.prefix}x"), vr(net, f"{net.prefix}y")
        assert first["drops"].get("program", 0) == 0 and second["drops"].get("program", 0) == 0, (first["drops"], second["drops"])
        # The first VR's frames were super-packets, cut on the way to the tunnel's link: the
        # second took more outer headers off than the first put on.
        encapsulated = globals_u64(bin_dir, net, f"{net.prefix}x")[0]
        decapsulated = globals_u64(bin_dir, net, f"{net.prefix}y")[1]
        assert decapsulated > encapsulated, (encapsulated, decapsulated)
    finally:
        net.close()


def test_an_xdp_dispatcher_tail_calls_the_programs_its_owner_points_its_program_array_at(plugins, bin_dir, tmp_path):
    """examples/xdp/stages.c: `dispatch` hands IPv4 to the program at index 0 of its program
    array `stages` and the rest (ARP) to index 1, both `cross` (a wire) as the object initialises
    them. The owner points index 0 at `drop_all` and pings stop while ARP still crosses; an empty
    index leaves the frame with the dispatcher, which drops it and logs a five-argument
    bpf_printk line; index 0 back at `cross`, pings cross again. The object holds three programs
    in one section: loaded without `section:` naming one, it is refused, naming them."""
    net = Network(f"xs{os.getpid() % 100000}")
    try:
        obj = plugins.parents[1] / "xdp" / "stages.o"
        config = one_subnet(net)
        with pytest.raises(RuntimeError) as refused:
            net.start_pearld(bin_dir, config + xdp_vr(f"{net.prefix}x", obj), tmp_path)
        assert "holds 3 programs (cross, dispatch, drop_all)" in str(refused.value), refused.value
        name = f"{net.prefix}x"
        net.start_pearld(bin_dir, config + xdp_vr(name, f"{obj}, section: dispatch"), tmp_path)
        assert wait_for_ping(net, "a", "10.9.0.2"), (tmp_path / "pearld.log").read_text()[-2000:]

        def point(index, program):
            return ctl(bin_dir, net, "plugin", "table", name, "stages", "set", "0x" + index.to_bytes(4, "little").hex(),
                       "0x" + program.to_bytes(4, "little").hex())
        entries = json.loads(ctl(bin_dir, net, "plugin", "table", name, "stages", "--json").stdout)["entries"]
        assert [(e["key"], e["value"]) for e in entries] == [("00000000", "00000000"), ("01000000", "00000000")], entries
        assert point(0, 2).returncode == 0
        sh("ip", "neigh", "flush", "dev", "eth0", ns=net.hosts["a"])
        assert ping(net, "a", "10.9.0.2", count=2).returncode != 0, "IPv4 dropped by drop_all"
        assert sh("ip", "neigh", "show", "10.9.0.2", ns=net.hosts["a"]).stdout.split()[-1] in ("REACHABLE", "STALE", "DELAY"), \
            "ARP still crosses"
        wrong = point(0, 3)
        assert wrong.returncode != 0 and "0 cross, 1 dispatch, 2 drop_all" in wrong.stderr, wrong.stderr
        assert ctl(bin_dir, net, "plugin", "table", name, "stages", "del", "0x00000000").returncode == 0
        assert ping(net, "a", "10.9.0.2", count=2).returncode != 0, "an empty index: dropped by the dispatcher"
        assert point(0, 0).returncode == 0
        assert ping(net, "a", "10.9.0.2").returncode == 0, "index 0 at cross again"
        decided = globals_u64(bin_dir, net, name)
        assert decided[0] >= 2 and decided[1] > 0 and decided[2] >= 2, decided
        log = (tmp_path / "pearld.log").read_text()
        assert f'VR "{name}": bpf_printk: dispatch: slot 0 is empty: dropped a frame of 98 bytes from interface 0, type 800' in log, \
            log[-2000:]
    finally:
        net.close()
