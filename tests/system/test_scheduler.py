"""The output scheduler's weights and rates hold on real ports (within ±5 %): two VRs share an
output port capped at 20 Mb/s with queue weights 3:1; a VR capped at 10 Mb/s sends at 10 Mb/s, with one worker or two;
a VR's owner who re-weights its queues does not raise its VR's share of the port.
Traffic comes from paced generators in host namespaces; rates are measured at the sink."""

import json
import os
import pathlib
import subprocess
import time

import pytest
from scapy.all import Ether, PcapReader

from netns import Network, sh

HERE = pathlib.Path(__file__).resolve().parent
FRAME = 1000
SECONDS = 4.0


# VR namespaces are global: names of this test's own.
RED, BLUE = f"sr{os.getpid() % 100000}", f"sb{os.getpid() % 100000}"

ADMIN = "admin-token-of-the-scheduler-test"
BLUE_TOKEN = "blue-token-of-the-scheduler-test"


def config(port_rate, red_rate, weights, tokens=False, workers=1):
    rate = f", rate_mbps: {port_rate}" if port_rate else ""
    red_limit = f"\n    limits: {{rate_mbps: {red_rate}}}" if red_rate else ""
    api = f"api: {{admin_token: {ADMIN}}}" if tokens else ""
    blue_token = f"\n    token: {BLUE_TOKEN}" if tokens else ""
    return f"""
{api}
workers: {workers}
ports:
  - {{name: ir, interface: ir, driver: af_packet}}
  - {{name: ib, interface: ib, driver: af_packet}}
  - {{name: out, interface: out, driver: af_packet{rate}}}
vrs:
  - name: {RED}
    code: ipv4
    interfaces:
      - {{name: eth0, port: ir, mac: "02:00:00:00:01:00", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: out, mac: "02:00:00:00:01:01", addresses: [10.9.0.1/24]}}
    neighbors: [{{ip: 10.9.0.2, mac: "02:cc:00:00:00:09", interface: eth1}}]
    queues: [{{weight: {weights[0]}, length: 256}}]{red_limit}
  - name: {BLUE}
    code: ipv4
    interfaces:
      - {{name: eth0, port: ib, mac: "02:00:00:00:02:00", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: out, mac: "02:00:00:00:02:01", addresses: [10.9.0.1/24]}}
    neighbors: [{{ip: 10.9.0.2, mac: "02:cc:00:00:00:09", interface: eth1}}]
    queues: [{{weight: {weights[1]}, length: 256}}]{blue_token}
"""


@pytest.fixture
def net():
    n = Network(f"ts{os.getpid() % 100000}")
    try:
        n.host("hr", "ir", "02:aa:00:00:00:01", addrs=("10.1.0.2/24",))
        n.host("hb", "ib", "02:bb:00:00:00:01", addrs=("10.1.0.2/24",))
        n.host("sink", "out", "02:cc:00:00:00:09", addrs=("10.9.0.2/24",))
        yield n
    finally:
        n.close()


def measure(net, tmp_path, offered_mbps):
    """Offers `offered_mbps` from each VR's host; returns each VR's Mb/s at the sink over the
    steady middle of the run."""
    pcap = tmp_path / "sink.pcap"
    cap = subprocess.Popen(["ip", "netns", "exec", net.hosts["sink"], "tcpdump", "-i", "eth0", "-Q", "in",
                            "-s", "64", "-w", str(pcap), "udp"], stderr=subprocess.DEVNULL)
    net.procs.append(cap)
    time.sleep(1.0)
    senders = [subprocess.Popen(["ip", "netns", "exec", net.hosts[h], "python3", str(HERE / "blast.py"), "eth0",
                                 src, dst, "10.1.0.2", "10.9.0.2", str(FRAME), str(offered_mbps), str(SECONDS)],
                                stdout=subprocess.PIPE)
               for h, src, dst in (("hr", "02:aa:00:00:00:01", "02:00:00:00:01:00"),
                                   ("hb", "02:bb:00:00:00:01", "02:00:00:00:02:00"))]
    net.procs.extend(senders)
    for s in senders:
        s.wait(timeout=SECONDS + 20)
    time.sleep(0.5)
    cap.terminate()
    cap.wait(timeout=10)
    times = {"02:00:00:00:01:01": [], "02:00:00:00:02:01": []}
    for f in PcapReader(str(pcap)):
        if f[Ether].src in times:
            times[f[Ether].src].append(float(f.time))
    start = min(t[0] for t in times.values() if t) + 1.0
    end = start + SECONDS - 2.0
    return [sum(1 for t in ts if start <= t < end) * FRAME * 8 / (end - start) / 1e6 for ts in times.values()]


def test_weights_share_a_capped_port(net, bin_dir, tmp_path):
    net.start_pearld(bin_dir, config(port_rate=20, red_rate=None, weights=(3, 1)), tmp_path)
    red, blue = measure(net, tmp_path, offered_mbps=30)
    assert red == pytest.approx(15, rel=0.05) and blue == pytest.approx(5, rel=0.05), (red, blue)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_vr_rate_cap_holds_and_the_rest_goes_to_others(net, bin_dir, tmp_path, workers):
    """Each VR's traffic is one flow, which one worker carries: with two workers the cap is
    still the VR's whole rate, not half of it."""
    net.start_pearld(bin_dir, config(port_rate=None, red_rate=10, weights=(1, 1), workers=workers), tmp_path)
    red, blue = measure(net, tmp_path, offered_mbps=25)
    assert red == pytest.approx(10, rel=0.05), red
    assert blue == pytest.approx(25, rel=0.05), blue


def test_an_owner_reweighting_its_queues_keeps_its_vrs_share(net, bin_dir, tmp_path):
    net.start_pearld(bin_dir, config(port_rate=20, red_rate=None, weights=(3, 1), tokens=True), tmp_path)
    ctl = [str(bin_dir / "pearlctl"), "--socket", str(net.api)]
    # Blue's owner splits its traffic over two queues weighted 9 each: 18 against red's 3 if
    # queue weights were the VR's share; blue's share stays the 1 the operator gave it.
    done = subprocess.run([*ctl, "--token", BLUE_TOKEN, "queue", "set", BLUE, "9:256", "9:256"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    red, blue = measure(net, tmp_path, offered_mbps=30)
    assert red == pytest.approx(15, rel=0.05) and blue == pytest.approx(5, rel=0.05), (red, blue)
    shown = subprocess.run([*ctl, "--token", ADMIN, "vr", "show", BLUE, "--json"], capture_output=True, text=True)
    assert json.loads(shown.stdout)["limits"]["share"] == 1, shown.stdout
