"""Plugin VRs (`kind: plugin`, issue 17): the owner's WebAssembly program decides the VR's
frames in pearld's data plane. The example plugins (examples/plugins, built with the Rust SDK)
carry real traffic between hosts with the kernel's default offloads; plugins that trap, loop
or allocate without end are stopped and restarted alone, counted by reason, while a VR next to
them loses nothing."""

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from netns import Network, api_get, one_vr, sh, two_hosts

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture(scope="session")
def plugins():
    """The example plugins' directory (built for wasm32 by scripts/build-plugins.sh)."""
    done = subprocess.run(["bash", str(ROOT / "scripts" / "build-plugins.sh")], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return pathlib.Path(done.stdout.strip().splitlines()[-1])


def vr(net, name):
    return next(v for v in net.stats()["vrs"] if v["name"] == name)


def ping(net, host, dst, *args, count=3):
    return sh("ping", "-c", count, "-i", "0.2", "-W", "1", *args, dst, ns=net.hosts[host], check=False)


def wait_for_ping(net, host, dst, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if ping(net, host, dst, count=1).returncode == 0:
            return True
    return False


def wire_vr(name, wasm, limits=""):
    """YAML of plugin VR `name` running `wasm`, its interfaces on ports p0 and p1."""
    return f"""
  - name: {name}
    kind: plugin
    plugin: {{wasm: {wasm}}}
    interfaces:
      - {{name: eth0, port: p0, mac: "02:00:00:00:07:00"}}
      - {{name: eth1, port: p1, mac: "02:00:00:00:07:01"}}
{limits}"""


def neighbour_traffic(net, seconds, pps=2000):
    """Starts sequenced UDP from host c to host d (through the fast VR beside the plugin VR of
    `beside_a_router`) for `seconds`; returns a function that waits for its end and answers
    (datagrams sent, what d received as seq_udp.py reports it)."""
    sink = subprocess.Popen(["ip", "netns", "exec", net.hosts["d"], sys.executable, str(HERE / "seq_udp.py"), "sink", "4001",
                             str(seconds)], stdout=subprocess.PIPE, text=True)
    net.procs.append(sink)
    time.sleep(0.5)
    sender = subprocess.Popen(["ip", "netns", "exec", net.hosts["c"], sys.executable, str(HERE / "seq_udp.py"), "send", "10.2.0.2",
                               "4001", str(pps), str(seconds)], stdout=subprocess.PIPE, text=True)
    net.procs.append(sender)

    def finish():
        sent = int(sender.communicate(timeout=seconds + 30)[0])
        return sent, json.loads(sink.communicate(timeout=seconds + 30)[0])
    return finish


def poison(net, frames=1):
    """Sends `frames` frames of the experimental EtherType 0x88b5 from host a towards b: what the
    faulty plugins of the fault tests fault on."""
    code = ("from scapy.all import Ether, sendp, Raw\n"
            f"sendp([Ether(src='02:aa:00:00:00:01', dst='02:aa:00:00:00:02', type=0x88b5) / Raw(b'x' * 50)] * {frames}, "
            "iface='eth0', verbose=0)")
    sh(sys.executable, "-c", code, ns=net.hosts["a"])


def pearlctl(bin_dir, net, *args):
    """pearlctl run against `net`'s pearld."""
    return subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), *map(str, args)],
                          capture_output=True, text=True, timeout=30)


def one_subnet(net):
    """Hosts a (10.9.0.1) and b (10.9.0.2) of one subnet on ports p0 and p1; returns pearld's
    configuration up to its VRs."""
    net.host("a", "p0", "02:aa:00:00:00:01", addrs=("10.9.0.1/24",))
    net.host("b", "p1", "02:aa:00:00:00:02", addrs=("10.9.0.2/24",))
    return "ports:\n  - {name: p0, interface: p0, driver: af_packet}\n  - {name: p1, interface: p1, driver: af_packet}\nvrs:"


