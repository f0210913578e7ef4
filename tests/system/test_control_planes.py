"""Control planes other than FRR: BIRD 2 (`control_plane: {bird: {config: FILE}}`) and an owner's
own program (`control_plane: {command: [prog, args...]}`), supervised by pearld like FRR.

The BGP test runs two fast VRs in one pearld, joined by a veth pair between two of its ports:
VR `<p>bi` runs BIRD (AS 65001) with host a behind it, VR `<p>fr` runs FRR (AS 65002) with host
b behind it. Each announces the LAN behind its host; the session and the routes cross PEARL, and
the hosts' LANs reach each other through both fast paths."""

import json
import os
import pathlib
import signal
import subprocess
import time

import pytest

from frr_host import FrrView, rx_packets, spray, wait_until
from netns import Network, sh

BIRD_MACS = ("02:00:00:00:0b:00", "02:00:00:00:0b:01")
FRR_MACS = ("02:00:00:00:0f:00", "02:00:00:00:0f:01")
NET_A, HOST_A_LAN = "203.0.113.0/24", "203.0.113.1"  # behind host a, announced by BIRD
NET_B, HOST_B_LAN = "198.51.100.0/24", "198.51.100.1"  # behind host b, announced by FRR


def bird_conf():
    return f"""
router id 10.9.0.1;
protocol device {{ scan time 2; }}
protocol direct {{ ipv4; interface "eth0"; }}
protocol kernel {{ ipv4 {{ export where source != RTS_DEVICE; }}; }}
protocol static {{ ipv4; route {NET_A} via 10.1.0.2; }}
protocol bgp frr {{
  local 10.9.0.1 as 65001;
  neighbor 10.9.0.2 as 65002;
  hold time 9;
  connect retry time 1;
  ipv4 {{ import all; export all; }};
}}
"""


FRR_CONF = f"""ip route {NET_B} 10.2.0.2
router bgp 65002
 bgp router-id 10.9.0.2
 no bgp ebgp-requires-policy
 neighbor 10.9.0.1 remote-as 65001
 neighbor 10.9.0.1 timers 3 9
 neighbor 10.9.0.1 timers connect 1
 address-family ipv4 unicast
  redistribute static
  redistribute connected
 exit-address-family
exit
"""


def lan_behind(ns, address):
    """`address`/24 on a veth pair inside host `ns` (this kernel has no dummy interfaces)."""
    sh("ip", "link", "add", "lan0", "type", "veth", "peer", "name", "lan1", ns=ns)
    sh("ip", "addr", "add", f"{address}/24", "dev", "lan0", ns=ns)
    for dev in ("lan0", "lan1"):
        sh("ip", "link", "set", dev, "up", ns=ns)


def remove_leftovers(*vrs):
    """What pearld may leave behind if a test fails half-way."""
    for vr in vrs:
        sh("pkill", "-9", "-f", "--", f"/run/pearl/bird/{vr}/", check=False)
        sh("pkill", "-9", "-f", "--", f"-N {vr}( |$)", check=False)
        sh("ip", "netns", "del", vr, check=False)
        for d in (f"/etc/frr/{vr}", f"/var/run/frr/{vr}", f"/run/pearl/bird/{vr}", f"/run/pearl/command/{vr}"):
            sh("rm", "-rf", d, check=False)


@pytest.fixture
def rig():
    prefix = f"cp{os.getpid() % 100000}"
    n = Network(prefix)
    n.bird, n.frr = f"{prefix}bi", f"{prefix}fr"
    try:
        n.host("a", "pa", "02:aa:00:00:00:01", addrs=("10.1.0.2/24",), routes=("route add default via 10.1.0.1",))
        n.host("b", "pb", "02:aa:00:00:00:02", addrs=("10.2.0.2/24",), routes=("route add default via 10.2.0.1",))
        lan_behind(n.hosts["a"], HOST_A_LAN)
        lan_behind(n.hosts["b"], HOST_B_LAN)
        # The link between the two VRs: a veth pair whose ends are both pearld ports.
        sh("ip", "link", "add", "x0", "type", "veth", "peer", "name", "x1", ns=n.router)
        for dev in ("x0", "x1"):
            sh("ip", "link", "set", dev, "up", ns=n.router)
        yield n
    finally:
        n.close()
        remove_leftovers(n.bird, n.frr)


def gone(pid):
    """The process has ended: no longer there, or a zombie its new parent has not reaped yet
    (a daemon adopted from a killed pearld is init's child)."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def two_vr_config(rig, bird_file, frr_file):
    return f"""
