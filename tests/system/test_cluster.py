"""PEARL nodes in a cluster (`pearld --cluster URLS --node NAME`, issue 55): a real 3-member
etcd, three pearld each in its own namespace with an underlay veth into one bridge
(`cluster_lab.py`). A net applied on any node is placed over the nodes; the nodes register
under leases, a dead node is seen down, its `node: auto` VRs come back on a live node, a node
paused past its lease stops its copies, and one etcd member down changes nothing."""

import os
import signal
import subprocess
import time

import pytest

from cluster_lab import Cluster
from frr_host import wait_until
from netns import sh

P = "c62"


@pytest.fixture
def cluster(bin_dir, tmp_path):
    c = Cluster(bin_dir, tmp_path, prefix=P)
    try:
        yield c
    finally:
        c.close()


def one_node_net(name, node_a, node_b):
    """VR a (with host h1) and VR b (with host h2), linked; each VR where its node says."""
    return f"""name: {name}
vrs:
  - name: {P}a
    node: {node_a}
    interfaces:
      - {{name: eth0, mac: "02:62:00:00:00:01", addresses: [10.61.1.1/24]}}
      - {{name: eth1, mac: "02:62:00:00:00:02", addresses: [10.61.9.1/24]}}
    routes: [{{prefix: 10.61.2.0/24, via: 10.61.9.2}}]
  - name: {P}b
    node: {node_b}
    interfaces:
      - {{name: eth0, mac: "02:62:00:00:00:03", addresses: [10.61.2.1/24]}}
      - {{name: eth1, mac: "02:62:00:00:00:06", addresses: [10.61.9.2/24]}}
    routes: [{{prefix: 10.61.1.0/24, via: 10.61.9.1}}]
hosts:
  - name: h1
    interfaces: [{{name: eth0, addresses: [10.61.1.2/24]}}]
    routes: [{{to: default, via: 10.61.1.1}}]
  - name: h2
    interfaces: [{{name: eth0, addresses: [10.61.2.2/24]}}]
    routes: [{{to: default, via: 10.61.2.1}}]
links:
  - {{a: h1/eth0, b: {P}a/eth0}}
  - {{a: {P}a/eth1, b: {P}b/eth1}}
  - {{a: h2/eth0, b: {P}b/eth0}}
"""


def one_vr_net(name, node):
    """VR a between hosts h1 and h2, where `node` says."""
    return f"""name: {name}
vrs:
  - name: {P}a
    node: {node}
    interfaces:
      - {{name: eth0, mac: "02:62:00:00:00:04", addresses: [10.61.1.1/24]}}
      - {{name: eth1, mac: "02:62:00:00:00:05", addresses: [10.61.2.1/24]}}
hosts:
  - name: h1
    interfaces: [{{name: eth0, addresses: [10.61.1.2/24]}}]
    routes: [{{to: default, via: 10.61.1.1}}]
  - name: h2
    interfaces: [{{name: eth0, addresses: [10.61.2.2/24]}}]
    routes: [{{to: default, via: 10.61.2.1}}]
links:
  - {{a: h1/eth0, b: {P}a/eth0}}
  - {{a: h2/eth0, b: {P}a/eth1}}
"""


def pings(ns, dst, count=1):
    return sh("ping", "-c", count, "-i", "0.2", "-W", "1", dst, ns=ns, check=False).returncode == 0


