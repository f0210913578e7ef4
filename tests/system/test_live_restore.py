"""Live restore (issue 50): SIGTERM (so `systemctl restart`) stops pearld but leaves every VR
running, its namespace, TAPs, cgroup and daemons; the next pearld adopts them and forwarding
resumes within a second, a BGP session through the VR never flaps; a VR the desired state no
longer has is removed by the next pearld; `pearlctl node stop` removes everything PEARL made."""

import json
import os
import signal
import subprocess
import threading
import time

from frr_host import FrrView, frr_bgp_config, prefixes, wait_until
from netns import holder_of, one_vr, owned_names, sh, two_hosts
from test_frr import bgp_speaker, vr_config, vr_net  # noqa: F401 (a fixture)
from test_slow_path import config, netns_names, ping

INTERVAL = 0.005


def ifindexes(ns):
    return {link["ifname"]: link["ifindex"] for link in json.loads(sh("ip", "-n", ns, "-j", "link", "show").stdout)}


def pinging(n, host, dst, seconds):
    """A ping every INTERVAL from `host` for `seconds`, as a process to wait for."""
    return subprocess.Popen(["ip", "netns", "exec", n.hosts[host], "ping", "-n", "-q", "-i", str(INTERVAL), "-W", "1",
                             "-w", str(seconds), dst], stdout=subprocess.PIPE, text=True)


def lost(ping_proc):
    out = ping_proc.communicate(timeout=60)[0]
    summary = next(line for line in out.splitlines() if "packets transmitted" in line)
    sent, received = int(summary.split()[0]), int(summary.split(",")[1].split()[0])
    return sent - received, sent


def test_sigterm_leaves_the_vr_running_and_the_next_pearld_adopts_it(bin_dir, tmp_path):
    prefix = f"lr{os.getpid() % 100000}"
    vr = f"{prefix}v"
    n = two_hosts(prefix)
    try:
        text = config(vr)
        n.start_pearld(bin_dir, text, tmp_path)
        assert ping(n, "a", "10.2.0.2").returncode == 0
        taps, holder = ifindexes(vr), holder_of(n.api)
        assert holder and owned_names(n.api) == [vr]

        flow = pinging(n, "a", "10.2.0.2", 6)
        time.sleep(1)
        n.pearld.send_signal(signal.SIGTERM)
        assert n.pearld.wait(timeout=10) == 0
        assert vr in netns_names() and ifindexes(vr) == taps, "the VR and its TAPs outlive a stopped pearld"
        assert holder_of(n.api) == holder
        n.start_pearld(bin_dir, text, tmp_path)
        missing, sent = lost(flow)
        gap = missing * INTERVAL
        print(f"live restore of a fast VR: {missing} of {sent} pings lost, a gap of about {gap:.3f} s")
        assert gap < 1.0, f"forwarding resumed after {gap:.2f} s"
        assert ifindexes(vr) == taps, "the TAPs were adopted, not made again"
        assert "re-made" not in (tmp_path / "pearld.log").read_text()

        assert n.node_stop() == 0
        assert vr not in netns_names(), "`pearlctl node stop` removes the VR"
        assert holder_of(n.api) is None, "and the TAP holder"
        assert owned_names(n.api) == []
    finally:
        n.close()