ports:
  - {{name: pa, interface: pa, driver: af_packet}}
  - {{name: pb, interface: pb, driver: af_packet}}
  - {{name: x0, interface: x0, driver: af_packet}}
  - {{name: x1, interface: x1, driver: af_packet}}
vrs:
  - name: {rig.bird}
    interfaces:
      - {{name: eth0, port: pa, mac: "{BIRD_MACS[0]}", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: x0, mac: "{BIRD_MACS[1]}", addresses: [10.9.0.1/30]}}
    control_plane: {{bird: {{config: {bird_file}}}}}
  - name: {rig.frr}
    interfaces:
      - {{name: eth0, port: pb, mac: "{FRR_MACS[0]}", addresses: [10.2.0.1/24]}}
      - {{name: eth1, port: x1, mac: "{FRR_MACS[1]}", addresses: [10.9.0.2/30]}}
    control_plane: {{frr: {{daemons: [staticd, bgpd], config: {frr_file}}}}}
"""


def ctl(rig, bin_dir, *args, check=True):
    return subprocess.run(["ip", "netns", "exec", rig.router, str(bin_dir / "pearlctl"), "--socket", str(rig.api),
                           *map(str, args)], capture_output=True, text=True, timeout=30, check=check)


def vr_stats(rig, name):
    return next(v for v in rig.stats()["vrs"] if v["name"] == name)


def birdc(rig, bin_dir, socket, *command):
    """birdc as the README says to run it: in the VR, through pearlctl exec."""
    return ctl(rig, bin_dir, "exec", rig.bird, "--", "birdc", "-s", socket, *command).stdout


def bird_session(rig, bin_dir, socket):
    """The `frr` protocol's line of `birdc show protocols`: name, proto, table, state, since, info."""
    line = next((ln for ln in birdc(rig, bin_dir, socket, "show", "protocols").splitlines() if ln.startswith("frr ")), "")
    return line.split()


def start_two_vrs(rig, bin_dir, tmp_path):
    (tmp_path / "bird.conf").write_text(bird_conf())
    (tmp_path / "frr.conf").write_text(FRR_CONF)
    text = two_vr_config(rig, "bird.conf", "frr.conf")
    rig.start_pearld(bin_dir, text, tmp_path)
    shown = json.loads(ctl(rig, bin_dir, "vr", "show", rig.bird, "--json").stdout)
    socket = shown["control_plane"]["bird"]["socket"]
    assert shown["control_plane"]["bird"]["config"] == str(tmp_path / "bird.conf"), shown["control_plane"]
    wait_until("BGP Established between the BIRD VR and the FRR VR", 60,
               lambda: "Established" in bird_session(rig, bin_dir, socket))
    assert FrrView(rig.frr).bgp_peer("10.9.0.1").get("state") == "Established"
    wait_until(f"{NET_B} learned by BIRD, in its VR's kernel", 30,
               lambda: NET_B in sh("ip", "route", "show", "proto", "bird", ns=rig.bird).stdout)
    wait_until(f"{NET_A} learned by FRR, in its VR's kernel", 30,
               lambda: NET_A in sh("ip", "route", "show", "proto", "bgp", ns=rig.frr).stdout)
    return text, socket


