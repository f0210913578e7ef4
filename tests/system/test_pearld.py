"""pearld as an operator meets it: a bad configuration is refused whole, naming the field,
before anything is created; a good one runs until `pearlctl node stop` and stops cleanly; pearlctl reads
its live counters."""

import json
import os
import subprocess
import time

import pytest

from netns import Network

# VR namespaces are global: a name of this test's own.
VR = f"pd{os.getpid() % 100000}red"

GOOD = """
ports:
  - {name: p0, interface: q0, driver: af_packet}
  - {name: p1, interface: q1, driver: af_packet}
vrs:
  - name: VRNAME
    interfaces:
      - {name: eth0, port: p0, mac: "02:00:00:00:01:00", addresses: [10.1.0.1/24]}
      - {name: eth1, port: p1, mac: "02:00:00:00:01:01", addresses: [10.2.0.1/24]}
""".replace("VRNAME", VR)


def netns_names():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def run_pearld(bin_dir, tmp_path, text, ns=None):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    cmd = [str(bin_dir / "pearld"), "--config", str(cfg), "--api", str(tmp_path / "s.sock")]
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("change, field", [
    (('mac: "02:00:00:00:01:01"', 'mac: "02:00:00:00:01:00"'), "vrs[0].interfaces[1].mac: duplicate of vrs[0].interfaces[0].mac"),
    (("port: p1", "port: p7"), 'vrs[0].interfaces[1].port: unknown port "p7"'),
    (("10.2.0.1/24", "10.2.0.1/99"), "vrs[0].interfaces[1].addresses[0]"),
    ((f"name: {VR}", f"name: {VR}\n    kind: plugin"), "vrs[0].plugin: a plugin VR needs its program"),
    ((f"name: {VR}", f"name: {VR}\n    kind: plugin\n    plugin: {{wasm: /proc/version}}"), "vrs[0].plugin.wasm: does not compile"),
    (("interface: q0, driver: af_packet", "interface: q0, driver: memory"), "ports[0].driver: memory ports exist only inside"),
    (("ports:", "workers: 2\nports:\n  - {name: t0, interface: t0, driver: tap}"), "workers: ports[0] (Tap) cannot be shared"),
])
def test_a_bad_config_is_refused_naming_the_field_and_creates_nothing(bin_dir, tmp_path, change, field):
    done = run_pearld(bin_dir, tmp_path, GOOD.replace(*change))
    assert done.returncode == 2
    assert field in done.stderr, done.stderr
    assert not (tmp_path / "s.sock").exists(), "nothing may be created for a refused config"


def test_a_missing_interface_is_reported_and_pearld_exits(bin_dir, tmp_path):
    n = Network(f"tp{os.getpid() % 100000}")
    try:
        done = run_pearld(bin_dir, tmp_path, GOOD, ns=n.router)
        assert done.returncode == 2
        assert "ports[0]" in done.stderr and "q0" in done.stderr, done.stderr
        assert VR not in netns_names(), "a refused start leaves no VR namespace behind"
    finally:
        n.close()


def test_runs_until_sigterm_and_pearlctl_reads_live_stats(bin_dir, tmp_path):
    n = Network(f"tq{os.getpid() % 100000}")
    try:
        n.host("a", "q0", "02:aa:00:00:00:01", addrs=("10.1.0.2/24",))
        n.host("b", "q1", "02:aa:00:00:00:02", addrs=("10.2.0.2/24",))
        proc = n.start_pearld(bin_dir, GOOD, tmp_path)
        out = subprocess.run(["ip", "netns", "exec", n.router, str(bin_dir / "pearlctl"), "--socket", str(n.api),
                              "stats", "--json"], capture_output=True, text=True, timeout=10)
        assert out.returncode == 0, out.stderr
        stats = json.loads(out.stdout)
        assert [p["name"] for p in stats["ports"]] == ["p0", "p1"]
        assert stats["vrs"][0]["name"] == VR and stats["vrs"][0]["queues"], stats
        human = subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(n.api), "stats"],
                               capture_output=True, text=True, timeout=10)
        assert VR in human.stdout and "p1" in human.stdout
        assert n.node_stop() == 0
        assert not n.api.exists(), "the API socket is removed on exit"
        assert VR not in netns_names(), "`pearlctl node stop` removes the VR's namespace"
        gone = subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(n.api), "stats"],
                              capture_output=True, text=True, timeout=10)
        assert gone.returncode == 1 and "cannot reach pearld" in gone.stderr
    finally:
        n.close()
