"""PEARL touches only what it made (issue 50): a VR named after a namespace PEARL did not make
(a lab host's) is refused whole, naming the field, at run time and at start, and the host keeps
its namespace, links and settings; a second pearld on an interface, state directory or API
socket that a first one holds is refused at start (the stored state: the same state directory
and configuration file), and the first keeps forwarding."""

import json
import os
import subprocess

from netns import sh, two_hosts
from test_slow_path import config, netns_names, ping


def ctl(net, bin_dir, *args):
    return subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), *args],
                          capture_output=True, text=True, timeout=60)


def host_state(ns):
    """What a user of the host would notice changed: its links and its forwarding switch."""
    links = json.loads(sh("ip", "-n", ns, "-j", "link", "show").stdout)
    forwarding = sh("cat", "/proc/sys/net/ipv4/ip_forward", ns=ns).stdout.strip()
    return sorted((link["ifname"], link["ifindex"]) for link in links), forwarding


def test_a_vr_named_after_a_host_namespace_is_refused_and_the_host_untouched(bin_dir, tmp_path):
    prefix = f"ow{os.getpid() % 100000}"
    n = two_hosts(prefix)
    try:
        n.start_pearld(bin_dir, config(f"{prefix}v"), tmp_path)
        host = n.hosts["b"]
        before = host_state(host)

        refused = ctl(n, bin_dir, "vr", "create", host, "--interface", "name=eth9,port=p0,mac=02:00:00:00:0e:10,address=10.9.0.1/24")
        assert refused.returncode != 0, refused.stdout
        assert "vrs[1].name" in refused.stderr and f"namespace {host} exists and is not PEARL's" in refused.stderr, refused.stderr
        assert host_state(host) == before, "the host's namespace is as it was"
        assert [v["name"] for v in json.loads(ctl(n, bin_dir, "vr", "list", "--json").stdout)["vrs"]] == [f"{prefix}v"]

        gone = ctl(n, bin_dir, "vr", "delete", host)
        assert gone.returncode == 3, gone.stderr
        assert host in netns_names() and host_state(host) == before, "deleting no VR of that name leaves the host alone"
        assert ping(n, "a", "10.2.0.2").returncode == 0, "the host still answers through the VR"
    finally:
        n.close()
    assert n.hosts["b"] not in netns_names()


def test_a_start_naming_a_foreign_namespace_is_refused_naming_the_vr(bin_dir, tmp_path):
    prefix = f"os{os.getpid() % 100000}"
    n = two_hosts(prefix)
    try:
        host = n.hosts["a"]
        before = host_state(host)
        cfg = tmp_path / "pearl.yaml"
        cfg.write_text(config(host))
        done = subprocess.run(["ip", "netns", "exec", n.router, str(bin_dir / "pearld"), "--config", str(cfg),
                               "--api", str(tmp_path / "api.sock"), "--state", str(tmp_path / "state")],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert "vrs[0].name" in done.stderr and f"namespace {host} exists and is not PEARL's" in done.stderr, done.stderr
        assert host_state(host) == before
    finally:
        n.close()


def second_pearld(n, bin_dir, tmp_path, text, api, state, cfg=None):
    if cfg is None:
        cfg = tmp_path / "second.yaml"
        cfg.write_text(text)
    return subprocess.run(["ip", "netns", "exec", n.router, str(bin_dir / "pearld"), "--config", str(cfg), "--api", str(api),
                           "--state", str(state)], capture_output=True, text=True, timeout=60)


def test_a_second_pearld_on_a_driven_interface_state_or_socket_is_refused_and_the_first_forwards(bin_dir, tmp_path):
    prefix = f"o2{os.getpid() % 100000}"
    n = two_hosts(prefix)
    try:
        (tmp_path / "first").mkdir()
        n.start_pearld(bin_dir, config(f"{prefix}v"), tmp_path / "first", extra_args=("--state", tmp_path / "first" / "state"))
        assert ping(n, "a", "10.2.0.2").returncode == 0
        other_vr = config(f"{prefix}w", macs=("02:00:00:00:02:00", "02:00:00:00:02:01"))

        on_port = second_pearld(n, bin_dir, tmp_path, other_vr, tmp_path / "second.sock", tmp_path / "second")
        assert on_port.returncode == 2, on_port.stderr
        assert "ports[0].interface: p0 is driven by another pearld" in on_port.stderr, on_port.stderr
        assert f"pid {n.pearld.pid}" in on_port.stderr, on_port.stderr

        no_ports = "ports: []\nvrs: []\n"
        # The same stored state: the same state directory and configuration file.
        on_state = second_pearld(n, bin_dir, tmp_path, None, tmp_path / "third.sock", tmp_path / "first" / "state",
                                 cfg=tmp_path / "first" / "pearl.yaml")
        assert on_state.returncode == 2 and "--state" in on_state.stderr and "another pearld" in on_state.stderr, on_state.stderr
        on_socket = second_pearld(n, bin_dir, tmp_path, no_ports, n.api, tmp_path / "fourth")
        assert on_socket.returncode == 2 and "--api" in on_socket.stderr and "another pearld" in on_socket.stderr, on_socket.stderr

        assert f"{prefix}w" not in netns_names(), "the refused pearld made nothing"
        assert n.pearld.poll() is None and n.api.exists(), "the first pearld runs on, its socket in place"
        assert ping(n, "a", "10.2.0.2").returncode == 0, "the first pearld still forwards"
        assert ctl(n, bin_dir, "vr", "list").returncode == 0
    finally:
        n.close()


XDP_PASS = "int prog(void *ctx) { return 2; }\n"


def test_a_port_another_program_has_an_xdp_program_on_is_refused_naming_it(bin_dir, tmp_path):
    """An XDP program of another's on a port's interface sees its frames first: pearld refuses
    the port (naming ports[N].interface) and leaves the program attached; with it detached,
    the same start runs."""
    prefix = f"ox{os.getpid() % 100000}"
    n = two_hosts(prefix)
    src, obj = tmp_path / "pass.c", tmp_path / "pass.o"
    src.write_text(XDP_PASS)
    sh("clang", "-O2", "-target", "bpf", "-c", src, "-o", obj)
    try:
        sh("ip", "link", "set", "dev", "p1", "xdpgeneric", "obj", obj, "sec", ".text", ns=n.router)
        cfg = tmp_path / "pearl.yaml"
        cfg.write_text(config(f"{prefix}v"))
        done = second_pearld(n, bin_dir, tmp_path, None, tmp_path / "api.sock", tmp_path / "state", cfg=cfg)
        assert done.returncode == 2, done.stderr
        assert "ports[1].interface: p1 is driven by another program: an XDP program" in done.stderr, done.stderr
        assert f"{prefix}v" not in netns_names(), "the refused pearld made nothing"
        assert "xdp" in json.loads(sh("ip", "-j", "-d", "link", "show", "dev", "p1", ns=n.router).stdout)[0], \
            "the other program's XDP stays attached"

        sh("ip", "link", "set", "dev", "p1", "xdpgeneric", "off", ns=n.router)
        n.start_pearld(bin_dir, config(f"{prefix}v"), tmp_path)
        assert ping(n, "a", "10.2.0.2").returncode == 0
    finally:
        n.close()
