"""The dashboard in a real browser: headless Chromium (Debian's, driven by its chromedriver)
loads the page pearld serves while traffic flows through two VRs; the charts move, and the
numbers the page shows agree with `pearlctl stats --json`. Leaves a screenshot in docs/."""

import contextlib
import ctypes
import json
import os
import pathlib
import subprocess
import time

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from netns import Network, api_get
from test_api import HOSTS, blast, config, free_port, start_pearld_tcp, vr_names

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMEDRIVER = "/usr/bin/chromedriver"
CLONE_NEWNET = 0x40000000
CHARTS = ("vr-pps", "vr-mbps", "queue-pps", "queue-mbps")
PREFIX = f"td{os.getpid() % 100000}"
RED, BLUE = vr_names(PREFIX)
SENT_MBPS = {RED: 16, BLUE: 6}
TRAFFIC_SECONDS = 20
# When the screenshot is taken: the charts hold this much history by then.
SCREENSHOT_AT = 15


@contextlib.contextmanager
def in_netns(name):
    """Moves this thread (and what it starts: chromedriver, Chromium) into namespace `name`:
    pearld's TCP API listens on the loopback there."""
    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/thread-self/ns/net") as home, open(f"/run/netns/{name}") as target:
        if libc.setns(target.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {name}")
        try:
            yield
        finally:
            libc.setns(home.fileno(), CLONE_NEWNET)


@pytest.fixture
def net(bin_dir, tmp_path):
    n = Network(PREFIX)
    try:
        for host, port, mac, addr, _ in HOSTS:
            n.host(host, port, mac, addrs=(addr,))
        start_pearld_tcp(n, bin_dir, config(PREFIX), tmp_path)
        yield n
    finally:
        n.close()


@pytest.fixture
def browser(net):
    if not os.path.exists(CHROMEDRIVER):
        pytest.fail("chromedriver is missing: apt-get install chromium chromium-driver (scripts/setup.sh does)")
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,1300",
                "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.binary_location = "/usr/bin/chromium"
    with in_netns(net.router):
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            yield driver
        finally:
            driver.quit()


READ_PAGE = """
const rows = (sel) => [...document.querySelectorAll(sel)].map((r) => ({...r.dataset}));
const charts = {};
for (const id of arguments[0]) {
  const c = document.getElementById(id);
  charts[id] = {image: c.toDataURL(), points: Number(c.dataset.points || 0)};
}
return {updates: Number(document.body.dataset.updates), vrs: rows("#vrs tbody tr"), queues: rows("#queues tbody tr"), charts};
"""


def read_page(driver):
    return driver.execute_script(READ_PAGE, list(CHARTS))


def pearlctl_stats(bin_dir, net):
    done = subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), "stats", "--json"],
                          capture_output=True, text=True, timeout=10)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def sent(stats, vr, port=None, queue=None):
    v = next(x for x in stats["vrs"] if x["name"] == vr)
    return sum(q["sent_packets"] for q in v["queues"] if port is None or (q["port"], q["queue"]) == (port, queue))