def test_bgp_between_a_bird_vr_and_an_frr_vr_puts_both_prefixes_in_both_fast_paths(rig, bin_dir, tmp_path):
    start_two_vrs(rig, bin_dir, tmp_path)
    # Each fast path carries its own static route and the one learned over BGP.
    for vr in (rig.bird, rig.frr):
        wait_until(f"two more routes in {vr}'s fast path", 10, lambda vr=vr: vr_stats(rig, vr)["routed"]["routes_v4"] >= 2)
    sh("ping", "-c", "2", "-W", "2", "-I", HOST_B_LAN, HOST_A_LAN, ns=rig.hosts["b"])  # neighbours resolved
    before = {vr: vr_stats(rig, vr) for vr in (rig.bird, rig.frr)}
    arrived = rx_packets(rig.hosts["a"])
    count = 200
    spray(rig.hosts["b"], "eth0", "02:aa:00:00:00:02", FRR_MACS[0], HOST_B_LAN, HOST_A_LAN, count, step=0, rate_pps=1000)
    wait_until("the frames at host a, through both VRs", 10, lambda: rx_packets(rig.hosts["a"]) - arrived >= count)
    for vr in (rig.bird, rig.frr):
        after = vr_stats(rig, vr)
        assert after["forwarded_packets"] - before[vr]["forwarded_packets"] >= count, (vr, before[vr], after)
        to_kernel = after["slow_path"]["to_kernel_packets"] - before[vr]["slow_path"]["to_kernel_packets"]
        assert to_kernel < count // 10, f"{vr}: {to_kernel} of {count} transit frames took the slow path"
    # And back the other way, with the hosts' own stacks.
    sh("ping", "-c", "3", "-i", "0.2", "-W", "2", "-I", HOST_A_LAN, HOST_B_LAN, ns=rig.hosts["a"])
    # Each VR's health names its BGP session as its own suite reports it (issue 53).
    bird = wait_until("the BIRD VR's session in vr show", 30, lambda: (lambda h: h["sessions_up"] and h)(
        json.loads(ctl(rig, bin_dir, "vr", "show", rig.bird, "--json").stdout)["health"]))
    assert bird["sessions"] == [{"protocol": "bgp", "peer": "frr", "state": "Established", "up": True}], bird
    assert (bird["daemons_running"], bird["daemons"], bird["routed_in_sync"]) == (1, 1, True), bird
    frr = wait_until("the FRR VR's session in vr show", 30, lambda: (lambda h: h["sessions_up"] and h)(
        json.loads(ctl(rig, bin_dir, "vr", "show", rig.frr, "--json").stdout)["health"]))
    assert [(s["protocol"], s["peer"], s["state"]) for s in frr["sessions"]] == [("bgp", "10.9.0.1", "Established")], frr
    assert frr["sessions"][0]["prefixes_received"] >= 1, frr
    assert "    bgp frr: Established (up)\n" in ctl(rig, bin_dir, "vr", "show", rig.bird).stdout
    # Each VR's shell reaches its own daemons with no socket or pathspace given (issue 53).
    assert "frr " in ctl(rig, bin_dir, "exec", rig.bird, "--", "birdc", "show", "protocols").stdout
    assert "bgp" in ctl(rig, bin_dir, "exec", rig.frr, "vtysh", "-c", "show bgp summary").stdout.lower()


def test_bird_is_restarted_when_it_dies_and_readopted_across_a_killed_pearld(rig, bin_dir, tmp_path):
    text, socket = start_two_vrs(rig, bin_dir, tmp_path)
    pid_file = pathlib.Path(socket).parent / "bird.pid"
    bird = int(pid_file.read_text())
    assert pathlib.Path(f"/proc/{bird}/ns/net").stat().st_ino == pathlib.Path(f"/run/netns/{rig.bird}").stat().st_ino
    assert rig.bird in pathlib.Path(f"/proc/{bird}/cgroup").read_text(), "BIRD runs in the VR's cgroup"

    os.kill(bird, signal.SIGKILL)
    restarted = wait_until("a new bird", 10, lambda: pid_file.exists() and int(pid_file.read_text() or 0) not in (0, bird)
                           and int(pid_file.read_text()))
    wait_until("BGP Established again after the restart", 60, lambda: "Established" in bird_session(rig, bin_dir, socket))
    session = bird_session(rig, bin_dir, socket)

    rig.pearld.kill()
    rig.pearld.wait(timeout=10)
    rig.start_pearld(bin_dir, text, tmp_path)
    assert int(pid_file.read_text()) == restarted, "bird was re-adopted, not restarted"
    time.sleep(1)
    assert bird_session(rig, bin_dir, socket)[3:5] == session[3:5], "the session was kept (same state, same since)"
    log = (tmp_path / "pearld.log").read_text()
    assert "re-adopted its running bird daemons" in log, log

    assert rig.node_stop() == 0
    assert gone(restarted), "bird stopped with its VR"
    assert not pathlib.Path(socket).parent.exists(), "its run directory removed"