def test_nodes_register_and_a_net_applied_on_one_node_runs_where_it_says(cluster):
    cluster.watch_netns(f"{P}a", f"{P}b", "c62n-h1", "c62n-h2")
    nodes = wait_until("three nodes up", 15, lambda: (n := cluster.nodes("n2")) and all(
        x["state"] == "up" for x in n.values()) and len(n) == 3 and n)
    assert nodes["n1"]["underlay"]["address"] == "10.62.0.1", nodes["n1"]
    assert nodes["n1"]["capacity"]["workers"] >= 1, nodes["n1"]
    table = cluster.ctl("n3", "node", "list").stdout
    assert "n1" in table and "up" in table and "10.62.0.2" in table, table

    # A bad node name is refused at its field, and nothing is stored.
    done = cluster.apply("n2", "c62n", one_node_net("c62n", "n 1", "n1"))
    assert done.returncode != 0 and "nets.c62n.vrs[0].node" in done.stderr, done.stderr
    assert cluster.keys("/pearl/nets/") == {}

    # Applied on n2, the net runs on n1, where both its VRs are.
    done = cluster.apply("n2", "c62n", one_node_net("c62n", "n1", "n1"))
    assert done.returncode == 0, done.stderr
    wait_until("both VRs running on n1", 20,
               lambda: all(v["node"] == "n1" and v["state"] == "running" for v in cluster.net("c62n", "n3")["vrs"]))
    wait_until("h1 reaches h2 through n1", 20, lambda: pings("c62n-h1", "10.61.2.2"))
    owners = cluster.keys("/pearl/owner/c62n/")
    assert owners == {f"/pearl/owner/c62n/{P}a": "n1", f"/pearl/owner/c62n/{P}b": "n1"}, owners
    assert set(cluster.keys("/pearl/status/n1/c62n/")) == {f"/pearl/status/n1/c62n/{P}a", f"/pearl/status/n1/c62n/{P}b"}
    # The nodes without a part of it hold none of it.
    for node in ("n2", "n3"):
        assert "nets" not in cluster.json(node, "config", "show"), node
    shown = cluster.ctl("n3", "net", "show", "c62n").stdout
    assert f"{P}a on n1 (running)" in shown, shown

    # An unchanged net applied again touches nothing: the same VR processes, the same counters.
    before = sh("ip", "netns", "pids", f"{P}a").stdout.split()
    rounds = cluster.log("n1").count("this node's part landed")
    assert cluster.apply("n3", "c62n", one_node_net("c62n", "n1", "n1")).returncode == 0
    time.sleep(2.5)
    assert cluster.log("n1").count("this node's part landed") == rounds
    assert sh("ip", "netns", "pids", f"{P}a").stdout.split() == before

    # Destroyed from n3: n1 removes its part, the keys go.
    cluster.ctl("n3", "net", "destroy", "c62n")
    wait_until("the VRs gone from n1", 20, lambda: f"{P}a " not in sh("ip", "netns", "list").stdout + " ")
    wait_until("owner keys gone", 10, lambda: cluster.keys("/pearl/owner/") == {})


def test_a_node_not_in_a_cluster_refuses_node_keys_and_one_in_it_shows_the_dead_as_down(cluster):
    # A dead node: its lease runs out, every node sees it down.
    killed = time.monotonic()
    cluster.kill_node("n3")
    wait_until("n3 down", cluster.lease_ttl + 4, lambda: cluster.nodes("n1")["n3"]["state"] == "down", interval=0.1)
    print(f"n3 seen down {time.monotonic() - killed:.1f} s after its pearld was killed (lease TTL {cluster.lease_ttl} s)")
    cluster.start_node("n3")
    wait_until("n3 up again", 10, lambda: cluster.nodes("n2")["n3"]["state"] == "up")


def test_one_etcd_member_down_changes_nothing(cluster):
    cluster.watch_netns(f"{P}a", f"{P}b", "c62e-h1", "c62e-h2")
    assert cluster.apply("n1", "c62e", one_node_net("c62e", "n2", "n2")).returncode == 0
    wait_until("h1 reaches h2 through n2", 30, lambda: pings("c62e-h1", "10.61.2.2"))
    landed = cluster.log("n2").count("this node's part landed")
    cluster.etcd[0].send_signal(signal.SIGKILL)
    cluster.etcd[0].wait()
    # Three lease periods with a member down: no node taken for down, nothing landed again.
    for _ in range(3 * cluster.lease_ttl):
        assert all(n["state"] == "up" for n in cluster.nodes("n3").values())
        time.sleep(1)
    assert pings("c62e-h1", "10.61.2.2", count=3)
    assert cluster.log("n2").count("this node's part landed") == landed
    assert "the lease is gone" not in cluster.log("n2")