def wait_for(driver, condition, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        page = read_page(driver)
        if condition(page):
            return page
        time.sleep(0.1)
    raise AssertionError(f"the page never got there: {page}")


def test_the_dashboard_charts_live_traffic_and_agrees_with_pearlctl(net, browser, bin_dir):
    started = time.monotonic()
    senders = [blast(net, "ra", SENT_MBPS[RED], TRAFFIC_SECONDS, "02:00:00:00:01:00"),
               blast(net, "ba", SENT_MBPS[BLUE], TRAFFIC_SECONDS, "02:00:00:00:02:00")]
    browser.get(net.url + "/")
    assert browser.title == "PEARL dashboard"

    # VRs with their kinds and ports, as pearld describes them.
    page = wait_for(browser, lambda p: p["updates"] >= 8 and len(p["vrs"]) == 2)
    vrs = {r["vr"]: r for r in page["vrs"]}
    assert vrs[RED]["kind"] == "fast" and vrs[RED]["ports"] == "ra rb"
    assert vrs[BLUE]["ports"] == "ba bb"
    assert {r["queue"] for r in page["queues"]} == {f"{RED}/rb/0", f"{BLUE}/bb/0", f"{BLUE}/bb/1",
                                                    f"{RED}/ra/0", f"{BLUE}/ba/0", f"{BLUE}/ba/1"}

    # Four updates a second, and the charts move.
    time.sleep(1.0)
    later = read_page(browser)
    assert later["updates"] - page["updates"] >= 3, (page["updates"], later["updates"])
    for chart in CHARTS:
        assert later["charts"][chart]["image"] != page["charts"][chart]["image"], f"{chart} did not move"
        assert later["charts"][chart]["points"] > page["charts"][chart]["points"]

    # Counters: pearlctl's reading falls between two readings of the page around it (the page
    # polls every 250 ms, so one taken 0.7 s later has seen a snapshot newer than pearlctl's).
    time.sleep(2.0)
    before = read_page(browser)
    stats = pearlctl_stats(bin_dir, net)
    time.sleep(0.7)
    after = read_page(browser)
    for vr in (RED, BLUE):
        row = lambda p: next(r for r in p["vrs"] if r["vr"] == vr)  # noqa: E731
        assert int(row(before)["sentPackets"]) <= sent(stats, vr) <= int(row(after)["sentPackets"]), vr
        assert sent(stats, vr) > 0
    for q in before["queues"]:
        row_after = next(r for r in after["queues"] if r["queue"] == q["queue"])
        assert int(q["sentPackets"]) <= sent(stats, q["vr"], q["port"], int(q["index"])) <= int(row_after["sentPackets"])

    # Rates: the page's against pearlctl's over two seconds, and both against what was offered.
    first = pearlctl_stats(bin_dir, net)
    time.sleep(2.0)
    second = pearlctl_stats(bin_dir, net)
    page = read_page(browser)
    dt = second["time_seconds"] - first["time_seconds"]
    for vr, mbps in SENT_MBPS.items():
        ctl_pps = (sent(second, vr) - sent(first, vr)) / dt
        page_pps = float(next(r for r in page["vrs"] if r["vr"] == vr)["pps"])
        assert page_pps == pytest.approx(ctl_pps, rel=0.2), (vr, page_pps, ctl_pps)
        assert ctl_pps == pytest.approx(mbps * 1e6 / 8 / 1000, rel=0.25), (vr, ctl_pps)
    blue_q1 = float(next(r for r in page["queues"] if r["queue"] == f"{BLUE}/bb/1")["pps"])
    assert blue_q1 == pytest.approx(SENT_MBPS[BLUE] * 1e6 / 8 / 1000, rel=0.25), "blue's traffic runs in its queue 1"

    # A picture for the docs, once the charts hold some history.
    time.sleep(max(0.0, SCREENSHOT_AT - (time.monotonic() - started)))
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, height + 200)
    time.sleep(0.5)
    (ROOT / "docs").mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ROOT / "docs" / "dashboard.png"))

    # Busiest first (red is sent more than twice blue's rate), and a search names one VR.
    assert [r["vr"] for r in read_page(browser)["vrs"]] == [RED, BLUE]
    browser.find_element("id", "vr-search").send_keys(BLUE[-3:].upper())
    page = wait_for(browser, lambda p: [r["vr"] for r in p["vrs"]] == [BLUE])
    assert {r["vr"] for r in page["queues"]} == {BLUE}
    title = browser.find_element("id", "vrs-title").text
    assert "1" in title and BLUE[-3:].upper() in title, title
    for s in senders:
        s.wait(timeout=TRAFFIC_SECONDS + 20)


READ_VR_PAGE = """
const page = document.getElementById("vr-page");
const rows = (sel) => [...document.querySelectorAll(sel)].map((r) => ({...r.dataset}));
const trace = document.getElementById("trace-out");
return {shown: !page.hidden, title: document.getElementById("vr-page-title").textContent, fib: {...document.getElementById("vr-fib").dataset},
        drops: rows("#vr-drops tbody tr"), health: document.getElementById("vr-health").textContent,
        updates: Number(document.body.dataset.updates),
        trace: trace.hidden ? null : {status: Number(trace.dataset.status), text: trace.textContent}};
"""


def top_reasons(vr):
    """The page's ranking, from one VR of /v1/stats: every stage's reasons, most first."""
    out = [(stage, r, n) for stage, key in (("program", "drops"), ("exception", "exceptions"), ("kernel", "kernel_drops"))
           for r, n in (vr.get(key) or {}).items() if n > 0]
    if vr["queue_drops"]:
        out.append(("queue", "queue_full", vr["queue_drops"]))
    return sorted(out, key=lambda x: -x[2])[:8]


