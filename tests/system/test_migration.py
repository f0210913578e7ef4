"""Live migration of a VR between the fast path and its kernel (issue 18): `pearlctl vr migrate
VR --to fast|kernel` changes only where the VR's packets are forwarded. Its namespace, addresses,
FRR daemons and BGP session stay; steady traffic in both directions, some of it on a route BGP
learned, loses nothing; `pearlctl vr show --json` says where it is (`data_plane`). `placement:
auto` with `node: {fast_slots: N}` places VRs on the fast path while slots last, and moves one
there in place when a slot frees. Hosts keep the kernel's defaults. Timings are a benchmark
(`bench/migration.py`), not asserted here."""

import json
import os
import statistics
import subprocess
import sys
import time

import pytest

from frr_host import Frr, frr_bgp_config, wait_until
from netns import HERE, api_get, two_hosts
from test_frr import remove_vr_leftovers

VR_MACS = ("02:00:00:00:0e:00", "02:00:00:00:0e:01")
FAR = "198.51.100.1"  # behind host a, learned by the VR over BGP


def config(vr, frr_conf, placement="", node=""):
    return f"""
{node}
ports:
  - {{name: p0, interface: p0, driver: af_packet}}
  - {{name: p1, interface: p1, driver: af_packet}}
vrs:
  - name: {vr}
    {placement}
    interfaces:
      - {{name: eth0, port: p0, mac: "{VR_MACS[0]}", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: p1, mac: "{VR_MACS[1]}", addresses: [10.2.0.1/24]}}
    control_plane: {{frr: {{daemons: [bgpd], config: {frr_conf}}}}}
"""


def bgp(asn, router_id, peer, peer_as, originate=()):
    """bgpd.conf with keepalive 1 s and hold time 3 s: a session starved for 3 s would drop."""
    conf = frr_bgp_config(asn, router_id, [(peer, peer_as)], originate)
    return conf.replace(f"router bgp {asn}\n", f"router bgp {asn}\n timers bgp 1 3\n", 1)


def ctl(net, bin_dir, *args):
    done = subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), *map(str, args)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def show(net, bin_dir, vr):
    return json.loads(ctl(net, bin_dir, "vr", "show", vr, "--json"))


def session(frr, peer):
    n = frr.json(f"show bgp neighbors {peer}").get(peer, {})
    return n.get("bgpState"), n.get("connectionsEstablished")


def migration_network(prefix):
    net = two_hosts(prefix)
    net.vr = f"{prefix}vm"
    net.closers = []
    try:
        # Host a also holds FAR, which it announces to the VR over BGP.
        subprocess.run(["ip", "-n", net.hosts["a"], "addr", "add", f"{FAR}/24", "dev", "lo"], check=True)
    except Exception:
        close_migration_network(net)
        raise
    return net


def close_migration_network(net):
    for close in reversed(net.closers):
        close()
    net.close()
    remove_vr_leftovers(net.vr)


@pytest.fixture
def net():
    n = migration_network(f"tm{os.getpid() % 100000}")
    try:
        yield n
    finally:
        close_migration_network(n)


def start(net, bin_dir, tmp_path, placement=""):
    """pearld with the VR, its BGP session to host a up, both hosts' neighbours resolved."""
    conf = tmp_path / "vr-bgpd.conf"
    conf.write_text(bgp(65001, "10.1.0.1", "10.1.0.2", 65002))
    host = Frr(net.hosts["a"], {"bgpd": bgp(65002, "10.1.0.2", "10.1.0.1", 65001, originate=("198.51.100.0/24",))})
    net.closers.append(host.close)
    net.start_pearld(bin_dir, config(net.vr, conf, placement), tmp_path)
    wait_until("the BGP session Established", 60, lambda: session(host, "10.1.0.1")[0] == "Established")
    wait_until(f"{FAR} learned over BGP in the VR", 30,
               lambda: FAR.rsplit(".", 1)[0] in subprocess.run(["ip", "-n", net.vr, "route"], capture_output=True, text=True).stdout)
    for src, dst in (("a", "10.2.0.2"), ("b", "10.1.0.2"), ("b", FAR)):
        wait_until(f"ping {dst} from {src}", 20, lambda s=src, d=dst: subprocess.run(
            ["ip", "netns", "exec", net.hosts[s], "ping", "-c", "1", "-W", "1", d], capture_output=True).returncode == 0)
    return host


