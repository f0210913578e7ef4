"""The inspection commands a new user reaches for first (issue 53): `pearlctl fib` shows what
the fast path's workers read, routes learned through the VR's kernel (FRR) included, and
`fib lookup` answers as forwarding does; `exec VR -- vtysh` reaches the VR's own FRR;
`PEARL_SOCKET` stands for --socket. Hosts keep kernel defaults (offloads on, MTU 1500)."""

import json
import os
import subprocess

from frr_host import rx_packets, spray, wait_until
from netns import sh
from test_frr import FAR, VR_MACS, vr_config, vr_net  # noqa: F401 (vr_net is a fixture)

# The VR's FRR (staticd through zebra) puts this route into the VR's kernel; routed mirrors it.
STATIC_FRR = "ip route 203.0.113.0/24 10.1.0.2\n"


def pearlctl(bin_dir, net, *args, env=None, check=True):
    cmd = ["ip", "netns", "exec", net.router, str(bin_dir / "pearlctl"), *map(str, args)]
    if env is None:
        cmd[5:5] = ["--socket", str(net.api)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env={**os.environ, **(env or {})})
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr}")
    return done


def fib(bin_dir, net, *args):
    return json.loads(pearlctl(bin_dir, net, "fib", net.vr, *args, "--json").stdout)


def with_frr_route(vr_net, bin_dir, tmp_path):
    conf = tmp_path / "vr-frr.conf"
    conf.write_text(STATIC_FRR)
    vr_net.start_pearld(bin_dir, vr_config(vr_net.vr, conf, ["staticd"]), tmp_path)
    wait_until("FRR's route in the VR's kernel", 30,
               lambda: "203.0.113.0/24" in sh("ip", "route", "show", ns=vr_net.vr).stdout)
    # b reaching FAR makes the VR's kernel resolve a's MAC, which routed mirrors as the next hop.
    sh("ping", "-c", "2", "-W", "2", FAR, ns=vr_net.hosts["b"])


def test_fib_lists_frr_routes_with_resolved_next_hops_and_lookup_answers_as_forwarding(vr_net, bin_dir, tmp_path):
    with_frr_route(vr_net, bin_dir, tmp_path)
    routes = {}
    wait_until("FRR's route resolved in the fast path", 10, lambda: routes.update(
        {r["prefix"]: r for r in fib(bin_dir, vr_net)["routes"]}) or
        routes.get("203.0.113.0/24", {}).get("next_hops", [{}])[0].get("resolved"))
    far = routes["203.0.113.0/24"]
    assert far["origin"] == "kernel", far
    assert far["next_hops"] == [{"kind": "forward", "resolved": True, "interface": "eth0", "port": "p0",
                                 "mac": "02:aa:00:00:00:01"}], far
    assert routes["10.2.0.0/24"]["origin"] == "connected", routes
    assert routes["10.1.0.1/32"]["origin"] == "local", routes
    # Text, a prefix's part of the table, and the IPv6 family.
    text = pearlctl(bin_dir, vr_net, "fib", vr_net.vr).stdout
    print(text)
    assert "203.0.113.0/24" in text and "02:aa:00:00:00:01" in text, text
    assert [r["prefix"] for r in fib(bin_dir, vr_net, "203.0.113.0/24")["routes"]] == ["203.0.113.0/24"]
    assert fib(bin_dir, vr_net, "--family", "v6")["family"] == "v6"

    hit = json.loads(pearlctl(bin_dir, vr_net, "fib", vr_net.vr, "lookup", FAR, "--json").stdout)
    assert hit["route"]["prefix"] == "203.0.113.0/24", hit
    miss = pearlctl(bin_dir, vr_net, "fib", vr_net.vr, "lookup", "198.51.100.7").stdout
    assert "no route" in miss, miss
    # A static route added in the short form shows as the configuration's.
    pearlctl(bin_dir, vr_net, "route", "add", vr_net.vr, "198.51.100.0/24", "10.2.0.2")
    added = wait_until("the static route in the fast path", 10, lambda: json.loads(pearlctl(
        bin_dir, vr_net, "fib", vr_net.vr, "lookup", "198.51.100.7", "--json").stdout)["route"])
    assert added["prefix"] == "198.51.100.0/24" and added["origin"] == "static", added
    assert added["next_hops"][0]["interface"] == "eth1", added
    # And forwarding agrees: frames to FAR leave by eth0 to a, on the fast path.
    arrived, count = rx_packets(vr_net.hosts["a"]), 200
    before = vr_net.stats()["vrs"][0]
    spray(vr_net.hosts["b"], "eth0", "02:aa:00:00:00:02", VR_MACS[1], "10.2.0.2", FAR, count, step=0, rate_pps=1000)
    wait_until("the frames at host a", 10, lambda: rx_packets(vr_net.hosts["a"]) - arrived >= count)
    after = vr_net.stats()["vrs"][0]
    assert after["forwarded_packets"] - before["forwarded_packets"] >= count, (before, after)


