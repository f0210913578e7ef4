"""Virtual networks on one node (`pearlctl net apply|show|destroy`, `link set`): VRs, hosts and
the links between them from one file. Links between VRs are wires inside the fast path; hosts
hang on veths pearld makes for them. The lab is the issue's: three FRR VRs in an OSPF triangle
and two hosts; ping and iperf3 end to end, a link pulled and OSPF around it within a second,
a destroy that leaves nothing, a bad file refused whole, a changed file touching only what
changed."""

import json
import os
import subprocess
import time

import pytest

from frr_host import FrrView, ospf_config, wait_until
from netns import Network, remove_netns, sh


def ospf_conf(router_id, networks, p2p, passive=()):
    """ospfd with point-to-point links and one-second hellos (no DR to elect)."""
    interfaces = "".join(f"interface {i}\n ip ospf network point-to-point\n ip ospf hello-interval 1\n"
                         f" ip ospf dead-interval 4\nexit\n" for i in p2p)
    return interfaces + ospf_config(router_id, networks, passive)


class Lab:
    """pearld with no VRs in namespace `<prefix>r`; the net `<prefix>` is applied to it."""

    def __init__(self, bin_dir, tmp_path):
        self.prefix = f"n{os.getpid() % 10000}"
        self.net = Network(self.prefix)
        self.net.start_pearld(bin_dir, "vrs: []\n", tmp_path)
        self.bin_dir, self.tmp = bin_dir, tmp_path
        self.vr = {c: f"{self.prefix}{name}" for c, name in (("r", "red"), ("g", "grn"), ("b", "blu"))}

    def ctl(self, *args, check=True):
        done = subprocess.run(["ip", "netns", "exec", self.net.router, str(self.bin_dir / "pearlctl"), "--socket",
                               str(self.net.api), *map(str, args)], capture_output=True, text=True, timeout=120)
        if check and done.returncode != 0:
            raise AssertionError(f"pearlctl {' '.join(map(str, args))}: {done.returncode} {done.stderr}")
        return done

    def apply(self, text, check=True):
        f = self.tmp / "net.yaml"
        f.write_text(text)
        done = self.ctl("net", "apply", "-f", f, check=check)
        if done.returncode == 0:
            self.wait_api()
        return done

    def wait_api(self):
        """A net that adds or removes ports has pearld start again over its VRs (live restore)."""
        time.sleep(0.5)
        wait_until("pearld answering", 30, lambda: self.ctl("net", "list", check=False).returncode == 0, interval=0.2)

    def show(self):
        return json.loads(self.ctl("net", "show", self.prefix, "--json").stdout)

    def host(self, name):
        return f"{self.prefix}-{name}"

    def close(self):
        self.ctl("net", "destroy", self.prefix, check=False)
        for h in ("h1", "h2"):
            remove_netns(self.host(h))
        self.net.close()
        for vr in self.vr.values():
            sh("ip", "netns", "del", vr, check=False)
            sh("rm", "-rf", f"/etc/frr/{vr}", f"/var/run/frr/{vr}", check=False)


@pytest.fixture
def lab(bin_dir, tmp_path):
    lab = Lab(bin_dir, tmp_path)
    try:
        yield lab
    finally:
        lab.close()


def triangle(lab, red_blue_extra=""):
    """red (r) — blue (b) directly (cost 10) and through green (g) (cost 100 each way); host h1 on
    red (10.0.1.0/24), h2 on blue (10.0.2.0/24)."""
    r, g, b = lab.vr["r"], lab.vr["g"], lab.vr["b"]
    subnets = {"rb": "10.9.1", "rg": "10.9.2", "gb": "10.9.3"}
    # Interface, its subnet, its OSPF cost, per VR.
    ifs = {
        r: [("eth0", "10.0.1.1/24", None), ("eth1", f"{subnets['rb']}.1/24", 10), ("eth2", f"{subnets['rg']}.1/24", 100)],
        g: [("eth1", f"{subnets['rg']}.2/24", 100), ("eth2", f"{subnets['gb']}.1/24", 100)],
        b: [("eth0", "10.0.2.1/24", None), ("eth1", f"{subnets['rb']}.2/24", 10), ("eth2", f"{subnets['gb']}.2/24", 100)],
    }
    vrs = []
    for n, (vr, its) in enumerate(ifs.items()):
        p2p = [i for i, _, cost in its if cost]
        conf = ospf_conf(f"10.255.0.{n + 1}", sorted({a.rsplit(".", 1)[0] + ".0/24" for _, a, _ in its}), p2p,
                         [i for i, _, cost in its if not cost])
        for i, _, cost in its:
            if cost:
                conf = conf.replace(f"interface {i}\n", f"interface {i}\n ip ospf cost {cost}\n", 1)
        path = lab.tmp / f"{vr}.conf"
        path.write_text(conf)
        lines = "\n".join(f'      - {{name: {i}, mac: "02:00:00:{n:02x}:00:{k:02x}", addresses: [{a}]}}'
                          for k, (i, a, _) in enumerate(its))
        vrs.append(f"""  - name: {vr}
    interfaces:
{lines}
    control_plane: {{frr: {{daemons: [zebra, ospfd], config: {path}}}}}""")
    vr_text = "\n".join(vrs)
    return f"""name: {lab.prefix}
vrs:
{vr_text}
hosts:
  - name: h1
    interfaces: [{{name: eth0, addresses: [10.0.1.2/24]}}]
    routes: [{{to: default, via: 10.0.1.1}}]
  - name: h2
    interfaces: [{{name: eth0, addresses: [10.0.2.2/24]}}]
    routes: [{{to: default, via: 10.0.2.1}}]
    command: iperf3 -s -p 5301
links:
  - {{a: {r}/eth1, b: {b}/eth1{red_blue_extra}}}
  - {{a: {r}/eth2, b: {g}/eth1}}
  - {{a: {g}/eth2, b: {b}/eth2}}
  - {{a: h1/eth0, b: {r}/eth0}}
  - {{a: h2/eth0, b: {b}/eth0}}
"""