def test_a_vrs_page_shows_its_fib_size_top_drop_reasons_and_a_trace_button(net, browser, bin_dir):
    """The per-VR page (#vr=NAME): the FIB's size as /v1/vrs/{vr}/fib counts it, the drop
    reasons as /v1/stats counts them after traffic to an address the VR has no route to, its
    health; and "trace 10 packets" shows what POST /v1/vrs/{vr}/trace answers (an error while
    pearld has no such endpoint) without stopping the page."""
    blast(net, "ra", 1, 2, "02:00:00:00:01:00", dst_ip="198.51.100.9").wait(timeout=20)
    browser.get(net.url + "/")
    wait_for(browser, lambda p: p["updates"] >= 2 and len(p["vrs"]) == 2)
    browser.find_element("link text", RED).click()

    def vr_page(check, timeout=10):
        deadline = time.time() + timeout
        while True:
            page = browser.execute_script(READ_VR_PAGE)
            if check(page):
                return page
            if time.time() > deadline:
                raise AssertionError(f"the VR page never got there: {page}")
            time.sleep(0.1)

    page = vr_page(lambda p: p["shown"] and "v4" in p["fib"])
    assert page["title"] == f"VR {RED}"
    fib = {f: api_get(net.api, f"/v1/vrs/{RED}/fib?family={f}&limit=1")["total"] for f in ("v4", "v6")}
    assert {f: int(page["fib"][f]) for f in ("v4", "v6")} == fib and fib["v4"] >= 2, (page["fib"], fib)

    stats = next(v for v in api_get(net.api, f"/v1/stats?name={RED}")["vrs"] if v["name"] == RED)
    want = top_reasons(stats)
    assert want and want[0][2] >= 100, f"the frames to 198.51.100.9 are counted somewhere: {stats}"
    page = vr_page(lambda p: [(d["stage"], d["reason"]) for d in p["drops"]][:1] == [want[0][:2]])
    assert int(page["drops"][0]["count"]) == want[0][2], (page["drops"], want)
    if stats.get("routed"):
        assert "routes in the fast path" in page["health"], page["health"]
    (ROOT / "docs").mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ROOT / "docs" / "dashboard-vr.png"))

    browser.find_element("id", "trace-button").click()
    page = vr_page(lambda p: p["trace"] is not None)
    if page["trace"]["status"] == 200:
        assert json.loads(page["trace"]["text"]), page["trace"]
    else:
        assert page["trace"]["status"] in (404, 405), page["trace"]
    later = vr_page(lambda p: p["updates"] >= page["updates"] + 3)
    assert later["shown"], "the page goes on after a trace"
    browser.find_element("link text", "all VRs").click()
    vr_page(lambda p: not p["shown"])


FETCH = """
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=10)
    print(r.status, r.headers["Content-Type"]); sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.headers["Content-Type"]); sys.stdout.write(e.read().decode())
"""


def test_pearlctl_dashboard_serves_the_page_read_only_on_a_loopback_address(net, bin_dir):
    """What a package user opens: `pearlctl dashboard` serves the page and the reads it makes,
    through pearlctl's own connection, and nothing else (the API can start programs as root)."""
    port = free_port(net.router)
    ctl = [str(bin_dir / "pearlctl"), "--socket", str(net.api), "dashboard"]
    wide = subprocess.run(["ip", "netns", "exec", net.router, *ctl, "--listen", "0.0.0.0:8077"], capture_output=True, text=True, timeout=10)
    assert wide.returncode == 2 and "--listen: 0.0.0.0:8077 is not a loopback address" in wide.stderr, wide.stderr
    proc = subprocess.Popen(["ip", "netns", "exec", net.router, *ctl, "--listen", f"127.0.0.1:{port}"], stdout=subprocess.PIPE, text=True)
    net.procs.append(proc)
    url = f"http://127.0.0.1:{port}"
    assert proc.stdout.readline().startswith(f"dashboard on {url}/ (read-only")

    def fetch(path):
        done = subprocess.run(["ip", "netns", "exec", net.router, "python3", "-c", FETCH, url + path], capture_output=True, text=True, timeout=20)
        head, _, body = done.stdout.partition("\n")
        return int(head.split()[0]), body

    status, page = fetch("/")
    assert status == 200 and "<title>PEARL dashboard</title>" in page
    status, body = fetch("/v1/stats?sort=busiest&limit=20")
    assert status == 200 and {v["name"] for v in json.loads(body)["vrs"]} == {RED, BLUE}
    for path in ("/v1/config", "/metrics", f"/v1/vrs/{RED}"):
        status, body = fetch(path)
        assert status == 403 and "read" in body, (path, status, body)