def start_beside_a_router(net, bin_dir, tmp_path, plugin_vr):
    """pearld with `plugin_vr` beside a router (`beside_a_router`), both pairs of hosts reaching
    each other."""
    net.start_pearld(bin_dir, beside_a_router(net, plugin_vr), tmp_path)
    assert wait_for_ping(net, "a", "10.9.0.2"), (tmp_path / "pearld.log").read_text()
    assert wait_for_ping(net, "c", "10.2.0.2"), (tmp_path / "pearld.log").read_text()


def beside_a_router(net, plugin_vr):
    """Hosts a (10.9.0.1) and b (10.9.0.2) of one subnet on ports p0 and p1, where `plugin_vr`
    (YAML of one VR) has its interfaces, and hosts c (10.1.0.2) and d (10.2.0.2) on p2 and p3,
    routed by fast VR `<prefix>ok`; returns pearld's configuration."""
    net.host("a", "p0", "02:aa:00:00:00:01", addrs=("10.9.0.1/24",))
    net.host("b", "p1", "02:aa:00:00:00:02", addrs=("10.9.0.2/24",))
    net.host("c", "p2", "02:cc:00:00:00:01", addrs=("10.1.0.2/24",), routes=("route add default via 10.1.0.1",))
    net.host("d", "p3", "02:cc:00:00:00:02", addrs=("10.2.0.2/24",), routes=("route add default via 10.2.0.1",))
    ports = "".join(f"  - {{name: {p}, interface: {p}, driver: af_packet}}\n" for p in ("p0", "p1", "p2", "p3"))
    return f"ports:\n{ports}vrs:" + plugin_vr + f"""
  - name: {net.prefix}ok
    interfaces:
      - {{name: eth0, port: p2, mac: "02:00:00:00:08:00", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: p3, mac: "02:00:00:00:08:01", addresses: [10.2.0.1/24]}}
"""


@pytest.mark.parametrize("wasm", ["pearl_plugin_wire.wasm", "pearl_plugin_c_wire.wasm"], ids=["rust", "c"])
def test_the_wire_example_carries_two_hosts_of_one_subnet_arp_ping_and_tcp(plugins, bin_dir, tmp_path, wasm):
    """A wire plugin (in Rust with the SDK, in C with its header) between two hosts of one
    subnet: ARP, ping and a TCP stream from hosts with default offloads (GSO super-packets,
    partial checksums) cross it untouched."""
    net = Network(f"pw{os.getpid() % 100000}")
    try:
        config = one_subnet(net)
        config += wire_vr(f"{net.prefix}w", plugins / wasm)
        net.start_pearld(bin_dir, config, tmp_path)
        done = ping(net, "a", "10.9.0.2", count=5)
        assert done.returncode == 0, done.stdout + (tmp_path / "pearld.log").read_text()
        assert "ttl=64" in done.stdout, "a wire leaves the TTL alone: " + done.stdout
        tcp = net.iperf("a", "b", "10.9.0.2", seconds=2)
        assert tcp["sum_received"]["bytes"] > 10_000_000, tcp["sum_received"]
        stats = vr(net, f"{net.prefix}w")
        assert stats["kind"] == "plugin"
        assert stats["forwarded_packets"] > 0 and not any(stats["exceptions"].values()), stats
    finally:
        net.close()


@pytest.mark.parametrize("wasm", ["pearl_plugin_lpm.wasm", "pearl_plugin_c_lpm.wasm"], ids=["rust", "c"])
def test_the_lpm_example_routes_by_the_vrs_table_and_leaves_the_rest_to_its_kernel(plugins, bin_dir, tmp_path, wasm):
    """The LPM plugin (Rust or C) routes between two subnets: TTL −1, MACs of the neighbour its VR's
    kernel resolved (routed mirrors them into the table `route_v4` reads); its kernel answers
    ARP, pings to its own address and TTL expiry."""
    net = two_hosts(f"pl{os.getpid() % 100000}")
    try:
        check_lpm_router(net, bin_dir, tmp_path, f"{net.prefix}v", f"{{wasm: {plugins / wasm}}}")
    finally:
        net.close()