def red_to_blue_hosts_via(lab):
    """The next hop red's kernel (FRR) has for h2's subnet."""
    out = sh("ip", "-j", "route", "show", "10.0.2.0/24", ns=lab.vr["r"]).stdout
    routes = json.loads(out or "[]")
    return routes[0].get("gateway") if routes else None


def test_an_ospf_triangle_lab_carries_traffic_and_reroutes_around_a_pulled_link(lab):
    lab.apply(triangle(lab))
    shown = lab.show()
    assert sorted(shown["vrs"]) == sorted(lab.vr.values())
    kinds = {l["name"]: l["kind"] for l in shown["links"]}
    assert kinds[f"{lab.vr['r']}-{lab.vr['b']}"] == "wire" and kinds[f"h1-{lab.vr['r']}"] == "veth", kinds
    wait_until("OSPF Full on red with blue and green", 60,
               lambda: len(FrrView(lab.vr["r"]).ospf_full_neighbors()) == 2, interval=0.5)
    wait_until("h2's subnet at red through blue", 30, lambda: red_to_blue_hosts_via(lab) == "10.9.1.2")
    h1 = lab.host("h1")
    sh("ping", "-c", "3", "-i", "0.2", "-W", "2", "10.0.2.2", ns=h1)
    iperf = sh("iperf3", "-c", "10.0.2.2", "-p", "5301", "-t", "2", "-J", ns=h1, check=False)
    gbps = json.loads(iperf.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9
    print(f"iperf3 h1 → h2 across red-blue: {gbps:.2f} Gb/s")
    assert gbps > 0.05, gbps
    # The iperf3 stream crossed red-blue as a wire in the fast path: both ends' ports counted it.
    ports = {p["name"]: p for p in lab.net.stats()["ports"]}
    wire = next(l for l in shown["links"] if l["kind"] == "wire" and l["name"] == f"{lab.vr['r']}-{lab.vr['b']}")
    assert all(ports[p]["rx_packets"] > 1_000 and ports[p]["tx_packets"] > 1_000 for p in wire["ports"]), \
        [ports[p] for p in wire["ports"]]

    link = f"{lab.vr['r']}-{lab.vr['b']}"
    pulled = time.monotonic()
    lab.ctl("link", "set", lab.prefix, link, "down")
    assert "NO-CARRIER" in sh("ip", "link", "show", "eth1", ns=lab.vr["r"]).stdout, "red's kernel sees the link down"
    wait_until("h2's subnet at red through green", 1.0, lambda: red_to_blue_hosts_via(lab) == "10.9.2.2", interval=0.02)
    print(f"rerouted through green {time.monotonic() - pulled:.2f} s after link set down")
    sh("ping", "-c", "3", "-i", "0.2", "-W", "2", "10.0.2.2", ns=h1)
    down = next(l for l in lab.show()["links"] if l["name"] == link)
    assert (down["state"], down["carrier_changes"]) == ("down", 1), down

    lab.ctl("link", "set", lab.prefix, link, "up")
    wait_until("h2's subnet at red through blue again", 15, lambda: red_to_blue_hosts_via(lab) == "10.9.1.2", interval=0.1)
    sh("ping", "-c", "2", "-i", "0.2", "-W", "2", "10.0.2.2", ns=h1)
    up = next(l for l in lab.show()["links"] if l["name"] == link)
    assert (up["state"], up["carrier_changes"]) == ("up", 2), up

    # A host's link: its end of the veth loses the carrier as the VR's does.
    lab.ctl("link", "set", lab.prefix, f"h1-{lab.vr['r']}", "down")
    assert "NO-CARRIER" in sh("ip", "link", "show", "eth0", ns=h1).stdout
    assert "NO-CARRIER" in sh("ip", "link", "show", "eth0", ns=lab.vr["r"]).stdout
    lab.ctl("link", "set", lab.prefix, f"h1-{lab.vr['r']}", "up")
    wait_until("h1 reaches h2 again", 10,
               lambda: sh("ping", "-c", "1", "-W", "1", "10.0.2.2", ns=h1, check=False).returncode == 0)

    lab.ctl("net", "destroy", lab.prefix)
    lab.wait_api()
    left = sh("ip", "netns", "list").stdout
    for ns in [*lab.vr.values(), lab.host("h1"), lab.host("h2")]:
        assert ns not in left, f"{ns} left behind"
    devices = sh("ip", "-o", "link", "show", ns=lab.net.router).stdout
    assert " pv" not in devices, devices
    cgroups = subprocess.run(["find", "/sys/fs/cgroup", "-type", "d", "-name", f"{lab.prefix}*"],
                             capture_output=True, text=True).stdout.split()
    assert cgroups == [], cgroups
    for vr in lab.vr.values():
        assert not os.path.exists(f"/etc/frr/{vr}") and not os.path.exists(f"/var/run/frr/{vr}"), vr
    config = json.loads(lab.ctl("config", "show", "--json").stdout)
    assert config.get("vrs") == [] and not config.get("ports") and "nets" not in config, config
    assert json.loads(lab.ctl("net", "list", "--json").stdout)["nets"] == []


def test_a_bad_lab_file_is_refused_whole_naming_the_field(lab):
    text = triangle(lab).replace(f"a: {lab.vr['g']}/eth2,", "a: x/eth2,")
    done = lab.apply(text, check=False)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert 'nets.' + lab.prefix + '.links[2].a: no VR or host "x"' in done.stderr, done.stderr
    assert lab.host("h1") not in sh("ip", "netns", "list").stdout, "nothing was made"
    assert json.loads(lab.ctl("net", "list", "--json").stdout)["nets"] == []


def test_a_changed_lab_file_touches_only_what_changed(lab):
    """A delay on red-blue changes red's and blue's interface on it, in place: green (its links
    unchanged) keeps its ospfd, adjacencies and counters, and pearld does not start again."""
    lab.apply(triangle(lab))
    wait_until("OSPF Full on green with red and blue", 60,
               lambda: len(FrrView(lab.vr["g"]).ospf_full_neighbors()) == 2, interval=0.5)
    ospfd = {vr: open(f"/var/run/frr/{vr}/ospfd.pid").read() for vr in lab.vr.values()}
    pearld = lab.net.pearld.pid
    green = lambda: next(v for v in lab.net.stats()["vrs"] if v["name"] == lab.vr["g"])  # noqa: E731
    sh("ping", "-c", "2", "-i", "0.2", "10.9.2.2", ns=lab.vr["r"])
    before = green()
    lab.apply(triangle(lab, ", impair: {delay_ms: 20}"))
    rtt = sh("ping", "-c", "3", "-i", "0.2", "10.9.1.2", ns=lab.vr["r"]).stdout
    avg = float(rtt.rsplit("=", 1)[1].split("/")[1])
    assert avg >= 35, f"20 ms each way on red-blue: {rtt}"
    assert open(f"/var/run/frr/{lab.vr['g']}/ospfd.pid").read() == ospfd[lab.vr["g"]], "green kept its ospfd"
    assert len(FrrView(lab.vr["g"]).ospf_full_neighbors()) == 2, "green's adjacencies lived on"
    assert lab.net.pearld.poll() is None and lab.net.pearld.pid == pearld
    after = green()
    assert after["rx_packets"] >= before["rx_packets"] > 0, (before, after)
    changed = {vr for vr in lab.vr.values() if open(f"/var/run/frr/{vr}/ospfd.pid").read() != ospfd[vr]}
    print(f"VRs whose ospfd started again: {sorted(changed) or 'none'}")


def wire_pair_file(prefix):
    """A configuration whose `nets:` alone makes two fast VRs `<prefix>a`, `<prefix>b` with static
    routes on a wire between their eth1, and a host on each one's eth0 (10.1.0.2 — 10.2.0.2)."""
    a, b = f"{prefix}a", f"{prefix}b"
    vr = lambda name, k, far, via: f"""        - name: {name}
          interfaces:
            - {{name: eth0, mac: "02:00:00:0{k}:00:00", addresses: [10.{k}.0.1/24]}}
            - {{name: eth1, mac: "02:00:00:0{k}:00:01", addresses: [10.9.0.{k}/24]}}
          routes: [{{prefix: {far}, via: {via}}}]"""  # noqa: E731
    host = lambda name, k: f"""        - name: {name}
          interfaces: [{{name: eth0, addresses: [10.{k}.0.2/24]}}]
          routes: [{{to: default, via: 10.{k}.0.1}}]"""  # noqa: E731
    return f"""vrs: []
nets:
  {prefix}:
    vrs:
{vr(a, 1, "10.2.0.0/24", "10.9.0.2")}
{vr(b, 2, "10.1.0.0/24", "10.9.0.1")}
    hosts:
{host("h1", 1)}
{host("h2", 2)}
    links:
      - {{a: {a}/eth1, b: {b}/eth1}}
      - {{a: h1/eth0, b: {a}/eth0}}
      - {{a: h2/eth0, b: {b}/eth0}}
"""


def test_a_net_in_the_configuration_file_is_made_at_start_and_carries_traffic(bin_dir, tmp_path):
    """Two fast VRs with static routes on a wire, a host on each: the file's `nets:` alone."""
    prefix = f"f{os.getpid() % 10000}"
    n = Network(prefix)
    a, b = f"{prefix}a", f"{prefix}b"
    try:
        n.start_pearld(bin_dir, wire_pair_file(prefix), tmp_path)
        sh("ping", "-c", "3", "-i", "0.2", "-W", "2", "10.2.0.2", ns=f"{prefix}-h1")
        ctl = ["ip", "netns", "exec", n.router, str(bin_dir / "pearlctl"), "--socket", str(n.api)]
        shown = json.loads(subprocess.run([*ctl, "net", "show", prefix, "--json"], capture_output=True, text=True).stdout)
        assert [l["kind"] for l in shown["links"]] == ["wire", "veth", "veth"], shown
        assert n.node_stop() == 0
        left = sh("ip", "netns", "list").stdout
        assert not [ns for ns in (f"{prefix}-h1", f"{prefix}-h2", a, b) if ns in left], left
    finally:
        n.close()
        for ns in (f"{prefix}-h1", f"{prefix}-h2", a, b):
            remove_netns(ns)


def test_pearlctl_capture_on_a_link_end_records_the_frames_that_cross_the_wire(bin_dir, tmp_path):
    """`pearlctl capture VR --interface IF` on an interface whose link is a wire: what the VR
    sends into the wire (tx) and what the VR at the other end takes out of it (rx), as pcap
    files tshark reads: the hosts' echo requests, routed (TTL one less than the host sent)."""
    prefix = f"l62c{os.getpid() % 100}"
    n = Network(prefix)
    a, b = f"{prefix}a", f"{prefix}b"
    try:
        n.start_pearld(bin_dir, wire_pair_file(prefix), tmp_path)
        h1 = f"{prefix}-h1"
        wait_until("h1 reaches h2 across the wire", 20,
                   lambda: sh("ping", "-c", "1", "-W", "1", "10.2.0.2", ns=h1, check=False).returncode == 0)
        ctl = ["ip", "netns", "exec", n.router, str(bin_dir / "pearlctl"), "--socket", str(n.api)]
        sent, taken = tmp_path / "a-eth1-tx.pcap", tmp_path / "b-eth1-rx.pcap"
        captures = [subprocess.Popen([*ctl, "capture", vr, "--interface", "eth1", "--point", point, "--seconds", "3",
                                      "-w", str(f)], stderr=subprocess.PIPE, text=True)
                    for vr, point, f in ((a, "tx", sent), (b, "rx", taken))]
        time.sleep(0.5)
        sh("ping", "-c", "5", "-i", "0.2", "-W", "1", "-t", "64", "10.2.0.2", ns=h1)
        for c in captures:
            _, err = c.communicate(timeout=30)
            assert c.returncode == 0, err
        for f in (sent, taken):
            fields = sh("tshark", "-r", f, "-Y", "icmp.type == 8", "-T", "fields", "-e", "ip.src", "-e", "ip.dst",
                        "-e", "ip.ttl").stdout.split("\n")
            requests = [line.split("\t") for line in fields if line]
            assert len(requests) >= 5, (f.name, requests)
            assert all(r == ["10.1.0.2", "10.2.0.2", "63"] for r in requests), (f.name, requests)
    finally:
        n.close()
        for ns in (f"{prefix}-h1", f"{prefix}-h2", a, b):
            remove_netns(ns)