def test_a_bird_configuration_that_does_not_parse_is_refused_before_anything_starts(rig, bin_dir, tmp_path):
    (tmp_path / "bird.conf").write_text("protocol bgp {\n  local as 65001;\n  neighbour 10.9.0.2 as;\n}\n")
    (tmp_path / "frr.conf").write_text(FRR_CONF)
    cfg = tmp_path / "pearl.yaml"
    cfg.write_text(two_vr_config(rig, "bird.conf", "frr.conf"))
    done = subprocess.run(["ip", "netns", "exec", rig.router, str(bin_dir / "pearld"), "--config", str(cfg),
                           "--api", str(tmp_path / "api.sock")], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "control_plane.bird" in done.stderr and "bird -p" in done.stderr and "bird.conf:3" in done.stderr, done.stderr
    assert not pathlib.Path(f"/run/netns/{rig.bird}").exists() and not pathlib.Path(f"/run/netns/{rig.frr}").exists()


# --- an owner's own program -------------------------------------------------------------------

SPEAKER = """#!/bin/sh
# A stand-in for a researcher's routing daemon: it installs its route, then runs until stopped.
echo "speaker started in $(pwd) for $PEARL_VR with $*"
ip route replace 192.0.2.0/24 via 10.1.0.2
exec sleep 3600
"""


def one_vr_with(rig, control_plane):
    return f"""
ports:
  - {{name: pa, interface: pa, driver: af_packet}}
  - {{name: pb, interface: pb, driver: af_packet}}
vrs:
  - name: {rig.bird}
    interfaces:
      - {{name: eth0, port: pa, mac: "{BIRD_MACS[0]}", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: pb, mac: "{BIRD_MACS[1]}", addresses: [10.2.0.1/24]}}
    control_plane: {control_plane}
"""


def command_pid(rig):
    pid_file = pathlib.Path(f"/run/pearl/command/{rig.bird}/speaker.sh.pid")
    return int(pid_file.read_text()) if pid_file.exists() else None


def test_an_owners_program_runs_in_the_vr_its_route_is_forwarded_and_it_is_restarted(rig, bin_dir, tmp_path):
    script = tmp_path / "speaker.sh"
    script.write_text(SPEAKER)
    script.chmod(0o755)
    rig.start_pearld(bin_dir, one_vr_with(rig, "{command: [./speaker.sh, --as, 65001]}"), tmp_path)
    shown = json.loads(ctl(rig, bin_dir, "vr", "show", rig.bird, "--json").stdout)
    assert shown["control_plane"] == {"command": [str(tmp_path / "speaker.sh"), "--as", "65001"]}, shown
    [process] = shown["processes"]
    assert (process["name"], process["running"], process["restarts"]) == ("speaker.sh", True, 0), process
    first = wait_until("the program's pid file", 10, lambda: command_pid(rig))
    assert pathlib.Path(f"/proc/{first}/ns/net").stat().st_ino == pathlib.Path(f"/run/netns/{rig.bird}").stat().st_ino
    assert rig.bird in pathlib.Path(f"/proc/{first}/cgroup").read_text(), "it runs in the VR's cgroup"
    log = pathlib.Path(f"/var/log/pearl/{rig.bird}.command.log")
    wait_until("its greeting in its log", 10, lambda: log.exists() and f"in {tmp_path} for {rig.bird} with --as 65001"
               in log.read_text())

    # The route it installed in the VR's kernel carries traffic on the fast path.
    wait_until("192.0.2.0/24 in the fast path", 10, lambda: vr_stats(rig, rig.bird)["routed"]["routes_v4"] >= 1)
    sh("ip", "addr", "add", "192.0.2.1/32", "dev", "lo", ns=rig.hosts["a"])
    sh("ping", "-c", "2", "-W", "2", "192.0.2.1", ns=rig.hosts["b"])
    before = vr_stats(rig, rig.bird)["forwarded_packets"]
    sh("ping", "-c", "5", "-i", "0.1", "-W", "2", "192.0.2.1", ns=rig.hosts["b"])
    assert vr_stats(rig, rig.bird)["forwarded_packets"] - before >= 10

    os.kill(first, signal.SIGKILL)
    second = wait_until("the program restarted", 10, lambda: command_pid(rig) not in (None, first) and command_pid(rig))
    assert pathlib.Path(f"/proc/{second}").exists()
    assert rig.node_stop() == 0
    assert gone(second), "the program stopped with its VR"


def test_a_command_that_cannot_run_is_refused_naming_the_field(rig, bin_dir, tmp_path):
    script = tmp_path / "speaker.sh"
    script.write_text(SPEAKER)  # not executable
    for control_plane, want in (("{command: [./speaker.sh]}", "control_plane.command[0]"),
                                ("{command: [pearl-no-such-daemon]}", 'no program "pearl-no-such-daemon" in PATH')):
        cfg = tmp_path / "pearl.yaml"
        cfg.write_text(one_vr_with(rig, control_plane))
        done = subprocess.run(["ip", "netns", "exec", rig.router, str(bin_dir / "pearld"), "--config", str(cfg),
                               "--api", str(tmp_path / "api.sock")], capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and want in done.stderr, done.stderr
        assert not pathlib.Path(f"/run/netns/{rig.bird}").exists()