def check_lpm_router(net, bin_dir, tmp_path, name, plugin):
    """pearld with plugin VR `name` running `plugin` (YAML of `plugin:`) between `two_hosts`:
    it routes with TTL −1 and TCP crosses it, while its kernel answers pings to its own address
    and TTL expiry."""
    config = one_vr(name, kind="plugin").replace("    interfaces:", f"    plugin: {plugin}\n    interfaces:")
    net.start_pearld(bin_dir, config, tmp_path)
    assert wait_for_ping(net, "a", "10.2.0.2"), (tmp_path / "pearld.log").read_text()
    done = ping(net, "a", "10.2.0.2", count=5)
    assert done.returncode == 0 and "ttl=63" in done.stdout, done.stdout
    assert ping(net, "a", "10.1.0.1").returncode == 0, "the VR's own address, answered by its kernel"
    expired = ping(net, "a", "10.2.0.2", "-t", "1", count=1)
    assert "Time to live exceeded" in expired.stdout, expired.stdout
    before = vr(net, name)["forwarded_packets"]
    tcp = net.iperf("a", "b", "10.2.0.2", seconds=2)
    assert tcp["sum_received"]["bytes"] > 10_000_000, tcp["sum_received"]
    stats = vr(net, name)
    assert stats["forwarded_packets"] > before + 1000, stats
    assert stats["exceptions"]["program"] > 0, stats["exceptions"]


DROP_ALL = """(module
  (memory (export "memory") 2)
  (func (export "pearl_area") (result i32) (i32.const 0))
  (func (export "pearl_area_size") (result i32) (i32.const 65536))
  (func (export "pearl_process") (param $n i32)))
"""


def test_a_plugin_is_swapped_at_run_time_and_the_vr_keeps_its_namespace(plugins, bin_dir, tmp_path):
    """`pearlctl vr set VR plugin=...` replaces the VR's program between two batches: a plugin
    that drops everything stops the pings, the wire back carries them again."""
    drop_all = tmp_path / "drop_all.wat"
    drop_all.write_text(DROP_ALL)
    net = Network(f"ps{os.getpid() % 100000}")
    try:
        config = one_subnet(net)
        name = f"{net.prefix}s"
        config += wire_vr(name, plugins / "pearl_plugin_wire.wasm")
        net.start_pearld(bin_dir, config, tmp_path)
        assert wait_for_ping(net, "a", "10.9.0.2"), (tmp_path / "pearld.log").read_text()
        before = vr(net, name)

        def swap(wasm):
            done = subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), "vr", "set", name, f"plugin={{wasm: {wasm}}}"],
                                  capture_output=True, text=True, timeout=30)
            assert done.returncode == 0, done.stderr

        swap(drop_all)
        assert ping(net, "a", "10.9.0.2", count=3).returncode != 0, "the new plugin drops everything"
        assert vr(net, name)["drops"]["program"] >= 3
        swap(plugins / "pearl_plugin_wire.wasm")
        assert ping(net, "a", "10.9.0.2", count=3).returncode == 0, "the wire is back"
        after = vr(net, name)
        assert after["id"] == before["id"] and after["forwarded_packets"] > before["forwarded_packets"], "counters go on"
        refused = subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), "vr", "set", name, "plugin={wasm: /nonexistent.wasm}"],
                                 capture_output=True, text=True, timeout=30)
        assert refused.returncode != 0 and "plugin.wasm" in refused.stderr, refused.stderr
        assert ping(net, "a", "10.9.0.2", count=2).returncode == 0, "a refused change leaves the running plugin alone"
    finally:
        net.close()


