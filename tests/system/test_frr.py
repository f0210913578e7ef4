"""FRR as a VR's control plane. Host-side speakers (FRR's ospfd or bgpd in plain namespaces)
form an OSPF adjacency or a BGP session with the VR's FRR, and the routes learned must carry
transit traffic on pearld's fast path.

The tests through pearld have twins without it, which run the same helpers between two plain
namespaces joined by veth pairs (the router namespace of `Network` standing where the VR's
namespace is), so a failure says whether FRR or PEARL is at fault."""

import json
import os
import subprocess
import time

import pytest

from frr_host import (Frr, FrrView, frr_bgp_config, kernel_routes, ospf_config, prefixes, rss_kib, rx_packets,
                      spray, spray_prefixes, wait_until)
from netns import Network, sh

ROUTES = 100_000
FAR = "203.0.113.1"  # on a subnet behind host a, which the VR learns over OSPF


def lan_behind(ns):
    """203.0.113.0/24 on a veth pair inside `ns` (this kernel has no dummy interfaces): a
    subnet behind the host for OSPF to announce, FAR its address."""
    sh("ip", "link", "add", "lan0", "type", "veth", "peer", "name", "lan1", ns=ns)
    sh("ip", "addr", "add", f"{FAR}/24", "dev", "lan0", ns=ns)
    for dev in ("lan0", "lan1"):
        sh("ip", "link", "set", dev, "up", ns=ns)


def ospf_confs(router_id, networks, p2p, passive=()):
    """ospfd.conf with fast timers on point-to-point links (no DR election to wait for)."""
    interfaces = "".join(f"interface {i}\n ip ospf network point-to-point\n ip ospf hello-interval 1\n"
                         f" ip ospf dead-interval 4\nexit\n" for i in p2p)
    return interfaces + ospf_config(router_id, networks, passive)


HOST_OSPF = ospf_confs("10.1.0.2", ["10.1.0.0/24", "203.0.113.0/24"], ["eth0"], ["lan0"])


def bgp_speaker(ns, nets):
    """FRR's bgpd in host namespace `ns` (10.1.0.2, AS 65002) announcing `nets` to 10.1.0.1
    (AS 65001)."""
    return Frr(ns, {"bgpd": frr_bgp_config(65002, "10.1.0.2", [("10.1.0.1", 65001)], nets)})


def remove_vr_leftovers(vr):
    """Whatever pearld may leave behind if a test fails half-way: the VR's FRR daemons (found by
    their `-N <vr>`), its FRR files, its namespace."""
    sh("pkill", "-9", "-f", "--", f"-N {vr}( |$)", check=False)
    sh("ip", "netns", "del", vr, check=False)
    for d in (f"/etc/frr/{vr}", f"/var/run/frr/{vr}"):
        sh("rm", "-rf", d, check=False)


def in_vr(net, *cmd):
    """Runs `cmd` in the VR's namespace."""
    return sh(*cmd, ns=net.vr)


# --- the helpers between two plain namespaces (no pearld) ---------------------------------


@pytest.fixture
def pair():
    """Router namespace `r` (p0 10.1.0.1/24, p1 10.2.0.1/24, forwarding) with host `a` on p0
    (10.1.0.2, and FAR behind it) and host `b` on p1 (10.2.0.2, default route via r)."""
    n = Network(f"fh{os.getpid() % 100000}")
    closers = []
    try:
        n.host("a", "p0", "02:aa:00:00:00:01", addrs=("10.1.0.2/24",))
        n.host("b", "p1", "02:aa:00:00:00:02", addrs=("10.2.0.2/24",), routes=("route add default via 10.2.0.1",))
        lan_behind(n.hosts["a"])
        for dev, addr in (("p0", "10.1.0.1/24"), ("p1", "10.2.0.1/24")):
            sh("ip", "addr", "add", addr, "dev", dev, ns=n.router)
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=n.router)
        n.closers = closers
        yield n
    finally:
        for close in reversed(closers):
            close()
        n.close()


