"""Faults a node meets (issue 16, item 7): a VR's control plane that dies as soon as it starts
is restarted with a growing back-off, not in a storm, and `vr show` says how often; the disk
holding `--state` full: a change is refused with an error saying so, and what runs stays as it
was until there is room again."""

import json
import os
import re
import subprocess
import time

import pytest

from netns import sh, two_hosts

CRASHER = "exit 3"


def config(vr, control_plane=""):
    return f"""
ports:
  - {{name: p0, interface: p0, driver: af_packet}}
  - {{name: p1, interface: p1, driver: af_packet}}
vrs:
  - name: {vr}
    interfaces:
      - {{name: eth0, port: p0, mac: "02:00:00:00:01:00", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: p1, mac: "02:00:00:00:01:01", addresses: [10.2.0.1/24]}}
    {control_plane}
"""


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