# Wire plugins in the WebAssembly text format that fault on every frame of the experimental
# EtherType 0x88b5 (bytes 12-13 read as a little-endian u16: 0xb588) and pass the rest.
FAULTY = """(module
  (memory (export "memory") 4)
  (func (export "pearl_area") (result i32) (i32.const 0))
  (func (export "pearl_area_size") (result i32) (i32.const 131072))
  (func (export "pearl_process") (param $n i32)
    (local $i i32) (local $d i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $d (i32.add (i32.const 16) (i32.mul (local.get $i) (i32.const 24))))
        (if (i32.eq (i32.load16_u (i32.add (i32.load (local.get $d)) (i32.const 12))) (i32.const 0xb588))
          (then FAULT))
        (i32.store16 (i32.add (local.get $d) (i32.const 14))
          (i32.or (i32.const 0x8000) (i32.sub (i32.const 1) (i32.load16_u (i32.add (local.get $d) (i32.const 12))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))))
"""
FAULTS = {
    "trap": ("unreachable", "program_trap"),
    "loop": ("(loop $spin (br $spin))", "program_fuel"),
    "memory": ("(loop $grow (drop (memory.grow (i32.const 256))) (br $grow))", "program_memory"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_faulting_plugin_is_stopped_counted_and_restarted_while_its_neighbour_loses_nothing(fault, bin_dir, tmp_path):
    body, reason = FAULTS[fault]
    wat = tmp_path / f"{fault}.wat"
    wat.write_text(FAULTY.replace("FAULT", body))
    net = Network(f"pf{os.getpid() % 100000}")
    try:
        start_beside_a_router(net, bin_dir, tmp_path, wire_vr(f"{net.prefix}x", wat, limits="    limits: {fuel_per_packet: 2000, memory_mb: 64}"))
        finish = neighbour_traffic(net, seconds=6)
        # Poison frames to the plugin VR, five bursts over the run: each stops its program.
        for _ in range(5):
            poison(net, 3)
            time.sleep(0.8)
        sent, got = finish()

        faulty = vr(net, f"{net.prefix}x")
        assert faulty["drops"][reason] >= 1, faulty["drops"]
        assert got["unique"] == sent, f"the VR next to the faulting plugin lost {sent - got['unique']} of {sent}"
        assert not any(vr(net, f"{net.prefix}ok")["drops"].values()), vr(net, f"{net.prefix}ok")["drops"]
        # Restarted after its back-off, the plugin forwards again.
        assert wait_for_ping(net, "a", "10.9.0.2", seconds=5), vr(net, f"{net.prefix}x")
        assert f"its plugin stopped ({reason}" in (tmp_path / "pearld.log").read_text()
    finally:
        net.close()


def test_a_plugin_that_cannot_run_is_refused_naming_its_field(bin_dir, tmp_path):
    """A module without the plugin interface is refused at start, naming the VR's plugin."""
    wat = tmp_path / "empty.wat"
    wat.write_text('(module (memory (export "memory") 1))')
    net = Network(f"pr{os.getpid() % 100000}")
    try:
        net.host("a", "p0", "02:aa:00:00:00:01")
        net.host("b", "p1", "02:aa:00:00:00:02")
        config = "ports:\n  - {name: p0, interface: p0, driver: af_packet}\n  - {name: p1, interface: p1, driver: af_packet}\nvrs:"
        config += wire_vr(f"{net.prefix}e", wat)
        with pytest.raises(RuntimeError) as refused:
            net.start_pearld(bin_dir, config, tmp_path)
        assert "vrs[0].plugin.wasm" in str(refused.value) and "pearl_area" in str(refused.value), refused.value
    finally:
        net.close()


def test_the_owner_fills_a_plugins_tables_while_it_runs_and_a_new_version_keeps_them(plugins, bin_dir, tmp_path):
    """The blocklist example drops IPv4 frames from sources its owner puts in table `blocked`
    (`pearlctl plugin table`) and counts them in table `stats`; the tables outlive a swap to
    a new version of the plugin that declares them again."""
    net = Network(f"pt{os.getpid() % 100000}")
    name = f"{net.prefix}v"

    def ctl(*args):
        return pearlctl(bin_dir, net, *args)

    try:
        blocklist = plugins / "pearl_plugin_blocklist.wasm"
        config = one_subnet(net) + wire_vr(name, blocklist).replace(f"plugin: {{wasm: {blocklist}}}",
                                                   f"plugin: {{wasm: {blocklist}, tables: {{blocked: 16, stats: 1}}}}")
        net.start_pearld(bin_dir, config, tmp_path)
        assert wait_for_ping(net, "a", "10.9.0.2"), (tmp_path / "pearld.log").read_text()
        listed = json.loads(ctl("plugin", "table", name, "--json").stdout)
        assert listed["tables"] == [{"name": "blocked", "max_entries": 16, "entries": 0},
                                    {"name": "stats", "max_entries": 1, "entries": 0}], listed

        done = ctl("plugin", "table", name, "blocked", "set", "10.9.0.1", "yes")
        assert done.returncode == 0, done.stderr
        assert ping(net, "a", "10.9.0.2", count=3).returncode != 0, "a's frames are dropped now"
        dropped = json.loads(ctl("plugin", "table", name, "stats", "get", "dropped", "--json").stdout)
        assert int.from_bytes(bytes.fromhex(dropped["value"]), "little") >= 3, dropped
        shown = ctl("plugin", "table", name, "blocked").stdout
        assert "10.9.0.1" in shown and "yes" in shown, shown

        # A new version (another copy of the module) declares the tables again: they carry over.
        copy = tmp_path / "blocklist-v2.wasm"
        copy.write_bytes(blocklist.read_bytes())
        done = ctl("vr", "set", name, f"plugin={{wasm: {copy}, tables: {{blocked: 16, stats: 1}}}}")
        assert done.returncode == 0, done.stderr
        assert ping(net, "a", "10.9.0.2", count=2).returncode != 0, "still blocked after the swap"

        assert ctl("plugin", "table", name, "blocked", "del", "10.9.0.1").returncode == 0
        assert wait_for_ping(net, "a", "10.9.0.2"), "unblocked"
        missing = ctl("plugin", "table", name, "blocked", "del", "10.9.0.1")
        assert missing.returncode != 0 and "no key" in missing.stderr, missing.stderr
        unknown = ctl("plugin", "table", name, "routes", "set", "k", "v")
        assert unknown.returncode != 0 and "routes" in unknown.stderr, unknown.stderr
        full = ctl("plugin", "table", name, "stats", "set", "other", "1")
        assert full.returncode != 0 and "most entries" in full.stderr, full.stderr
    finally:
        net.close()


def names_host(net, host, *args):
    return ["ip", "netns", "exec", net.hosts[host], sys.executable, str(HERE / "names_host.py"), *map(str, args)]


def test_a_protocol_that_is_not_ip_crosses_two_vrs_by_name_with_its_own_control_program(plugins, bin_dir, tmp_path):
    """The `names` example: name-based forwarding over its own EtherType through two plugin VRs
    (a — n1 — n2 — b and c), each running `names-control.py` as its control plane. Hosts b and c
    announce the prefixes they serve; the control programs learn them from the announcements
    their plugins hand up, write them into the plugins' `names` tables and announce on. A name
    served by both b and c reaches both (copies at n2), one served by c alone reaches c alone;
    a name nobody serves and a frame out of hops are dropped and counted."""
    net = Network(f"pn{os.getpid() % 100000}")
    control = ROOT / "examples" / "plugins" / "names" / "names-control.py"
    try:
        net.host("a", "p0", "02:aa:00:00:00:01")
        net.host("b", "p1", "02:aa:00:00:00:02")
        net.host("c", "p2", "02:aa:00:00:00:03")
        # The cable between the two VRs: both ends are pearld's ports.
        sh("ip", "link", "add", "l1", "type", "veth", "peer", "name", "l2", ns=net.router)
        for port in ("l1", "l2"):
            sh("ip", "link", "set", port, "up", ns=net.router)
        wasm = plugins / "pearl_plugin_names.wasm"
        net.api = tmp_path / "pearl.sock"

        def names_vr(name, interfaces):
            lines = "".join(f"      - {{name: eth{i}, port: {port}, mac: \"{mac}\"}}\n" for i, (port, mac) in enumerate(interfaces))
            return f"""
  - name: {name}
    kind: plugin
    plugin: {{wasm: {wasm}, tables: {{names: 64}}}}
    control_plane: {{command: [{control}, --api, {net.api}]}}
    interfaces:
{lines}"""
        ports = "".join(f"  - {{name: {p}, interface: {p}, driver: af_packet}}\n" for p in ("p0", "l1", "l2", "p1", "p2"))
        n1, n2 = f"{net.prefix}n1", f"{net.prefix}n2"
        config = f"ports:\n{ports}vrs:" + names_vr(n1, [("p0", "02:00:00:00:0a:00"), ("l1", "02:00:00:00:0a:01")])
        config += names_vr(n2, [("l2", "02:00:00:00:0b:00"), ("p1", "02:00:00:00:0b:01"), ("p2", "02:00:00:00:0b:02")])
        net.start_pearld(bin_dir, config, tmp_path)
        shown = api_get(net.api, f"/v1/vrs/{n1}")
        assert "code" not in shown and shown["plugin"]["tables"] == {"names": 64}, "a plugin VR has no code option: " + str(shown)

        announcers = [subprocess.Popen(names_host(net, "b", "announce", 60, "/video")),
                      subprocess.Popen(names_host(net, "c", "announce", 60, "/video", "/news"))]
        net.procs.extend(announcers)

        def table(vr_name):
            return {bytes.fromhex(e["key"]).decode(): int.from_bytes(bytes.fromhex(e["value"]), "little")
                    for e in api_get(net.api, f"/v1/vrs/{vr_name}/tables/names")["entries"]}
        deadline = time.time() + 30
        while table(n1) != {"/video": 0b10, "/news": 0b10} or table(n2) != {"/video": 0b110, "/news": 0b100}:
            assert time.time() < deadline, f"routes learnt: {table(n1)} {table(n2)}\n" + (tmp_path / "pearld.log").read_text()
            time.sleep(0.3)

        listeners = {h: subprocess.Popen(names_host(net, h, "listen", 4), stdout=subprocess.PIPE, text=True) for h in ("b", "c")}
        net.procs.extend(listeners.values())
        for p in listeners.values():
            assert p.stdout.readline().strip() == "listening"
        before = vr(net, n1)["drops"]["program"]
        sh(*names_host(net, "a", "send", 8, "/video/cats/7", "meow", "purr"))
        sh(*names_host(net, "a", "send", 8, "/news/today", "headline"))
        sh(*names_host(net, "a", "send", 8, "/sports/1", "nobody serves it"))
        sh(*names_host(net, "a", "send", 1, "/video/cats/8", "out of hops"))
        heard = {h: [json.loads(line) for line in p.communicate(timeout=30)[0].splitlines()] for h, p in listeners.items()}
        video = [{"name": "/video/cats/7", "hops": 6, "payload": "meow"}, {"name": "/video/cats/7", "hops": 6, "payload": "purr"}]
        assert heard["b"] == video, heard
        assert heard["c"] == video + [{"name": "/news/today", "hops": 6, "payload": "headline"}], heard
        assert vr(net, n1)["drops"]["program"] == before + 2, "no route, and no hop left: " + json.dumps(vr(net, n1)["drops"])
        assert vr(net, n2)["forwarded_packets"] >= 5, "two copies of each video frame, one of the news"
    finally:
        net.close()