def test_ospf_helpers_form_an_adjacency_and_carry_traffic(pair):
    host = Frr(pair.hosts["a"], {"ospfd": HOST_OSPF})
    pair.closers.append(host.close)
    router = Frr(pair.router, {"ospfd": ospf_confs("10.1.0.1", ["10.1.0.0/24", "10.2.0.0/24"], ["p0"], ["p1"])})
    pair.closers.append(router.close)
    t = time.time()
    wait_until("OSPF Full on both sides", 30,
               lambda: "10.1.0.1" in host.ospf_full_neighbors() and "10.1.0.2" in router.ospf_full_neighbors())
    wait_until("203.0.113.0/24 in the router's kernel", 15,
               lambda: "203.0.113.0/24" in sh("ip", "route", "show", "proto", "ospf", ns=pair.router).stdout)
    print(f"OSPF adjacency and route in {time.time() - t:.1f} s")
    # The host learned the router's other subnet too, so replies find their way back.
    wait_until("10.2.0.0/24 at the host", 15,
               lambda: "10.2.0.0/24" in sh("ip", "route", "show", "proto", "ospf", ns=pair.hosts["a"]).stdout)
    sh("ping", "-c", "3", "-i", "0.2", "-W", "2", FAR, ns=pair.hosts["b"])


def test_bgp_speaker_delivers_100k_prefixes(pair):
    router = Frr(pair.router, {"bgpd": frr_bgp_config(65001, "10.1.0.1", [("10.1.0.2", 65002)])})
    pair.closers.append(router.close)
    nets = prefixes(ROUTES)
    t0 = time.time()
    pair.closers.append(bgp_speaker(pair.hosts["a"], nets).close)
    loaded = time.time()
    wait_until("session established", 60, lambda: router.bgp_peer("10.1.0.2").get("state") == "Established")
    wait_until(f"{ROUTES} prefixes in the router's bgpd", 300,
               lambda: router.bgp_peer("10.1.0.2").get("pfxRcd") == ROUTES, interval=1)
    received = time.time()
    wait_until(f"{ROUTES} routes in the router's kernel", 300,
               lambda: kernel_routes(pair.router, "bgp") == ROUTES, interval=1)
    installed = time.time()
    memory = rss_kib(router.pids()) // 1024
    print(f"speaker loaded in {loaded - t0:.1f} s, {ROUTES} received {received - t0:.1f} s, "
          f"in the kernel {installed - t0:.1f} s after its start; receiving zebra+bgpd {memory} MiB")
    # Every prefix carries traffic: one frame to each, from b through r to a.
    sh("ping", "-c", "1", "-W", "2", "10.1.0.2", ns=pair.router)
    before = rx_packets(pair.hosts["a"])
    spray_prefixes(pair.hosts["b"], "eth0", "02:aa:00:00:00:02", mac_of(pair.router, "p1"), "10.2.0.2", nets)
    wait_until("every frame at the far host", 10, lambda: rx_packets(pair.hosts["a"]) - before >= ROUTES)


def mac_of(ns, dev):
    return json.loads(sh("ip", "-j", "link", "show", dev, ns=ns).stdout)[0]["address"]


# --- through pearld: the VR's FRR drives the fast path ----------------------------------------

VR_MACS = ("02:00:00:00:01:00", "02:00:00:00:01:01")


def vr_config(vr, frr_conf, daemons):
    return f"""
ports:
  - {{name: p0, interface: p0, driver: af_packet}}
  - {{name: p1, interface: p1, driver: af_packet}}
vrs:
  - name: {vr}
    interfaces:
      - {{name: eth0, port: p0, mac: "{VR_MACS[0]}", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: p1, mac: "{VR_MACS[1]}", addresses: [10.2.0.1/24]}}
    control_plane: {{frr: {{daemons: [{", ".join(daemons)}], config: {frr_conf}}}}}
"""


@pytest.fixture
def vr_net(bin_dir, tmp_path):
    """Hosts a (p0) and b (p1) around pearld; the VR, `<prefix>v`, gets its namespace and FRR
    from pearld."""
    prefix = f"fv{os.getpid() % 100000}"
    n = Network(prefix)
    n.vr = f"{prefix}v"
    n.closers = []
    try:
        # a's route back to b is static: the BGP test's VR announces nothing.
        n.host("a", "p0", "02:aa:00:00:00:01", addrs=("10.1.0.2/24",), routes=("route add 10.2.0.0/24 via 10.1.0.1",))
        n.host("b", "p1", "02:aa:00:00:00:02", addrs=("10.2.0.2/24",), routes=("route add default via 10.2.0.1",))
        lan_behind(n.hosts["a"])
        yield n
    finally:
        for close in reversed(n.closers):
            close()
        n.close()
        remove_vr_leftovers(n.vr)


