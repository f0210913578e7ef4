"""Resource requests and admission (issue 18): a VR's `resources:` are granted whole or refused
whole, the refusal naming the resource that is short; what is granted is enforced (the VR's rate
cap, FIB and filter quotas, CPU) and shown by `pearlctl node` and in `/metrics`; requests change
at run time with the same rule. Hosts keep the kernel's defaults."""

import json
import os
import subprocess

import pytest

from netns import api_get, two_hosts
from test_api import get
from test_frr import remove_vr_leftovers

MACS = ("02:00:00:00:0d:00", "02:00:00:00:0d:01")


def config(vr, resources):
    return f"""
node: {{capacity: {{bandwidth_mbps: 1000, pps: 100000}}}}
ports:
  - {{name: p0, interface: p0, driver: af_packet}}
  - {{name: p1, interface: p1, driver: af_packet}}
vrs:
  - name: {vr}
    resources: {resources}
    interfaces:
      - {{name: eth0, port: p0, mac: "{MACS[0]}", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: p1, mac: "{MACS[1]}", addresses: [10.2.0.1/24]}}
"""


@pytest.fixture
def net():
    n = two_hosts(f"tq{os.getpid() % 100000}")
    n.vr = f"{n.prefix}va"
    try:
        yield n
    finally:
        n.close()
        for v in ("va", "vb"):
            remove_vr_leftovers(f"{n.prefix}{v}")


def ctl(net, bin_dir, *args, ok=True):
    done = subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), *map(str, args)], capture_output=True, text=True,
                          timeout=60)
    if ok:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def test_requests_are_granted_enforced_and_shown_and_one_beyond_capacity_is_refused_by_resource(net, bin_dir, tmp_path):
    net.start_pearld(bin_dir, config(net.vr, "{bandwidth_mbps: 20, pps: 50000, fib_entries: 1000, filters: 8, cpu_percent: 50}"),
                     tmp_path)
    node = json.loads(ctl(net, bin_dir, "node", "--json").stdout)
    assert (node["capacity"]["bandwidth_mbps"], node["granted"]["bandwidth_mbps"], node["free"]["bandwidth_mbps"]) == (1000, 20, 980)
    assert node["granted"]["pps"] == 50000 and node["free"]["pps"] == 50000
    assert node["capacity"]["cpu_percent"] == os.cpu_count() * 100, "measured where not stated"
    assert [v["name"] for v in node["vrs"]] == [net.vr] and node["vrs"][0]["resources"]["filters"] == 8
    text = ctl(net, bin_dir, "node").stdout
    assert "bandwidth_mbps" in text and "980" in text and net.vr in text, text

    # Granted is enforced: the limits follow the request, and the rate cap holds traffic to it.
    vr = json.loads(ctl(net, bin_dir, "vr", "show", net.vr, "--json").stdout)
    assert {k: vr["limits"][k] for k in ("rate_mbps", "fib_entries", "filters", "cpu_percent")} == {
        "rate_mbps": 20, "fib_entries": 1000, "filters": 8, "cpu_percent": 50}
    udp = net.iperf("a", "b", "10.2.0.2", "-u", "-b", "100M", "-l", "1400", seconds=3)
    got = udp["sum"]["bits_per_second"] * (1 - udp["sum"]["lost_percent"] / 100) / 1e6
    print(f"{got:.1f} Mb/s through a VR granted 20 Mb/s")
    assert 10 < got < 26, f"{got:.1f} Mb/s through a VR granted 20 Mb/s"

    # A second VR asking for more bandwidth than is free: refused whole, naming the resource.
    refused = ctl(net, bin_dir, "vr", "create", f"{net.prefix}vb", "--interface",
                  "name=eth0,port=p0,mac=02:00:00:00:0d:10,address=10.9.0.1/24", "resources={bandwidth_mbps: 990}", ok=False)
    assert refused.returncode != 0, refused.stdout
    assert "vrs[1].resources.bandwidth_mbps" in refused.stderr and "980 free of 1000" in refused.stderr, refused.stderr
    assert not os.path.exists(f"/run/netns/{net.prefix}vb")
    assert len(api_get(net.api, "/v1/config")["vrs"]) == 1

    # Requests change at run time, one resource at a time, with the same rule.
    ctl(net, bin_dir, "vr", "set", net.vr, "resources.bandwidth_mbps=900")
    assert json.loads(ctl(net, bin_dir, "node", "--json").stdout)["granted"]["bandwidth_mbps"] == 900
    too_much = ctl(net, bin_dir, "vr", "set", net.vr, "resources.bandwidth_mbps=1200", ok=False)
    assert too_much.returncode != 0 and "resources.bandwidth_mbps" in too_much.stderr, too_much.stderr
    vr = json.loads(ctl(net, bin_dir, "vr", "show", net.vr, "--json").stdout)
    assert (vr["resources"]["bandwidth_mbps"], vr["resources"]["pps"], vr["limits"]["rate_mbps"]) == (900, 50000, 900)
    status, _, body = get(net, "/metrics")
    assert status == 200
    text = body.decode()
    assert 'pearl_node_resource_capacity{resource="bandwidth_mbps"} 1000' in text, text[-2000:]
    assert f'pearl_vr_resource_granted{{vr="{net.vr}",resource="bandwidth_mbps"}} 900' in text


def test_a_document_asking_more_than_the_node_has_does_not_start(net, bin_dir, tmp_path):
    with pytest.raises(RuntimeError) as refused:
        net.start_pearld(bin_dir, config(net.vr, "{pps: 200000}"), tmp_path)
    assert "vrs[0].resources.pps" in str(refused.value) and "100000" in str(refused.value), refused.value
    assert not os.path.exists(f"/run/netns/{net.vr}")