def test_fib_pages_through_the_api(vr_net, bin_dir, tmp_path):
    with_frr_route(vr_net, bin_dir, tmp_path)
    path = f"/v1/vrs/{vr_net.vr}/fib?limit=1"
    seen, after = [], ""
    from netns import api_get
    while True:
        page = api_get(vr_net.api, path + after)
        assert len(page["routes"]) <= 1
        seen += [r["prefix"] for r in page["routes"]]
        if page["next"] is None:
            break
        after = f"&after={page['next']}"
    assert len(seen) == page["total"] and "203.0.113.0/24" in seen, seen
    bad = api_get(vr_net.api, f"/v1/vrs/{vr_net.vr}/fib?prefix=10.1.0.1/8")
    assert bad["field"] == "prefix", bad


def test_exec_vtysh_reaches_the_vrs_frr_and_pearl_socket_stands_for_socket(vr_net, bin_dir, tmp_path):
    with_frr_route(vr_net, bin_dir, tmp_path)
    shown = pearlctl(bin_dir, vr_net, "exec", vr_net.vr, "--", "vtysh", "-c", "show ip route", env={"PEARL_SOCKET": str(vr_net.api)})
    assert "203.0.113.0/24" in shown.stdout, shown.stdout + shown.stderr
    plain = pearlctl(bin_dir, vr_net, "exec", vr_net.vr, "ip", "route", env={"PEARL_SOCKET": str(vr_net.api)})
    assert "203.0.113.0/24" in plain.stdout, plain.stdout
    unset = pearlctl(bin_dir, vr_net, "vr", "list", env={"PEARL_SOCKET": "/nonexistent/pearl.sock"}, check=False)
    assert unset.returncode == 1 and "/nonexistent/pearl.sock" in unset.stderr, unset.stderr