def pearlctl_stats(bin_dir, net):
    out = subprocess.run(["ip", "netns", "exec", net.router, str(bin_dir / "pearlctl"), "--socket", str(net.api),
                          "stats", "--json"], capture_output=True, text=True, timeout=10, check=True)
    return json.loads(out.stdout)["vrs"][0]


def ospf_through_vr(vr_net, bin_dir, tmp_path):
    """pearld with a VR running ospfd, adjacent to host a's ospfd, which announces FAR's subnet;
    returns host a's FRR once the VR's kernel has that route."""
    host = Frr(vr_net.hosts["a"], {"ospfd": HOST_OSPF})
    vr_net.closers.append(host.close)
    conf = tmp_path / "vr-frr.conf"
    conf.write_text(ospf_confs("10.1.0.1", ["10.1.0.0/24", "10.2.0.0/24"], ["eth0"], ["eth1"]))
    vr_net.start_pearld(bin_dir, vr_config(vr_net.vr, conf, ["ospfd"]), tmp_path)
    wait_until("OSPF Full across PEARL", 60, lambda: "10.1.0.1" in host.ospf_full_neighbors())
    wait_until("203.0.113.0/24 in the VR's kernel", 30,
               lambda: "203.0.113.0/24" in in_vr(vr_net, "ip", "route", "show", "proto", "ospf").stdout)
    return host


def test_ospf_through_a_vr_puts_transit_traffic_on_the_fast_path(vr_net, bin_dir, tmp_path):
    ospf_through_vr(vr_net, bin_dir, tmp_path)
    sh("ping", "-c", "2", "-W", "2", FAR, ns=vr_net.hosts["b"])  # neighbours resolved, routes mirrored
    before = pearlctl_stats(bin_dir, vr_net)
    arrived = rx_packets(vr_net.hosts["a"])
    count = 200
    spray(vr_net.hosts["b"], "eth0", "02:aa:00:00:00:02", VR_MACS[1], "10.2.0.2", FAR, count, step=0,
          rate_pps=1000)
    wait_until("the frames at the far host", 10, lambda: rx_packets(vr_net.hosts["a"]) - arrived >= count)
    after = pearlctl_stats(bin_dir, vr_net)
    assert after["forwarded_packets"] - before["forwarded_packets"] >= count, (before, after)
    to_kernel = after["slow_path"]["to_kernel_packets"] - before["slow_path"]["to_kernel_packets"]
    assert to_kernel < count // 10, f"{to_kernel} of {count} transit frames took the slow path"


def test_bgp_100k_prefixes_land_in_the_fast_path(vr_net, bin_dir, tmp_path):
    conf = tmp_path / "vr-frr.conf"
    conf.write_text(frr_bgp_config(65001, "10.1.0.1", [("10.1.0.2", 65002)]))
    vr_net.start_pearld(bin_dir, vr_config(vr_net.vr, conf, ["bgpd"]), tmp_path)
    nets = prefixes(ROUTES)
    vr_net.closers.append(bgp_speaker(vr_net.hosts["a"], nets).close)
    vr_frr = FrrView(vr_net.vr)
    wait_until(f"{ROUTES} prefixes in the VR's bgpd", 300,
               lambda: vr_frr.bgp_peer("10.1.0.2").get("pfxRcd") == ROUTES, interval=1)
    wait_until(f"{ROUTES} routes in the VR's kernel", 300,
               lambda: in_vr(vr_net, "ip", "-4", "route", "show", "proto", "bgp").stdout.count("\n") == ROUTES,
               interval=1)
    sh("ping", "-c", "2", "-W", "2", "10.1.0.2", ns=vr_net.hosts["b"])  # the VR resolves both hosts
    before = pearlctl_stats(bin_dir, vr_net)
    lost_before = port_rx_dropped(vr_net, "p1")
    arrived = rx_packets(vr_net.hosts["a"])
    spray_prefixes(vr_net.hosts["b"], "eth0", "02:aa:00:00:00:02", VR_MACS[1], "10.2.0.2", nets)
    # p1's receive ring holds ~5 ms of this spray. This machine's two virtual CPUs are stolen by
    # the hypervisor for up to ~15 ms at times (perf sched shows the worker runnable and nothing
    # else running), and the far host's kernel frees a route entry per dropped frame in RCU
    # callbacks on the worker's CPU: the ring can overflow while the sprayer's CPU runs on.
    # Such frames are counted as lost on the port; every other one must be forwarded.
    def accounted():
        lost = port_rx_dropped(vr_net, "p1") - lost_before
        return (lost,) if rx_packets(vr_net.hosts["a"]) - arrived + lost >= ROUTES else None

    lost = wait_until("every frame at the far host or counted as lost", 30, accounted)[0]
    assert lost <= ROUTES // 20, f"{lost} frames lost at p1's receive ring"
    after = pearlctl_stats(bin_dir, vr_net)
    assert after["forwarded_packets"] - before["forwarded_packets"] == ROUTES - lost, (lost, before, after)
    assert after["exceptions"].get("no_route", 0) == before["exceptions"].get("no_route", 0), (before, after)


