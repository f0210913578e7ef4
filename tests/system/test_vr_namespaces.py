"""A VR created at run time gets a namespace pearld made ahead of need (unnamed until then),
which nobody can tell from one made by `ip netns add`: the same kernel settings as the VR made
at start, `ip netns list`, `exec` and `identify` see it, and it is gone after DELETE and after a
clean stop. pearld killed with SIGKILL leaves the named VR namespaces alone (the next pearld
re-adopts them) and nothing else: the spare namespaces die with it."""

import os
import pathlib
import re
import signal
import time

from netns import sh
from test_runtime import Rig, config, vr_spec
from test_slow_path import netns_names

# What pearld sets in every VR's kernel, and what the kernel derives per device.
SETTINGS = ("/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv4/conf", "/proc/sys/net/ipv6/conf")


def settings(ns):
    """Every readable setting under SETTINGS in namespace `ns`, as `path:value` lines."""
    out = sh("ip", "netns", "exec", ns, "grep", "-r", ".", *SETTINGS, check=False).stdout
    return sorted(line for line in out.splitlines() if "stable_secret" not in line)


def mount_of(path):
    """Its file system type and propagation, peer group numbers left out."""
    line = next(l for l in pathlib.Path("/proc/self/mountinfo").read_text().splitlines() if l.split()[4] == path)
    fields = line.split()
    optional = fields[6:fields.index("-")]
    return fields[fields.index("-") + 1], sorted(re.sub(r":\d+", "", o) for o in optional)


def net_namespaces_in_use():
    """The inodes of every network namespace a process is in or holds a descriptor of."""
    found = set()
    for proc in pathlib.Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        links = [proc / "ns" / "net"]
        try:
            links += list((proc / "fd").iterdir())
        except OSError:
            continue
        for link in links:
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if target.startswith("net:["):
                found.add(int(target[5:-1]))
    return found


def test_a_vr_created_at_run_time_gets_a_namespace_like_any_other(bin_dir, tmp_path):
    rig = Rig("nm")
    try:
        rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a")]))
        time.sleep(0.5)  # the spares are made
        made = rig.ctl(bin_dir, "vr", "create", "-f", rig.write_spec(rig.b, vr_spec(rig.b, "b")))
        assert made.returncode == 0, made.stderr

        assert rig.b in netns_names()
        assert sh("ip", "netns", "exec", rig.b, "ip", "netns", "identify").stdout.strip() == rig.b
        assert settings(rig.b) == settings(rig.a) and any("ip_forward:1" in s for s in settings(rig.b))
        assert mount_of(f"/run/netns/{rig.b}") == mount_of(f"/run/netns/{rig.a}")
        assert "shared" in mount_of("/run/netns")[1], "/run/netns is shared, as `ip netns add` leaves it"
        lo = sh("ip", "-n", rig.b, "-o", "link", "show", "lo").stdout
        assert "UP" in lo, lo
        rig.wait_ping("c", "10.2.0.2")

        assert rig.ctl(bin_dir, "vr", "delete", rig.b).returncode == 0
        assert rig.b not in netns_names() and not os.path.exists(f"/run/netns/{rig.b}")

        # Created again (from the refilled pool), then pearld killed: the VR keeps its
        # namespace for the next pearld, the spares die with pearld.
        assert rig.ctl(bin_dir, "vr", "create", "-f", rig.write_spec(rig.b, vr_spec(rig.b, "b"))).returncode == 0
        named = {os.stat(f"/run/netns/{ns}").st_ino for ns in netns_names()}
        pid = rig.net.pearld.pid  # `ip netns exec` execs: this is pearld itself
        held = {int(os.readlink(fd)[5:-1]) for fd in pathlib.Path(f"/proc/{pid}/fd").iterdir()
                if os.readlink(fd).startswith("net:[")}
        spares = held - named
        assert spares, "pearld holds namespaces made ahead"
        rig.net.pearld.send_signal(signal.SIGKILL)
        rig.net.pearld.wait(timeout=10)
        assert {rig.a, rig.b} <= netns_names(), "a killed pearld's VRs keep their namespaces"
        deadline = time.time() + 5
        while spares & net_namespaces_in_use():
            assert time.time() < deadline, "the spare namespaces outlived pearld"
            time.sleep(0.1)

        rig.net.start_pearld(bin_dir, rig.text, tmp_path, extra_args=rig.args)
        rig.wait_ping("c", "10.2.0.2")
        assert rig.net.node_stop() == 0
        assert not {rig.a, rig.b} & netns_names()
        assert not [n for n in os.listdir("/run/netns") if n.startswith(f"{rig.net.prefix}-")], "no name is left behind"
    finally:
        rig.close()
