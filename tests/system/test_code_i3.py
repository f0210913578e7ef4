"""`code: i3` (issue 17, SPP's I3 code option): three fast VRs form an I3 overlay, a Chord ring
whose membership and finger tables their control processes (examples/i3/i3-control.py, run by
pearld as each VR's control plane) keep in the VRs' tables. A receiving host inserts a trigger
through the node nearest to it; the insertion travels by identifier to the node that owns it,
whose slow path installs it. A sending host's packets to that identifier enter the ring at
another node, are forwarded by the fast path's Chord lookup to the owner and by the owner's
trigger to the receiver. A trigger matched by fewer than 128 bits is no match; two triggers
for one identifier (multicast) are served by the owner's slow path, a copy to each."""

import json
import os
import subprocess
import sys
import time

from netns import Network, api_get, sh

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
I3 = ROOT / "examples" / "i3"
# Ring positions (the first 128 bits of identifiers): n1 at 0x40…, n2 at 0x80…, n3 at 0xc0….
POSITIONS = {"n1": "40" + "0" * 30, "n2": "80" + "0" * 30, "n3": "c0" + "0" * 30}
# Owned by n2 (in (0x40…, 0x80…]).
IDENT = "70" + "11" * 15 + "ab" * 16
MEMBERS = f"{POSITIONS['n1']}@10.12.0.1,{POSITIONS['n2']}@10.12.0.2,{POSITIONS['n3']}@10.23.0.3"


def host_tool(net, host, *args):
    return ["ip", "netns", "exec", net.hosts[host], sys.executable, str(I3 / "i3-host.py"), *map(str, args)]


def config(net):
    ports = ("ps", "pr", "l12a", "l12b", "l23a", "l23b", "l31a", "l31b")
    text = "ports:\n" + "".join(f"  - {{name: {p}, interface: {p}, driver: af_packet}}\n" for p in ports) + "vrs:\n"

    def vr(name, mac, interfaces, routes):
        ifs = "".join(f"      - {{name: eth{i}, port: {p}, mac: \"02:00:00:00:{mac}:0{i}\", addresses: [{a}]}}\n"
                      for i, (p, a) in enumerate(interfaces))
        rts = "".join(f"      - {{prefix: {p}, via: {v}}}\n" for p, v in routes)
        control = json.dumps([str(I3 / "i3-control.py"), "--api", str(net.api), "--id", POSITIONS[name], "--members", MEMBERS])
        return (f"  - name: {net.prefix}{name}\n    code: i3\n    control_plane: {{command: {control}}}\n"
                f"    interfaces:\n{ifs}    routes:\n{rts}")
    text += vr("n1", "0a", [("ps", "10.0.1.1/24"), ("l12a", "10.12.0.1/24"), ("l31b", "10.31.0.1/24")],
               [("10.23.0.0/24", "10.12.0.2"), ("10.0.3.0/24", "10.31.0.3")])
    text += vr("n2", "0b", [("l12b", "10.12.0.2/24"), ("l23a", "10.23.0.2/24")],
               [("10.31.0.0/24", "10.12.0.1"), ("10.0.1.0/24", "10.12.0.1"), ("10.0.3.0/24", "10.23.0.3")])
    text += vr("n3", "0c", [("l23b", "10.23.0.3/24"), ("l31a", "10.31.0.3/24"), ("pr", "10.0.3.1/24")],
               [("10.12.0.0/24", "10.31.0.1"), ("10.0.1.0/24", "10.31.0.1")])
    return text


def listen(net, port, seconds):
    p = subprocess.Popen(host_tool(net, "rx", "listen", port, seconds), stdout=subprocess.PIPE, text=True)
    net.procs.append(p)
    assert p.stdout.readline().strip() == "listening"
    return p


def heard(p):
    return [json.loads(line) for line in p.communicate(timeout=30)[0].splitlines()]