def port_rx_dropped(net, port):
    return next(p["rx_dropped"] for p in net.stats()["ports"] if p["name"] == port)


def test_a_crashed_vr_daemon_leaves_the_fast_path_forwarding(vr_net, bin_dir, tmp_path):
    """kill -9 of the VR's ospfd: zebra withdraws its routes from the VR's kernel at once, but
    the fast path keeps forwarding on the last routes until ospfd is back."""
    host = ospf_through_vr(vr_net, bin_dir, tmp_path)
    sh("ping", "-c", "2", "-W", "2", FAR, ns=vr_net.hosts["b"])
    pid = int(open(f"/var/run/frr/{vr_net.vr}/ospfd.pid").read())
    os.kill(pid, 9)
    wait_until("the route withdrawn from the VR's kernel", 10,
               lambda: "203.0.113.0/24" not in in_vr(vr_net, "ip", "route", "show", "proto", "ospf").stdout,
               interval=0.01)
    arrived = rx_packets(vr_net.hosts["a"])
    count = 300
    spray(vr_net.hosts["b"], "eth0", "02:aa:00:00:00:02", VR_MACS[1], "10.2.0.2", FAR, count, step=0, rate_pps=1000)
    wait_until("the frames at the far host", 10, lambda: rx_packets(vr_net.hosts["a"]) - arrived >= count)
    held = pearlctl_stats(bin_dir, vr_net)["routed"]
    assert held["held"] or held["deferred_removals"] > 0, held
    wait_until("ospfd back and Full again", 60, lambda: "10.1.0.1" in host.ospf_full_neighbors())


def vr_show(bin_dir, net, *json_flag):
    out = subprocess.run(["ip", "netns", "exec", net.router, str(bin_dir / "pearlctl"), "--socket", str(net.api),
                          "vr", "show", net.vr, *json_flag], capture_output=True, text=True, timeout=10, check=True)
    return json.loads(out.stdout) if json_flag else out.stdout


def health_when(bin_dir, net, what, check):
    """`health` of `pearlctl vr show VR --json` once `check` holds for it."""
    return wait_until(what, 30, lambda: (lambda h: h if check(h) else None)(vr_show(bin_dir, net, "--json")["health"]))