def test_an_auto_vr_of_a_dead_node_comes_back_on_a_live_one_and_a_paused_node_stops_its_copy(cluster):
    name = "c62m"
    cluster.watch_netns(f"{P}a", f"{name}-h1", f"{name}-h2")
    assert cluster.apply("n1", name, one_vr_net(name, "auto")).returncode == 0
    first = wait_until("the VR placed and running", 30, lambda: cluster.vr_at(name, f"{P}a"))
    wait_until("h1 reaches h2", 30, lambda: pings(f"{name}-h1", "10.61.2.2"))
    others = [n for n in cluster.node_ns if n != first]

    # Paused past its lease: the cluster takes it for down and places its VRs elsewhere; the
    # other node cannot make them while the paused one still holds their namespaces (one
    # machine), and the paused node, resumed, stops its copies first: never two live copies.
    pid = cluster.pid(first)
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until("the paused node down", cluster.lease_ttl + 5, lambda: cluster.nodes(others[0])[first]["state"] == "down")
        wait_until("the VR assigned elsewhere", 10,
                   lambda: any(k.startswith(f"/pearl/assign/{o}/{name}/") for o in others for k in cluster.keys("/pearl/assign/")))
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until("the resumed node gave up its copies", 20, lambda: "the lease is gone" in cluster.log(first))
    moved = wait_until("the VR running on another node", 30,
                       lambda: (n := cluster.vr_at(name, f"{P}a", via=others[0])) and n != first and n)
    owners = cluster.keys(f"/pearl/owner/{name}/")
    assert set(owners.values()) <= set(others), owners
    wait_until("h1 reaches h2 again", 30, lambda: pings(f"{name}-h1", "10.61.2.2"))
    print(f"{name}: {first} paused and resumed; its VRs now on {moved}")

    # The machine of the node it moved to dies: its auto VRs come back within 10 s of the death
    # being seen (the lease's TTL after the kill).
    killed = time.monotonic()
    cluster.kill_node(moved, machine=True, vrs=[f"{P}a", f"{name}-h1", f"{name}-h2"])
    back = wait_until("the auto VRs back on a live node", cluster.lease_ttl + 10,
                      lambda: (n := cluster.vr_at(name, f"{P}a", via=first)) and n != moved and n, interval=0.2)
    wait_until("h1 reaches h2 once more", 20, lambda: pings(f"{name}-h1", "10.61.2.2"))
    print(f"{name}: back on {back} {time.monotonic() - killed:.1f} s after {moved} died (lease TTL {cluster.lease_ttl} s)")


def line_net(name, tmp):
    """VRs r1 — r2 — r3 in a line, one per node, FRR OSPF in each (one-second hellos); h1 on
    r1, h2 on r3; the two VR-VR links cross nodes (VXLAN tunnels)."""
    from test_nets import ospf_conf
    vrs = []
    subnets = {1: ["10.63.1", "10.63.12"], 2: ["10.63.12", "10.63.23"], 3: ["10.63.23", "10.63.3"]}
    for i, (s0, s1) in subnets.items():
        a0 = f"{s0}.{2 if i > 1 else 1}"
        a1 = f"{s1}.{1 if i < 3 else 1}"
        p2p = [x for x, on in (("eth0", i > 1), ("eth1", i < 3)) if on]
        passive = [x for x in ("eth0", "eth1") if x not in p2p]
        conf = tmp / f"{P}r{i}.conf"
        conf.write_text(ospf_conf(f"10.255.63.{i}", [f"{s0}.0/24", f"{s1}.0/24"], p2p, passive))
        vrs.append(f"""  - name: {P}r{i}
    node: n{i}
    interfaces:
      - {{name: eth0, mac: "02:63:00:00:0{i}:00", addresses: [{a0}/24]}}
      - {{name: eth1, mac: "02:63:00:00:0{i}:01", addresses: [{a1}/24]}}
    control_plane: {{frr: {{daemons: [zebra, ospfd], config: {conf}}}}}""")
    vr_text = "\n".join(vrs)
    return f"""name: {name}
vrs:
{vr_text}
hosts:
  - name: h1
    interfaces: [{{name: eth0, addresses: [10.63.1.2/24]}}]
    routes: [{{to: default, via: 10.63.1.1}}]
  - name: h2
    interfaces: [{{name: eth0, addresses: [10.63.3.2/24]}}]
    routes: [{{to: default, via: 10.63.3.1}}]
    command: iperf3 -s -p 5362
links:
  - {{a: h1/eth0, b: {P}r1/eth0}}
  - {{a: {P}r1/eth1, b: {P}r2/eth0}}
  - {{a: {P}r2/eth1, b: {P}r3/eth0}}
  - {{a: h2/eth0, b: {P}r3/eth1}}
"""


def route_to(ns, prefix):
    import json
    out = sh("ip", "-j", "route", "show", prefix, ns=ns, check=False).stdout
    return json.loads(out or "[]")


