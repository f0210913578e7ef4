"""Every counter a user sees agrees, offloaded traffic included: a TCP stream (iperf3, hosts at
kernel defaults) through a fast VR with flow offload (on by default), most of it forwarded by
the kernel for the VR, is counted alike by the VR's row, its queue rows, the port rows,
`/metrics`, `pearlctl stats` and the dashboard (in headless Chromium), and as what iperf3 moved;
a kernel VR's packets, forwarded by its own kernel, show as forwarded; the dashboard's rates
read with their units at any rate."""

import json
import os
import re
import subprocess
import threading
import time

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from netns import one_vr, two_hosts
from test_api import get, start_pearld_tcp
from test_dashboard import CHROMEDRIVER, in_netns

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, "crates", "pearld", "src", "dashboard.html")


@pytest.fixture
def rig(bin_dir, tmp_path):
    started = []

    def start(kind="fast"):
        prefix = f"tc{os.getpid() % 10000}{len(started)}"
        n = two_hosts(prefix)
        started.append(n)
        n.vr, n.bin_dir = f"{prefix}v", bin_dir
        start_pearld_tcp(n, bin_dir, one_vr(n.vr, kind=kind), tmp_path)
        return n

    yield start
    for n in started:
        n.close()


@pytest.fixture
def browser():
    """Headless Chromium, started in the namespace of the pearld it is pointed at (`open(n)`)."""
    if not os.path.exists(CHROMEDRIVER):
        pytest.fail("chromedriver is missing: apt-get install chromium chromium-driver (scripts/setup.sh does)")
    drivers = []

    def open_(n):
        options = webdriver.ChromeOptions()
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,1300"):
            options.add_argument(arg)
        options.binary_location = "/usr/bin/chromium"
        with in_netns(n.router):
            d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        drivers.append(d)
        d.get(n.url + "/")
        return d

    yield open_
    for d in drivers:
        d.quit()


READ_PAGE = """
const rows = (sel) => [...document.querySelectorAll(sel)].map((r) => ({...r.dataset, cells: [...r.cells].map((c) => c.textContent)}));
return {updates: Number(document.body.dataset.updates), vrs: rows("#vrs tbody tr"), queues: rows("#queues tbody tr"),
        ports: rows("#ports tbody tr")};
"""


def page_after(driver, updates_past):
    """The page once it has drawn a few snapshots newer than `updates_past`."""
    deadline = time.time() + 10
    while time.time() < deadline:
        page = driver.execute_script(READ_PAGE)
        if page["updates"] >= updates_past + 4:
            return page
        time.sleep(0.1)
    raise AssertionError(f"the dashboard did not update: {page}")


def vr_of(stats, name):
    return next(v for v in stats["vrs"] if v["name"] == name)