def test_vr_show_tells_the_ospf_adjacency_its_daemons_and_the_routes_in_the_fast_path(vr_net, bin_dir, tmp_path):
    """Health at a glance (issue 53): the adjacency as the VR's ospfd reports it, its daemons with
    their restarts and last exit, the routes routed mirrored into the fast path; and the
    adjacency seen going down when the host's ospfd stops."""
    host = ospf_through_vr(vr_net, bin_dir, tmp_path)
    h = health_when(bin_dir, vr_net, "the adjacency in vr show", lambda h: h["sessions_up"] == 1)
    assert h["sessions"] == [{"protocol": "ospf", "peer": "10.1.0.2", "interface": "eth0", "state": "Full/-", "up": True}], h
    assert (h["daemons_running"], h["daemons"]) == (2, 2), h
    assert h["routed_in_sync"] is True, h
    mirrored = pearlctl_stats(bin_dir, vr_net)["routed"]
    assert h["fast_path_routes"]["v4"] == mirrored["routes_v4"] >= 3, (h, mirrored)  # 2 connected + 203.0.113.0/24
    text = vr_show(bin_dir, vr_net)
    assert "  health: 2/2 daemons running, 1/1 sessions up" in text and "routed in sync" in text, text
    assert "    ospf 10.1.0.2 on eth0: Full/- (up)\n" in text, text

    pid = int(open(f"/var/run/frr/{vr_net.vr}/ospfd.pid").read())
    os.kill(pid, 9)
    shown = wait_until("ospfd restarted, in vr show", 30, lambda: next(
        (p for p in vr_show(bin_dir, vr_net, "--json")["processes"] if p["name"] == "ospfd" and p["running"]
         and p["restarts"] == 1), None))
    assert shown["last_exit"] == "signal: 9 (SIGKILL)", shown
    assert "process ospfd: running as pid" in vr_show(bin_dir, vr_net) and "last exit: signal: 9 (SIGKILL)" in vr_show(bin_dir, vr_net)
    health_when(bin_dir, vr_net, "the adjacency back after the restart", lambda h: h["sessions_up"] == 1)

    host.close()
    h = health_when(bin_dir, vr_net, "the adjacency gone once the host's ospfd stops", lambda h: h["sessions_up"] == 0)
    assert all(not s["up"] for s in h["sessions"]), h
    h = health_when(bin_dir, vr_net, "the learned route out of the fast path",
                    lambda h: h["fast_path_routes"]["v4"] == mirrored["routes_v4"] - 1)
    assert h["routed_in_sync"] is True, h


def test_a_bgp_session_survives_a_killed_pearld(vr_net, bin_dir, tmp_path):
    """pearld killed with SIGKILL and started again: the VR's bgpd, its TAPs and its session
    live on (re-adopted, not restarted), and forwarding resumes within a second."""
    conf = tmp_path / "vr-frr.conf"
    conf.write_text(frr_bgp_config(65001, "10.1.0.1", [("10.1.0.2", 65002)]))
    text = vr_config(vr_net.vr, conf, ["bgpd"])
    vr_net.start_pearld(bin_dir, text, tmp_path)
    nets = prefixes(1000)
    vr_net.closers.append(bgp_speaker(vr_net.hosts["a"], nets).close)
    vr_frr = FrrView(vr_net.vr)
    wait_until("1000 prefixes in the VR's bgpd", 120, lambda: vr_frr.bgp_peer("10.1.0.2").get("pfxRcd") == 1000)
    session = vr_frr.bgp_peer("10.1.0.2")
    bgpd = int(open(f"/var/run/frr/{vr_net.vr}/bgpd.pid").read())

    vr_net.pearld.kill()
    vr_net.pearld.wait(timeout=10)
    restarted = time.time()
    vr_net.start_pearld(bin_dir, text, tmp_path)
    sh("ping", "-c", "1", "-W", "1", "10.1.0.2", ns=vr_net.hosts["b"], check=False)
    arrived = rx_packets(vr_net.hosts["a"])
    spray_prefixes(vr_net.hosts["b"], "eth0", "02:aa:00:00:00:02", VR_MACS[1], "10.2.0.2", nets[:100])
    wait_until("forwarding through the restarted pearld", 5, lambda: rx_packets(vr_net.hosts["a"]) - arrived >= 100,
               interval=0.05)
    assert time.time() - restarted < 5
    after = vr_frr.bgp_peer("10.1.0.2")
    assert int(open(f"/var/run/frr/{vr_net.vr}/bgpd.pid").read()) == bgpd, "bgpd was re-adopted, not restarted"
    assert after.get("state") == "Established", after
    assert after.get("connectionsEstablished") == session.get("connectionsEstablished"), (session, after)