def test_errors_show_malformed_frames_and_exceptions_under_their_stage_and_reason(vr_net, bin_dir, tmp_path):
    from scapy.all import IP, UDP, Ether, Raw, wrpcap
    with_frr_route(vr_net, bin_dir, tmp_path)
    ip = bytearray(bytes(IP(src="10.2.0.2", dst=FAR) / UDP() / Raw(b"y" * 20)))
    ip[0] = 0x43  # an IHL below 5
    eth = Ether(src="02:aa:00:00:00:02", dst=VR_MACS[1])
    frames = [Ether(bytes(Ether(src=eth.src, dst=eth.dst, type=0x0800)) + bytes(ip))] * 7
    frames += [eth / IP(src="10.2.0.2", dst=FAR, ttl=1) / UDP()] * 3
    wrpcap(str(tmp_path / "bad.pcap"), frames)
    vr_net.send("b", tmp_path / "bad.pcap")

    def row(errors, stage, reason):
        return next((e for e in errors if e["stage"] == stage and e["reason"] == reason and e["count"]), None)

    node = {}

    def counted():
        node.update(json.loads(pearlctl(bin_dir, vr_net, "errors", "--json").stdout))
        return (row(node["errors"], "extract", "malformed_bad_ihl") or {}).get("count") == 7

    try:
        wait_until("the frames counted", 10, counted)
    except AssertionError as e:
        raise AssertionError(f"{e}: {[x for x in node['errors'] if x['count']]}") from None
    bad = row(node["errors"], "extract", "malformed_bad_ihl")
    assert bad["metric"] == "pearl_port_drops_total" and bad["port"] == "p1", bad
    assert row(node["errors"], "extract", "malformed")["worker"] == "0", "the worker's count, same stage"
    ttl = row(node["errors"], "program", "ttl_expired")
    assert ttl["count"] == 3 and ttl["vr"] == vr_net.vr and ttl["metric"] == "pearl_vr_exceptions_total", ttl
    # One VR's view holds its own counters only; the text names stage and reason.
    mine = json.loads(pearlctl(bin_dir, vr_net, "errors", vr_net.vr, "--json").stdout)["errors"]
    assert mine and all(e.get("vr") == vr_net.vr for e in mine), mine
    text = pearlctl(bin_dir, vr_net, "errors").stdout
    print(text)
    assert any(line.split()[:2] == ["extract", "malformed_bad_ihl"] for line in text.splitlines()), text
    # Named as /metrics names them.
    metrics = subprocess.run(["curl", "-s", "--unix-socket", str(vr_net.api), "http://x/metrics"], capture_output=True,
                             text=True, timeout=10).stdout
    assert 'pearl_port_drops_total{port="p1",reason="malformed_bad_ihl"} 7' in metrics
    unknown = pearlctl(bin_dir, vr_net, "errors", "nosuchvr", check=False)
    assert unknown.returncode == 3 and "nosuchvr" in unknown.stderr, unknown.stderr


def completed(bin_dir, line, env):
    """What bash offers for the last word of `line` (empty after a trailing space), through the
    script `pearlctl completions bash` prints, as the shell would run it on TAB; options (offered
    along with names for an empty word) left out."""
    script = r'''
source <(pearlctl completions bash)
read -ra COMP_WORDS <<< "$LINE"
[[ "$LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE=$LINE COMP_POINT=${#LINE} COMP_TYPE=9
_clap_complete_pearlctl pearlctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
'''
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LINE": line, **env}
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, env=env)
    assert done.returncode == 0, done.stderr
    return sorted(w for w in done.stdout.split("\n") if w and not w.startswith("-"))


def test_completions_offer_the_running_nodes_vr_interface_and_port_names(vr_net, bin_dir, tmp_path):
    with_frr_route(vr_net, bin_dir, tmp_path)
    env = {"PEARL_SOCKET": str(vr_net.api)}
    vr = vr_net.vr
    names = sorted(v["name"] for v in json.loads(pearlctl(bin_dir, vr_net, "vr", "list", "--json").stdout)["vrs"])
    assert completed(bin_dir, "pearlctl vr show ", env) == names == [vr]
    assert completed(bin_dir, f"pearlctl fib {vr[:3]}", env) == [vr]
    assert completed(bin_dir, "pearlctl errors zz", env) == []
    assert completed(bin_dir, f"pearlctl impair {vr} ", env) == ["eth0", "eth1"]
    assert completed(bin_dir, f"pearlctl capture {vr} --interface e", env) == ["eth0", "eth1"]
    assert completed(bin_dir, f"pearlctl filter add {vr} in_port=", env) == ["in_port=p0", "in_port=p1"]
    # The socket typed on the line is the one asked, over the environment's.
    assert completed(bin_dir, f"pearlctl --socket {vr_net.api} route list ", {"PEARL_SOCKET": "/nonexistent"}) == [vr]
    # Subcommands complete as before, and no pearld means no names rather than an error.
    assert "show" in completed(bin_dir, "pearlctl vr sh", env)
    assert completed(bin_dir, "pearlctl vr show ", {"PEARL_SOCKET": "/nonexistent/pearl.sock"}) == []