def metrics(n):
    status, _, body = get(n, "/metrics")
    assert status == 200
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def pearlctl(n, *args):
    done = subprocess.run([str(n.bin_dir / "pearlctl"), "--socket", str(n.api), *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def table_row(text, start):
    return next(line for line in text.splitlines() if line.startswith(start)).split()


def close(a, b, rel=0.01):
    return a == pytest.approx(b, rel=rel)


def test_a_tcp_stream_through_an_offloading_vr_is_counted_alike_everywhere(rig, browser):
    n = rig()
    driver = browser(n)
    before = n.stats()
    during = {}

    def sample_rates():
        time.sleep(2.5)
        page = driver.execute_script(READ_PAGE)
        during["page"] = page_after(driver, page["updates"])
        during["metrics"] = metrics(n)

    sampler = threading.Thread(target=sample_rates)
    sampler.start()
    end = n.iperf("a", "b", "10.2.0.2", seconds=5)
    sampler.join()
    moved = end["sum_received"]["bytes"]
    time.sleep(0.5)
    after = n.stats()
    shown = page_after(driver, driver.execute_script(READ_PAGE)["updates"])
    m, table = metrics(n), pearlctl(n, "stats")
    final = n.stats()
    v0, v1, vf = vr_of(before, n.vr), vr_of(after, n.vr), vr_of(final, n.vr)
    d = lambda key: v1[key] - v0[key]  # noqa: E731

    # The VR row: all of the stream (headers, and the acknowledgements the other way, add a
    # little), most of it forwarded by the kernel.
    assert moved <= d("forwarded_bytes") <= 1.05 * moved, (d("forwarded_bytes"), moved)
    assert d("offloaded_bytes") > 0.9 * d("forwarded_bytes"), (d("offloaded_bytes"), d("forwarded_bytes"))

    # Queue rows: what the VR sent out of each port, offloaded frames included.
    queues = {(q["port"], q["queue"]): q for q in v1["queues"]}
    q0 = {(q["port"], q["queue"]): q for q in v0["queues"]}
    qd = lambda port, key: queues[(port, 0)][key] - q0[(port, 0)][key]  # noqa: E731
    assert close(sum(q["sent_packets"] for q in v1["queues"]) - sum(q["sent_packets"] for q in v0["queues"]), d("forwarded_packets")), \
        (v0["queues"], v1["queues"], d("forwarded_packets"))
    assert close(qd("p1", "sent_bytes") + qd("p0", "sent_bytes"), d("forwarded_bytes"))
    assert close(qd("p1", "offloaded_bytes") + qd("p0", "offloaded_bytes"), d("offloaded_bytes"))

    # Port rows: the stream comes in on p0 and leaves by p1, offloaded part and all.
    ports = {p["name"]: p for p in after["ports"]}
    ports0 = {p["name"]: p for p in before["ports"]}
    pd = lambda port, key: ports[port][key] - ports0[port][key]  # noqa: E731
    assert close(pd("p1", "tx_bytes"), qd("p1", "sent_bytes")), (pd("p1", "tx_bytes"), qd("p1", "sent_bytes"))
    assert close(pd("p0", "rx_bytes"), qd("p1", "sent_bytes")), (pd("p0", "rx_bytes"), qd("p1", "sent_bytes"))
    assert close(pd("p1", "offloaded_tx_bytes"), qd("p1", "offloaded_bytes"))
    assert close(pd("p0", "offloaded_rx_bytes"), qd("p1", "offloaded_bytes"))

    # /metrics and pearlctl, read after the stream, against the snapshots around them.
    vr_l, q_l = f'vr="{n.vr}"', f'vr="{n.vr}",port="p1",queue="0"'
    for key, value in [(f"pearl_vr_forwarded_bytes_total{{{vr_l}}}", vf["forwarded_bytes"]),
                       (f"pearl_vr_offloaded_packets_total{{{vr_l}}}", vf["offloaded_packets"]),
                       (f"pearl_queue_sent_bytes_total{{{q_l}}}", queues[("p1", 0)]["sent_bytes"]),
                       (f"pearl_queue_offloaded_bytes_total{{{q_l}}}", queues[("p1", 0)]["offloaded_bytes"]),
                       ('pearl_port_offloaded_bytes_total{port="p1",direction="tx"}', ports["p1"]["offloaded_tx_bytes"]),
                       ('pearl_port_tx_bytes_total{port="p1"}', ports["p1"]["tx_bytes"])]:
        assert close(m[key], value), (key, m[key], value)
    row = table_row(table, n.vr + " ")
    assert close(int(row[3]), vf["forwarded_packets"]) and close(int(row[4]), vf["offloaded_packets"]), row
    qrow = table_row(table, f"{n.vr}/p1/0")
    assert close(int(qrow[2]), queues[("p1", 0)]["sent_packets"]) and int(qrow[3]) > 0, qrow

    # The dashboard, against the same counters.
    page_vr = next(r for r in shown["vrs"] if r["vr"] == n.vr)
    assert close(int(page_vr["sentBytes"]), sum(q["sent_bytes"] for q in vf["queues"])), (page_vr, vf["queues"])
    assert close(int(page_vr["forwardedPackets"]), vf["forwarded_packets"]), page_vr
    page_q = next(r for r in shown["queues"] if r["queue"] == f"{n.vr}/p1/0")
    assert close(int(page_q["sentPackets"]), queues[("p1", 0)]["sent_packets"]), page_q
    assert close(int(page_q["offloadedPackets"]), queues[("p1", 0)]["offloaded_packets"]), page_q
    page_p1 = next(r for r in shown["ports"] if r["port"] == "p1")
    assert close(int(page_p1["txBytes"]), ports["p1"]["tx_bytes"]), page_p1

    # Rates while the stream ran: the dashboard's and /metrics' agree with iperf3's, in units
    # that read (Gb/s or Mb/s, not "0.00").
    bps = end["sum_received"]["bits_per_second"]
    live = next(r for r in during["page"]["vrs"] if r["vr"] == n.vr)
    assert close(float(live["mbps"]) * 1e6, bps, rel=0.25), (live, bps)
    assert re.fullmatch(r"[\d.]+ [MG]b/s", live["cells"][6]), live["cells"]
    fwd_rate = during["metrics"][f"pearl_vr_forwarded_bits_per_second{{{vr_l}}}"]
    q_rate = during["metrics"][f"pearl_queue_sent_bits_per_second{{{q_l}}}"]
    assert close(fwd_rate, bps, rel=0.25) and close(q_rate, bps, rel=0.25), (fwd_rate, q_rate, bps)


def test_a_kernel_vrs_packets_show_as_forwarded_by_its_kernel(rig):
    n = rig(kind="kernel")
    before = vr_of(n.stats(), n.vr)
    end = n.iperf("a", "b", "10.2.0.2", "-u", "-b", "10M", "-l", "1000", seconds=1)
    time.sleep(0.3)
    after = vr_of(n.stats(), n.vr)
    forwarded = after["kernel_forwarded_packets"] - (before["kernel_forwarded_packets"] or 0)
    # The datagrams one way, and iperf3's control connection both ways.
    arrived = end["sum"]["packets"] - end["sum"]["lost_packets"]
    assert arrived > 500 and arrived <= forwarded <= 1.05 * arrived + 100, (forwarded, end["sum"])
    assert after["forwarded_packets"] == 0, "the fast path forwarded none of a kernel VR's packets"
    # What the kernel forwarded left through the VR's queues (its TAPs' frames are queued for
    # their ports), its own few frames (ARP) beside.
    queued = sum(q["sent_packets"] for q in after["queues"]) - sum(q["sent_packets"] for q in before["queues"])
    assert forwarded <= queued <= 1.01 * forwarded + 20, (queued, forwarded)
    row = table_row(pearlctl(n, "stats"), n.vr + " ")
    assert int(row[3]) >= after["kernel_forwarded_packets"], row
    assert metrics(n)[f'pearl_vr_kernel_forwarded_packets_total{{vr="{n.vr}"}}'] >= after["kernel_forwarded_packets"]


def dashboard_js(expr):
    """Evaluates `expr` with the dashboard's fmtRate and scale in node."""
    page = open(DASHBOARD).read()
    functions = [re.search(rf"\nfunction {name}\([\s\S]*?\n}}\n", page).group(0) for name in ("fmtRate", "scale")]
    done = subprocess.run(["node", "-e", "".join(functions) + f"console.log(JSON.stringify({expr}));"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_dashboards_rates_and_axis_ticks_read_at_any_rate():
    shown = dashboard_js("[[1.8, 'pkt/s'], [0, 'b/s'], [999.7, 'pkt/s'], [320e3, 'b/s'], [5.0234e9, 'b/s'], [0.04, 'pkt/s']]"
                         ".map(([v, u]) => fmtRate(v, u))")
    assert shown == ["1.8 pkt/s", "0 b/s", "1 kpkt/s", "320 kb/s", "5.02 Gb/s", "0.04 pkt/s"]
    # A chart's ticks, from a trickle to line rate: distinct, and none but the first reads 0.
    for top in (0.3, 7, 2e3, 45e3, 2.5e6, 9.9e9):
        ticks = dashboard_js(f"(() => {{ const {{step, ymax}} = scale({top}); const t = [];"
                             f" for (let v = 0; v <= ymax + step / 2; v += step) t.push(fmtRate(v, 'b/s')); return t; }})()")
        assert len(set(ticks)) == len(ticks) and ticks[0] == "0 b/s" and len(ticks) >= 3, (top, ticks)