def test_stopping_the_node_leaves_nothing_of_a_vr_behind(vr_net, bin_dir, tmp_path):
    """After `pearlctl node stop`: no namespace (so no TAP), no cgroup, no FRR process, directory
    or log, no TAP holder."""
    ospf_through_vr(vr_net, bin_dir, tmp_path)
    vr = vr_net.vr
    cgroups = lambda: subprocess.run(["find", "/sys/fs/cgroup", "-type", "d", "-name", vr],  # noqa: E731
                                     capture_output=True, text=True).stdout.split()
    daemons = lambda: subprocess.run(["pgrep", "-f", "--", f"-N {vr}( |$)"], capture_output=True, text=True).stdout.split()  # noqa: E731
    assert cgroups(), "the VR has a cgroup while it runs"
    assert daemons(), "the VR's FRR runs"
    assert os.path.exists(f"/var/log/frr/{vr}.log"), "the VR's FRR logs"
    started = time.monotonic()
    assert vr_net.node_stop() == 0
    # Promptly: the daemons must take SIGTERM (pearld's blocked mask is not theirs).
    assert time.monotonic() - started < 5
    assert not os.path.exists(f"/var/log/frr/{vr}.log"), "PEARL's log of the VR goes with it"
    assert vr not in sh("ip", "netns", "list").stdout
    assert cgroups() == [], cgroups()
    assert daemons() == [], daemons()
    assert not os.path.exists(f"/var/run/frr/{vr}") and not os.path.exists(f"/etc/frr/{vr}")
    holders = subprocess.run(["pgrep", "-f", f"hold-taps {vr_net.api}"], capture_output=True, text=True).stdout
    assert holders == "", holders


def static_conf(*prefixes):
    return "".join(f"ip route {p} 10.2.0.2\n" for p in prefixes)


def test_a_running_vrs_frr_configuration_and_cpu_limit_change_in_place(vr_net, bin_dir, tmp_path):
    """A new CPU limit reaches the VR's cgroup and leaves its daemons alone, even with their
    file edited meanwhile; setting the control plane again restarts them with what the file
    holds now (staticd's routes follow); a configuration FRR refuses is refused whole, the
    daemons running on."""
    vr = vr_net.vr
    conf = tmp_path / "frr-static.conf"
    conf.write_text(static_conf("198.51.100.0/24"))
    vr_net.start_pearld(bin_dir, vr_config(vr, conf, ["staticd"]), tmp_path)
    routes = lambda: in_vr(vr_net, "ip", "route", "show").stdout  # noqa: E731
    staticd = lambda: subprocess.run(["pgrep", "-f", "--", f"staticd .*-N {vr}( |$)"],  # noqa: E731
                                     capture_output=True, text=True).stdout.split()
    wait_until("staticd's first route", 30, lambda: "198.51.100.0/24" in routes())
    first = staticd()
    assert len(first) == 1, first
    ctl = ["ip", "netns", "exec", vr_net.router, str(bin_dir / "pearlctl"), "--socket", str(vr_net.api)]

    def set_vr(*words):
        return subprocess.run([*ctl, "vr", "set", vr, *words], capture_output=True, text=True, timeout=60)

    conf.write_text(static_conf("203.0.113.0/24"))
    assert set_vr("limits.cpu_percent=25").returncode == 0
    quotas = []
    for d in subprocess.run(["find", "/sys/fs/cgroup", "-type", "d", "-name", vr], capture_output=True, text=True).stdout.split():
        for f, want in (("cpu.max", "25000 100000"), ("cpu.cfs_quota_us", "25000")):
            if os.path.exists(f"{d}/{f}"):
                quotas.append(open(f"{d}/{f}").read().strip() == want)
    assert quotas and all(quotas), quotas
    assert staticd() == first and "198.51.100.0/24" in routes(), "another change left the edited file unapplied"

    done = set_vr(f"control_plane={{frr: {{daemons: [zebra, staticd], config: {conf}}}}}")
    assert done.returncode == 0, done.stderr
    wait_until("staticd's new route", 30, lambda: "203.0.113.0/24" in routes() and "198.51.100.0/24" not in routes())
    second = staticd()
    assert len(second) == 1 and second != first, (first, second)

    bad = tmp_path / "frr-bad.conf"
    bad.write_text("ip route not-a-prefix 10.2.0.2\n")
    done = set_vr(f"control_plane={{frr: {{daemons: [zebra, staticd], config: {bad}}}}}")
    assert done.returncode == 1 and "control_plane" in done.stderr, (done.returncode, done.stderr)
    assert staticd() == second and "203.0.113.0/24" in routes()
    shown = json.loads(subprocess.run([*ctl, "vr", "show", vr, "--json"], capture_output=True, text=True).stdout)
    assert shown["control_plane"]["frr"]["config"] == str(conf), "the refused change left the VR as it was"