def test_a_start_that_fails_leaves_the_vrs_it_found_running(bin_dir, tmp_path):
    prefix = f"lf{os.getpid() % 100000}"
    vr = f"{prefix}v"
    n = two_hosts(prefix)
    try:
        text = config(vr)
        n.start_pearld(bin_dir, text, tmp_path)
        taps, holder = ifindexes(vr), holder_of(n.api)
        n.pearld.send_signal(signal.SIGTERM)
        assert n.pearld.wait(timeout=10) == 0
        # Valid, but more than the node has: refused by the starting node, after it found the VR.
        too_big = "node: {capacity: {bandwidth_mbps: 10}}\n" + text.replace("    kind: fast\n", "    kind: fast\n    resources: {bandwidth_mbps: 100}\n")
        cfg = tmp_path / "too-big.yaml"
        cfg.write_text(too_big)
        refused = subprocess.run(["ip", "netns", "exec", n.router, str(bin_dir / "pearld"), "--config", str(cfg), "--api", str(n.api)],
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2 and "bandwidth_mbps" in refused.stderr, refused.stderr
        assert vr in netns_names() and ifindexes(vr) == taps, "the VR it found runs on, its TAPs kept"
        assert holder_of(n.api) == holder
        n.start_pearld(bin_dir, text, tmp_path)
        assert ifindexes(vr) == taps
        assert ping(n, "a", "10.2.0.2").returncode == 0
    finally:
        n.close()


def test_a_vr_left_running_that_the_desired_state_dropped_is_removed_by_the_next_pearld(bin_dir, tmp_path):
    prefix = f"lo{os.getpid() % 100000}"
    keep, drop = f"{prefix}k", f"{prefix}d"
    n = two_hosts(prefix)
    try:
        conf = tmp_path / "frr.conf"
        conf.write_text(frr_bgp_config(65001, "10.5.0.1", [("10.5.0.2", 65002)]))
        second = f"""  - name: {drop}
    interfaces: [{{name: eth0, port: p0, mac: "02:00:00:00:05:00", addresses: [10.5.0.1/24]}}]
    control_plane: {{frr: {{daemons: [bgpd], config: {conf}}}}}
"""
        n.start_pearld(bin_dir, config(keep) + second, tmp_path)
        frr_files = [f"/etc/frr/{drop}", f"/var/run/frr/{drop}", f"/var/log/frr/{drop}.log"]
        assert all(os.path.exists(f) for f in frr_files)
        bgpd = int(open(f"/var/run/frr/{drop}/bgpd.pid").read())
        n.pearld.send_signal(signal.SIGTERM)
        assert n.pearld.wait(timeout=10) == 0
        assert {keep, drop} <= netns_names() and os.path.exists(f"/proc/{bgpd}")
        n.start_pearld(bin_dir, config(keep), tmp_path)
        assert drop not in netns_names(), "the VR no longer desired is removed"
        assert not [f for f in frr_files if os.path.exists(f)], "with its FRR's files and log"
        assert not os.path.exists(f"/proc/{bgpd}") or "zombie" in open(f"/proc/{bgpd}/status").read().lower()
        assert keep in netns_names() and owned_names(n.api) == [keep]
        assert ping(n, "a", "10.2.0.2").returncode == 0
    finally:
        n.close()
    assert not {keep, drop} & netns_names()


def test_a_bgp_session_through_a_vr_survives_a_restart(vr_net, bin_dir, tmp_path):  # noqa: F811
    conf = tmp_path / "vr-frr.conf"
    conf.write_text(frr_bgp_config(65001, "10.1.0.1", [("10.1.0.2", 65002)]))
    text = vr_config(vr_net.vr, conf, ["bgpd"])
    vr_net.start_pearld(bin_dir, text, tmp_path)
    vr_net.closers.append(bgp_speaker(vr_net.hosts["a"], prefixes(100)).close)
    vr_frr = FrrView(vr_net.vr)
    wait_until("the session established", 60, lambda: vr_frr.bgp_peer("10.1.0.2").get("state") == "Established")
    session = vr_frr.bgp_peer("10.1.0.2")
    daemons = {d: open(f"/var/run/frr/{vr_net.vr}/{d}.pid").read() for d in ("zebra", "bgpd")}

    vr_net.pearld.send_signal(signal.SIGTERM)
    assert vr_net.pearld.wait(timeout=10) == 0
    vr_net.start_pearld(bin_dir, text, tmp_path)
    time.sleep(1)
    after = vr_frr.bgp_peer("10.1.0.2")
    assert {d: open(f"/var/run/frr/{vr_net.vr}/{d}.pid").read() for d in daemons} == daemons, "adopted, not restarted"
    assert after.get("state") == "Established", after
    assert after.get("connectionsEstablished") == session.get("connectionsEstablished"), (session, after)
    # FRR states the epoch as now less the uptime, in whole seconds: it may shift by one.
    since = session.get("peerUptimeEstablishedEpoch")
    assert since and abs(after.get("peerUptimeEstablishedEpoch", 0) - since) <= 1, (session, after)


def test_an_offloaded_tcp_flow_keeps_flowing_while_pearld_restarts(bin_dir, tmp_path):
    """Flow offload's kernel programs stay attached while pearld is away: host b keeps
    receiving the stream between the SIGTERM and the next pearld's start."""
    prefix = f"lt{os.getpid() % 100000}"
    n = two_hosts(prefix)
    try:
        text = one_vr(f"{prefix}v")
        n.start_pearld(bin_dir, text, tmp_path)
        result = {}
        stream = threading.Thread(target=lambda: result.update(end=n.iperf("a", "b", "10.2.0.2", seconds=6)))
        received = lambda: int(sh("cat", "/sys/class/net/eth0/statistics/rx_bytes", ns=n.hosts["b"]).stdout)  # noqa: E731
        stream.start()
        try:
            time.sleep(1.5)
            assert next(v for v in n.stats()["vrs"])["offloaded_bytes"] > 0, "the stream is offloaded"
            n.pearld.send_signal(signal.SIGTERM)
            assert n.pearld.wait(timeout=10) == 0
            at = received()
            time.sleep(0.5)
            away = received() - at
            n.start_pearld(bin_dir, text, tmp_path)
            at = received()
            time.sleep(1.0)
            after = received() - at
        finally:
            stream.join(timeout=40)
        print(f"while pearld was away: {away * 8 / 0.5 / 1e6:.0f} Mb/s; after: {after * 8 / 1e6:.0f} Mb/s")
        assert away > 10_000_000, f"only {away} bytes reached host b in the half second pearld was away"
        assert after > 10_000_000, after
        assert "end" in result
    finally:
        n.close()
