"""The dashboard's Networks view in a real browser (headless Chromium): a net of two fast VRs on a
wire and a host on each, drawn with every VR, host and link; `pearlctl link set` takes the wire
down and the page shows it down within seconds, as `/v1/nets` says; under a ping flood the
page's link rates are non-zero and agree with the API's link counters."""

import json
import os
import subprocess
import time

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from netns import Network, api_get, remove_netns, sh
from test_api import start_pearld_tcp
from test_dashboard import CHROMEDRIVER, in_netns

PREFIX = f"k62{os.getpid() % 1000}"
A, B = f"{PREFIX}a", f"{PREFIX}b"
WIRE = f"{A}-{B}"


def net_file():
    vr = lambda name, k, far, via: f"""        - name: {name}
          interfaces:
            - {{name: eth0, mac: "02:00:00:0{k}:00:00", addresses: [10.{k}.0.1/24]}}
            - {{name: eth1, mac: "02:00:00:0{k}:00:01", addresses: [10.9.0.{k}/24]}}
          routes: [{{prefix: {far}, via: {via}}}]"""  # noqa: E731
    host = lambda name, k: f"""        - name: {name}
          interfaces: [{{name: eth0, addresses: [10.{k}.0.2/24]}}]
          routes: [{{to: default, via: 10.{k}.0.1}}]"""  # noqa: E731
    return f"""vrs: []
nets:
  {PREFIX}:
    vrs:
{vr(A, 1, "10.2.0.0/24", "10.9.0.2")}
{vr(B, 2, "10.1.0.0/24", "10.9.0.1")}
    hosts:
{host("h1", 1)}
{host("h2", 2)}
    links:
      - {{a: {A}/eth1, b: {B}/eth1}}
      - {{a: h1/eth0, b: {A}/eth0}}
      - {{a: h2/eth0, b: {B}/eth0}}
"""


@pytest.fixture
def net(bin_dir, tmp_path):
    n = Network(PREFIX)
    try:
        start_pearld_tcp(n, bin_dir, net_file(), tmp_path)
        sh("ping", "-c", "3", "-i", "0.2", "-W", "2", "10.2.0.2", ns=f"{PREFIX}-h1")
        yield n
    finally:
        n.close()
        for ns in (f"{PREFIX}-h1", f"{PREFIX}-h2", A, B):
            remove_netns(ns)


@pytest.fixture
def browser(net):
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,1300"):
        options.add_argument(arg)
    options.binary_location = "/usr/bin/chromium"
    with in_netns(net.router):
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            yield driver
        finally:
            driver.quit()


READ_NET = """
const svg = document.querySelector(`svg[data-net="${arguments[0]}"]`);
if (!svg) return null;
const all = (sel) => [...svg.querySelectorAll(sel)];
return {
  vrs: all("g.vr").map((g) => g.dataset.vr), hosts: all("g.host").map((g) => g.dataset.host),
  links: Object.fromEntries(all("line[data-link]").map((l) => [l.dataset.link, {state: l.dataset.state, cls: l.getAttribute("class"),
    colour: getComputedStyle(l).stroke, ab: Number(l.dataset.bpsAToB), ba: Number(l.dataset.bpsBToA)}])),
  label: Object.fromEntries(all("text[data-link-rate]").map((t) => [t.dataset.linkRate, t.textContent])),
  updates: Number(document.body.dataset.netUpdates || 0),
};
"""


def read_net(driver):
    return driver.execute_script(READ_NET, PREFIX)


def wait_page(driver, what, condition, timeout=10):
    deadline, page = time.time() + timeout, None
    while time.time() < deadline:
        page = read_net(driver)
        if page and condition(page):
            return page
        time.sleep(0.1)
    raise AssertionError(f"the page never showed {what}: {page}")


def ctl(bin_dir, net, *args):
    done = subprocess.run(["ip", "netns", "exec", net.router, str(bin_dir / "pearlctl"), "--socket", str(net.api), *args],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done


def test_the_networks_view_draws_the_net_live_with_link_state_and_rates(net, browser, bin_dir):
    browser.get(net.url + "/")
    page = wait_page(browser, "the net", lambda p: len(p["links"]) == 3 and p["updates"] >= 2)
    assert sorted(page["vrs"]) == sorted([A, B]) and sorted(page["hosts"]) == ["h1", "h2"], page
    api = api_get(net.api, f"/v1/nets/{PREFIX}")
    assert sorted(page["links"]) == sorted(l["name"] for l in api["links"]), (page, api)
    assert all(l["state"] == "up" and l["cls"] == "up" for l in page["links"].values()), page

    # A ping flood from h1 to h2 crosses the wire both ways: the page's rates move with the API's.
    flood = subprocess.Popen(["ip", "netns", "exec", f"{PREFIX}-h1", "ping", "-f", "-s", "1000", "-w", "8", "10.2.0.2"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)
        before = api_get(net.api, f"/v1/nets/{PREFIX}")
        page = wait_page(browser, "rates on the wire", lambda p: p["links"][WIRE]["ab"] > 0 and p["links"][WIRE]["ba"] > 0)
        time.sleep(2)
        after = api_get(net.api, f"/v1/nets/{PREFIX}")
        page = read_net(browser)
    finally:
        flood.wait(timeout=20)
    wire = lambda r: next(l for l in r["links"] if l["name"] == WIRE)  # noqa: E731
    dt = after["time_seconds"] - before["time_seconds"]
    api_bps = (wire(after)["traffic"]["a_to_b"]["bytes"] - wire(before)["traffic"]["a_to_b"]["bytes"]) * 8 / dt
    print("page", page["links"][WIRE], page["label"][WIRE], "api", api_bps)
    assert api_bps > 100_000, (before, after)
    # The same flood measured over different seconds: within a factor of two of each other.
    assert 0.5 * api_bps < page["links"][WIRE]["ab"] < 2 * api_bps, (page["links"][WIRE], api_bps)
    assert "b/s" in page["label"][WIRE], page["label"]

    ctl(bin_dir, net, "link", "set", PREFIX, WIRE, "down")
    t0 = time.time()
    page = wait_page(browser, "the wire down", lambda p: p["links"][WIRE]["state"] == "down", timeout=5)
    print(f"shown down after {time.time() - t0:.2f} s")
    api = api_get(net.api, f"/v1/nets/{PREFIX}")
    assert {l["name"]: l["state"] for l in api["links"]} == {k: v["state"] for k, v in page["links"].items()}, (api, page)
    assert page["links"][WIRE]["cls"] == "down" and page["links"][WIRE]["colour"] != "rgb(47, 163, 107)", page
    assert page["label"][WIRE].endswith("down"), page["label"]
    ctl(bin_dir, net, "link", "set", PREFIX, WIRE, "up")
    wait_page(browser, "the wire up again", lambda p: p["links"][WIRE]["state"] == "up", timeout=5)