def migration_run(net, bin_dir, host, targets, pps=1000, dwell=2.5):
    """Sends `pps` datagrams/s each way (a → b, and b → FAR behind a, on the BGP route) while the
    VR moves to each of `targets` in turn, `dwell` s apart; returns what each side lost, each
    move's reply and what the VR looked like around the moves."""
    def move(to):
        kernel_vr_before = net_vr_stats(net)["exceptions"].get("kernel_vr", 0)
        reply = json.loads(ctl(net, bin_dir, "vr", "migrate", net.vr, "--to", to, "--json"))
        return {"to": to, "reply": reply, "shown": show(net, bin_dir, net.vr)["data_plane"], "kernel_vr_before": kernel_vr_before}

    r = under_traffic(net, bin_dir, host, [lambda to=to: move(to) for to in targets], pps, dwell)
    moves = r.pop("steps")
    for m, later in zip(moves, moves[1:]):
        m["kernel_vr_during"] = later["kernel_vr_before"] - m["kernel_vr_before"]
    return dict(r, moves=moves)


def under_traffic(net, bin_dir, host, steps, pps, dwell):
    """Runs each of `steps` (callables), `dwell` s apart, while `pps` datagrams/s go each way;
    what was sent, received and lost per flow, and the session and VR before and after."""
    seconds = dwell * (len(steps) + 1)
    flows = {"a→b": ("a", "b", "10.2.0.2"), "b→far": ("b", "a", FAR)}
    sinks = {f: subprocess.Popen(["ip", "netns", "exec", net.hosts[to], sys.executable, str(HERE / "seq_udp.py"), "sink", "4001",
                                  str(seconds)], stdout=subprocess.PIPE, text=True) for f, (_, to, _) in flows.items()}
    net.procs += sinks.values()
    time.sleep(0.5)
    senders = {f: subprocess.Popen(["ip", "netns", "exec", net.hosts[frm], sys.executable, str(HERE / "seq_udp.py"), "send", dst,
                                    "4001", str(pps), str(seconds)], stdout=subprocess.PIPE, text=True)
               for f, (frm, _, dst) in flows.items()}
    net.procs += senders.values()
    before = {"session": session(host, "10.1.0.1"), "vr": show(net, bin_dir, net.vr)}
    done = []
    for step in steps:
        time.sleep(dwell)
        done.append(step())
    sent = {f: int(p.communicate(timeout=seconds + 30)[0]) for f, p in senders.items()}
    got = {f: json.loads(p.communicate(timeout=seconds + 30)[0]) for f, p in sinks.items()}
    return {
        "lost": {f: sent[f] - got[f]["unique"] for f in flows},
        "sent": sent,
        "got": got,
        "steps": done,
        "before": before,
        "after": {"session": session(host, "10.1.0.1"), "vr": show(net, bin_dir, net.vr)},
    }


def net_vr_stats(net):
    return next(v for v in net.stats()["vrs"] if v["name"] == net.vr)


def pids(vr_json):
    return sorted(p.get("pid") for p in vr_json.get("processes", []))


def test_a_vr_moves_between_the_fast_path_and_its_kernel_under_traffic_losing_nothing(net, bin_dir, tmp_path):
    host = start(net, bin_dir, tmp_path)
    assert show(net, bin_dir, net.vr)["data_plane"] == "fast"
    r = migration_run(net, bin_dir, host, ["kernel", "fast", "kernel", "fast"])
    print(json.dumps({k: r[k] for k in ("lost", "sent", "got")}),
          "durations (ms):", [m["reply"]["duration_ms"] for m in r["moves"]])
    for m in r["moves"]:
        assert (m["reply"]["to"], m["reply"]["vr"]["data_plane"], m["shown"]) == (m["to"],) * 3, m
    # While in the kernel, the VR's traffic went there: both flows, not a trickle.
    for m in r["moves"]:
        if m["to"] == "kernel":
            assert m["kernel_vr_during"] > 1000, m
    assert r["lost"] == {"a→b": 0, "b→far": 0}, r
    # The session never dropped, and the daemons are the same processes.
    assert r["before"]["session"] == r["after"]["session"] and r["after"]["session"][0] == "Established", r
    assert pids(r["before"]["vr"]) == pids(r["after"]["vr"]) and pids(r["after"]["vr"]), (r["before"]["vr"], r["after"]["vr"])
    assert statistics.median(m["reply"]["duration_ms"] for m in r["moves"]) > 0


