"""Faults a node meets (issue 16, item 7): a port's interface deleted under traffic stops that
port alone (logged, no CPU spent on it) and the port runs again when an interface of that name is
back; a VR's control plane that dies as soon as it starts is restarted with a growing back-off,
not in a storm, and `vr show` says how often; the disk holding `--state` full: a change is
refused with an error saying so, and what runs stays as it was until there is room again."""

import json
import os
import pathlib
import re
import subprocess
import threading
import time

import pytest

from frr_host import rx_packets, spray, wait_until
from netns import one_vr, sh, two_hosts

CRASHER = "exit 3"


def config(vr, control_plane=""):
    return one_vr(vr) + (f"    {control_plane}\n" if control_plane else "")


@pytest.fixture
def net():
    n = two_hosts(f"tf{os.getpid() % 100000}")
    n.vr = f"{n.prefix}v"
    try:
        yield n
    finally:
        n.close()


def ctl(bin_dir, net, *args):
    return subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), *args], capture_output=True, text=True, timeout=30)


def shown(bin_dir, net):
    done = ctl(bin_dir, net, "vr", "show", net.vr, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_control_plane_that_keeps_dying_is_restarted_with_a_growing_back_off(net, bin_dir, tmp_path):
    net.start_pearld(bin_dir, config(net.vr, f'control_plane: {{command: [sh, -c, "{CRASHER}"]}}'), tmp_path)
    start = time.monotonic()
    time.sleep(7)
    processes = shown(bin_dir, net)["processes"]
    elapsed = time.monotonic() - start
    assert [p["name"] for p in processes] == ["sh"], processes
    # 0.1 s, then twice as long each time: 6 restarts in 6.3 s; a restart storm would be hundreds.
    assert 3 <= processes[0]["restarts"] <= 8, (processes, elapsed)
    log = (tmp_path / "pearld.log").read_text()
    waits = [float(n) / (1000 if unit == "ms" else 1) for n, unit in re.findall(r"restarting in ([0-9.]+)(ms|s)\b", log)]
    assert len(waits) >= 3 and all(b > a for a, b in zip(waits, waits[1:])), log
    assert net.pearld.poll() is None


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs for --state, so that it can be filled."""
    state = tmp_path / "state"
    state.mkdir()
    sh("mount", "-t", "tmpfs", "-o", "size=1m", "pearl-test-state", str(state))
    try:
        yield state
    finally:
        sh("umount", "-l", str(state), check=False)


def test_a_change_with_the_state_disk_full_is_refused_and_changes_nothing(net, bin_dir, tmp_path, small_disk):
    net.start_pearld(bin_dir, config(net.vr), tmp_path, extra_args=("--state", small_disk))
    before = shown(bin_dir, net)
    filler = small_disk / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
    refused = ctl(bin_dir, net, "vr", "set", net.vr, "limits.rate_mbps=100")
    assert refused.returncode == 1, refused
    assert "cannot be stored" in refused.stderr and "No space left" in refused.stderr, refused.stderr
    assert shown(bin_dir, net) == before, "a refused change leaves the running VR as it was"
    sh("ping", "-c", "2", "-W", "2", "10.2.0.2", ns=net.hosts["a"])
    filler.unlink()
    done = ctl(bin_dir, net, "vr", "set", net.vr, "limits.rate_mbps=100")
    assert done.returncode == 0, done.stderr
    assert shown(bin_dir, net)["limits"]["rate_mbps"] == 100


THREE_PORTS = """
ports:
  - {{name: p0, interface: p0, driver: af_packet}}
  - {{name: p1, interface: p1, driver: af_packet}}
  - {{name: p2, interface: p2, driver: af_packet}}
vrs:
  - name: {vr}
    interfaces:
      - {{name: eth0, port: p0, mac: "02:00:00:00:01:00", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: p1, mac: "02:00:00:00:01:01", addresses: [10.2.0.1/24]}}
      - {{name: eth2, port: p2, mac: "02:00:00:00:01:02", addresses: [10.3.0.1/24]}}
"""


def cpu_seconds(pid):
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cable_b(net):
    """Host b on port p1, as `Network.host` cabled it."""
    sh("ip", "link", "add", "p1", "netns", net.router, "type", "veth", "peer", "name", "eth0", "netns", net.hosts["b"])
    sh("ip", "link", "set", "eth0", "address", "02:aa:00:00:00:02", ns=net.hosts["b"])
    sh("ip", "addr", "add", "10.2.0.2/24", "dev", "eth0", ns=net.hosts["b"])
    for ns, dev in ((net.hosts["b"], "eth0"), (net.router, "p1")):
        sh("ip", "link", "set", dev, "up", ns=ns)
    sh("ip", "route", "add", "default", "via", "10.2.0.1", ns=net.hosts["b"])


def test_a_ports_interface_deleted_under_traffic_stops_that_port_alone_and_it_comes_back(bin_dir, tmp_path):
    net = two_hosts(f"tp{os.getpid() % 100000}")
    vr = f"{net.prefix}v"
    try:
        net.host("c", "p2", "02:aa:00:00:00:03", addrs=("10.3.0.2/24",), routes=("route add default via 10.3.0.1",))
        net.start_pearld(bin_dir, THREE_PORTS.format(vr=vr), tmp_path)
        sh("ping", "-c", "2", "-W", "2", "10.3.0.2", ns=net.hosts["a"])
        sh("ping", "-c", "2", "-W", "2", "10.2.0.2", ns=net.hosts["a"])
        pid = net.pearld.pid  # `ip netns exec` execs pearld: the same process
        arrived = rx_packets(net.hosts["c"])
        count = 4000
        traffic = threading.Thread(target=spray, args=(net.hosts["a"], "eth0", "02:aa:00:00:00:01", "02:00:00:00:01:00",
                                                       "10.1.0.2", "10.3.0.2", count), kwargs={"step": 0, "rate_pps": 1000})
        traffic.start()
        time.sleep(1)
        sh("ip", "link", "del", "p1", ns=net.router)
        time.sleep(0.5)
        cpu = cpu_seconds(pid)
        time.sleep(2)
        busy = (cpu_seconds(pid) - cpu) / 2
        traffic.join()
        wait_until("a's traffic at c throughout", 5, lambda: rx_packets(net.hosts["c"]) - arrived >= count)
        assert busy < 0.5, f"pearld busy {busy:.0%} of a CPU with a port gone: it must not spin on the dead socket"
        log = tmp_path / "pearld.log"
        assert "ports[1] (p1): the interface is gone" in log.read_text(), log.read_text()
        assert re.search(r"^pearld: warning: worker \d+: ports\[1\] \(p1\)", log.read_text(), re.M), "logged as a warning"
        cable_b(net)
        wait_until("the port back", 5, lambda: "ports[1] (p1): the interface is back" in log.read_text())
        sh("ping", "-c", "3", "-i", "0.2", "-W", "2", "10.2.0.2", ns=net.hosts["a"])
        assert net.pearld.poll() is None
    finally:
        net.close()