def test_three_i3_vrs_route_by_identifier_to_the_trigger_its_owner_holds(bin_dir, tmp_path):
    net = Network(f"i3{os.getpid() % 100000}")
    try:
        net.host("tx", "ps", "02:aa:00:00:00:01", addrs=("10.0.1.2/24",), routes=("route add default via 10.0.1.1",))
        net.host("rx", "pr", "02:aa:00:00:00:02", addrs=("10.0.3.2/24",), routes=("route add default via 10.0.3.1",))
        for a, b in (("l12a", "l12b"), ("l23a", "l23b"), ("l31a", "l31b")):
            sh("ip", "link", "add", a, "type", "veth", "peer", "name", b, ns=net.router)
            sh("ip", "link", "set", a, "up", ns=net.router)
            sh("ip", "link", "set", b, "up", ns=net.router)
        net.api = tmp_path / "pearl.sock"
        net.start_pearld(bin_dir, config(net), tmp_path)

        def ring(name):
            t = {e["key"]: e["value"] for e in api_get(net.api, f"/v1/vrs/{net.prefix}{name}/tables/ring")["entries"]}
            return t.get(b"self".hex())
        deadline = time.time() + 20
        while any(ring(n) is None for n in POSITIONS):
            assert time.time() < deadline, (tmp_path / "pearld.log").read_text()
            time.sleep(0.2)
        assert ring("n2") == POSITIONS["n2"] + POSITIONS["n1"], "n2's predecessor is n1"
        fingers = [e["key"] for e in api_get(net.api, f"/v1/vrs/{net.prefix}n1/tables/fingers")["entries"]]
        assert fingers == [POSITIONS["n2"], POSITIONS["n3"]], fingers

        # r inserts its trigger at n3, the node it is cabled to; n3 forwards the insertion by
        # identifier (n3 → n1 → n2), and n2's control process installs it.
        deadline = time.time() + 20
        triggers = []
        while not triggers:
            sh(*host_tool(net, "rx", "insert", "10.0.3.1", IDENT, 7000))
            time.sleep(0.5)
            triggers = api_get(net.api, f"/v1/vrs/{net.prefix}n2/tables/triggers")["entries"]
            assert time.time() < deadline, (tmp_path / "pearld.log").read_text()
        assert triggers == [{"key": IDENT, "value": "0a000302" + "1b58"}], triggers

        # s sends to the identifier through n1; the fast path forwards it to n2 by Chord, and
        # n2's to r by the trigger. The first packets may find a neighbour unresolved.
        deadline = time.time() + 20
        while True:
            p = listen(net, 7000, 1.5)
            sh(*host_tool(net, "tx", "send", "10.0.1.1", IDENT, "warm-up"))
            if heard(p):
                break
            assert time.time() < deadline, "no packet reached r by its trigger"
        n2_before = next(v for v in net.stats()["vrs"] if v["name"] == f"{net.prefix}n2")
        p = listen(net, 7000, 3)
        payloads = [f"packet {i}" for i in range(20)]
        sh(*host_tool(net, "tx", "send", "10.0.1.1", IDENT, *payloads))
        # A longer match than 128 bits is still this trigger's; an identifier sharing only
        # 120 bits with it is nobody's.
        near = IDENT[:40] + "00" * 12
        far = IDENT[:30] + "ff" + "00" * 16
        sh(*host_tool(net, "tx", "send", "10.0.1.1", near, "near"))
        sh(*host_tool(net, "tx", "send", "10.0.1.1", far, "far"))
        got = heard(p)
        assert [g["payload"] for g in got] == payloads + ["near"], got
        assert all(g["from"] == "10.23.0.2" for g in got), "sent on by n2, from its address towards r"
        n2 = next(v for v in net.stats()["vrs"] if v["name"] == f"{net.prefix}n2")
        assert n2["forwarded_packets"] - n2_before["forwarded_packets"] >= 21, "n2's fast path forwarded them"
        assert n2["exceptions"]["program"] == n2_before["exceptions"]["program"], "none of them took n2's slow path"
        assert n2["drops"]["program"] == n2_before["drops"]["program"] + 1, "the 120-bit match is dropped"

        # A second trigger for the identifier: multicast, served by n2's slow path.
        sh(*host_tool(net, "rx", "insert", "10.0.3.1", IDENT, 7001))
        deadline = time.time() + 10
        while len(api_get(net.api, f"/v1/vrs/{net.prefix}n2/tables/triggers")["entries"][0]["value"]) < 24:
            assert time.time() < deadline
            time.sleep(0.2)
        a, b = listen(net, 7000, 2), listen(net, 7001, 2)
        sh(*host_tool(net, "tx", "send", "10.0.1.1", IDENT, "to both"))
        assert [g["payload"] for g in heard(a)] == ["to both"] and [g["payload"] for g in heard(b)] == ["to both"]
    finally:
        net.close()