def carrier(ns, dev):
    return "NO-CARRIER" not in sh("ip", "link", "show", dev, ns=ns).stdout


def ospfd_pid(vr):
    from frr_host import FrrView  # noqa: F401 (the daemons run in the VR's namespace)
    out = sh("ip", "netns", "pids", vr).stdout.split()
    return sorted(p for p in out if open(f"/proc/{p}/comm").read().strip() in ("ospfd", "zebra"))


def has_vxlan(bin_dir):
    """Whether this build's ports have the vxlan driver (issue 55, part 1): its grammar and its
    data path (port/vxlan/)."""
    ref = subprocess.run([str(bin_dir / "pearld"), "--print-reference", "markdown"], capture_output=True, text=True).stdout
    driver = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "dataplane", "src", "port", "vxlan")
    return "vxlan" in ref and os.path.isdir(driver)


def test_a_line_across_three_nodes_carries_traffic_and_survives_a_node_restart(cluster, bin_dir):
    if not has_vxlan(bin_dir):
        pytest.skip("this build has no vxlan port driver (issue 55, part 1)")
    from frr_host import FrrView
    name = "c62l"
    r1, r2, r3 = f"{P}r1", f"{P}r2", f"{P}r3"
    cluster.watch_netns(r1, r2, r3, f"{name}-h1", f"{name}-h2")
    done = cluster.apply("n2", name, line_net(name, cluster.tmp))
    assert done.returncode == 0, done.stderr
    wait_until("each VR running on its node", 60,
               lambda: [cluster.vr_at(name, v) for v in (r1, r2, r3)] == ["n1", "n2", "n3"], interval=0.5)
    links = {l["name"]: l for l in cluster.net(name)["links"]}
    tunnels = [l for l in links.values() if l["kind"] == "vxlan"]
    assert len(tunnels) == 2 and tunnels[0]["vni"] != tunnels[1]["vni"], links
    def full(vr):
        try:
            return len(FrrView(vr).ospf_full_neighbors())
        except RuntimeError:  # its daemons not up yet
            return 0
    wait_until("OSPF Full at r2 with r1 and r3", 90, lambda: full(r2) == 2, interval=0.5)
    wait_until("h2's subnet at r1", 30, lambda: route_to(r1, "10.63.3.0/24"))
    h1 = f"{name}-h1"
    assert pings(h1, "10.63.3.2", count=3), "h1 reaches h2 across both tunnels"
    iperf = sh("iperf3", "-c", "10.63.3.2", "-p", "5362", "-t", "2", "-J", ns=h1, check=False)
    import json
    gbps = json.loads(iperf.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9
    print(f"iperf3 h1 → h2 across two VXLAN links: {gbps:.2f} Gb/s")
    assert gbps > 0.05, gbps

    # n2's pearld dies: its lease runs out, r1 and r3 lose the carrier of their links to r2
    # and OSPF withdraws what was behind it at once.
    kept = {v: ospfd_pid(v) for v in (r1, r3)}
    landed = {n: cluster.log(n).count("this node's part landed") for n in ("n1", "n3")}
    killed = time.monotonic()
    cluster.kill_node("n2")
    wait_until("r1's link to r2 down", cluster.lease_ttl + 2, lambda: not carrier(r1, "eth1"), interval=0.05)
    down_at = time.monotonic() - killed
    wait_until("r3's link to r2 down", 2, lambda: not carrier(r3, "eth0"), interval=0.05)
    wait_until("h2's subnet gone at r1", 2, lambda: not route_to(r1, "10.63.3.0/24"), interval=0.05)
    print(f"n2 killed: link down at r1 after {down_at:.2f} s (lease {cluster.lease_ttl} s), "
          f"route withdrawn {time.monotonic() - killed:.2f} s")

    # Back: the links come up, OSPF heals, and nothing on n1 and n3 was touched.
    cluster.start_node("n2")
    wait_until("r1's link to r2 up", 15, lambda: carrier(r1, "eth1"), interval=0.1)
    wait_until("h1 reaches h2 again", 60, lambda: pings(h1, "10.63.3.2"), interval=0.5)
    assert {v: ospfd_pid(v) for v in (r1, r3)} == kept, "the other nodes' VRs kept their daemons"
    assert {n: cluster.log(n).count("this node's part landed") for n in ("n1", "n3")} == landed