def test_migrations_are_refused_whole_with_the_reason_and_placement_survives_a_restart(net, bin_dir, tmp_path):
    start(net, bin_dir, tmp_path, placement="placement: kernel")
    vr = show(net, bin_dir, net.vr)
    assert (vr["kind"], vr["placement"], vr["data_plane"]) == ("kernel", "kernel", "kernel")
    cmd = [str(bin_dir / "pearlctl"), "--socket", str(net.api), "vr", "migrate"]
    wrong = subprocess.run(cmd + [net.vr, "--to", "somewhere"], capture_output=True, text=True)
    assert wrong.returncode != 0 and "somewhere" in wrong.stderr, wrong.stderr
    missing = subprocess.run(cmd + [f"{net.vr}x", "--to", "fast"], capture_output=True, text=True)
    assert missing.returncode != 0 and "no VR named" in missing.stderr, missing.stderr
    # The document holds the new placement: it is what a restart comes back to.
    ctl(net, bin_dir, "vr", "migrate", net.vr, "--to", "fast")
    doc = api_get(net.api, "/v1/config")
    entry = next(v for v in doc["vrs"] if v["name"] == net.vr)
    assert entry.get("placement") == "fast" and entry.get("kind") in (None, "fast"), entry


def test_auto_placement_fills_the_fast_slots_in_order_and_a_freed_slot_moves_a_vr_in_place(net, bin_dir, tmp_path):
    conf = tmp_path / "vr-bgpd.conf"
    conf.write_text(bgp(65001, "10.1.0.1", "10.1.0.2", 65002))
    second = f"{net.prefix}vn"
    net.closers.append(lambda: remove_vr_leftovers(second))
    text = config(net.vr, conf, "placement: auto", node="node: {fast_slots: 1}").replace(
        "vrs:\n", f"vrs:\n  - {{name: {second}, placement: auto, interfaces: [{{name: eth0, port: p0, mac: \"02:00:00:00:0f:00\", "
                  f"addresses: [10.9.0.1/24]}}]}}\n", 1)
    net.start_pearld(bin_dir, text, tmp_path)
    assert [show(net, bin_dir, v)["data_plane"] for v in (second, net.vr)] == ["fast", "kernel"]
    # Traffic through the VR placed in its kernel.
    wait_until("ping through the kernel-placed VR", 20, lambda: subprocess.run(
        ["ip", "netns", "exec", net.hosts["a"], "ping", "-c", "1", "-W", "1", "10.2.0.2"], capture_output=True).returncode == 0)
    assert net_vr_stats(net)["exceptions"].get("kernel_vr", 0) > 0
    namespace_before = os.stat(f"/run/netns/{net.vr}").st_ino
    ctl(net, bin_dir, "vr", "delete", second)
    vr = show(net, bin_dir, net.vr)
    assert (vr["placement"], vr["data_plane"]) == ("auto", "fast"), vr
    assert os.stat(f"/run/netns/{net.vr}").st_ino == namespace_before, "moved in place, not made anew"
    forwarded = net_vr_stats(net)["forwarded_packets"]
    subprocess.run(["ip", "netns", "exec", net.hosts["a"], "ping", "-c", "3", "-i", "0.2", "-W", "1", "10.2.0.2"], check=True,
                   capture_output=True)
    assert net_vr_stats(net)["forwarded_packets"] >= forwarded + 6, "the fast path forwards it now"
    # Pinned to the fast path, it holds the one slot: a VR that asks for another is refused
    # whole, the refusal naming the node's slots, and nothing of it is made.
    ctl(net, bin_dir, "vr", "set", net.vr, "placement=fast")
    third = subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), "vr", "create", second, "--interface",
                            "name=eth0,port=p0,mac=02:00:00:00:0f:00,address=10.9.0.1/24", "placement=fast"], capture_output=True, text=True)
    assert third.returncode != 0 and "node.fast_slots" in third.stderr, third.stderr
    assert not os.path.exists(f"/run/netns/{second}")
    assert show(net, bin_dir, net.vr)["data_plane"] == "fast"
