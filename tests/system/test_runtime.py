"""Everything the configuration says, changed while pearld runs, through pearlctl: a VR created
next to one that forwards carries traffic, and deleting it leaves nothing; a refused change
names the field and leaves the configuration, the VR's kernel routes and forwarding exactly as
they were; another VR's forwarding loses nothing while a VR is created, changed and deleted
again and again; routes added with pearlctl reach the VR's kernel and its fast path; a VR's
token reaches its own VR only; and every change survives pearld being killed."""

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from netns import HERE, Network, sh
from test_slow_path import netns_names

ADMIN = "admin-token-0123456789abcdef"
TOKEN_A = "token-of-vr-a-0123456789"
TOKEN_B = "token-of-vr-b-0123456789"
FRAME = 1000
# host: (router port, MAC, address)
HOSTS = {
    "a": ("p0", "02:aa:00:00:00:01", "10.1.0.2/24"),
    "b": ("p1", "02:aa:00:00:00:02", "10.2.0.2/24"),
    "c": ("p2", "02:bb:00:00:00:01", "10.1.0.2/24"),
    "d": ("p3", "02:bb:00:00:00:02", "10.2.0.2/24"),
}
MACS = {"a": ("02:00:00:00:0a:00", "02:00:00:00:0a:01"), "b": ("02:00:00:00:0b:00", "02:00:00:00:0b:01")}


def vr_spec(name, which, **extra):
    """VR `which` ("a": ports p0/p1, hosts a/b; "b": ports p2/p3, hosts c/d), with static
    neighbours for its hosts so that it forwards without ARP."""
    ports = ("p0", "p1") if which == "a" else ("p2", "p3")
    hosts = ("a", "b") if which == "a" else ("c", "d")
    spec = {
        "name": name,
        "interfaces": [
            {"name": "eth0", "port": ports[0], "mac": MACS[which][0], "addresses": ["10.1.0.1/24"]},
            {"name": "eth1", "port": ports[1], "mac": MACS[which][1], "addresses": ["10.2.0.1/24"]},
        ],
        "neighbors": [
            {"ip": "10.1.0.2", "mac": HOSTS[hosts[0]][1], "interface": "eth0"},
            {"ip": "10.2.0.2", "mac": HOSTS[hosts[1]][1], "interface": "eth1"},
        ],
    }
    spec.update(extra)
    return spec


def config(vrs, api=None):
    """The configuration as JSON (which is YAML): every port from the start (ports cannot
    change at run time), the VRs given."""
    doc = {"workers": 1, "ports": [{"name": p, "interface": p, "driver": "af_packet"} for p, _, _ in HOSTS.values()],
           "vrs": vrs}
    if api:
        doc["api"] = api
    return json.dumps(doc, indent=1)


class Rig:
    """Four hosts around one pearld; VR names from the test's prefix."""

    def __init__(self, tag):
        self.net = Network(f"{tag}{os.getpid() % 100000}")
        self.a, self.b = f"{self.net.prefix}-va", f"{self.net.prefix}-vb"
        for host, (port, mac, addr) in HOSTS.items():
            self.net.host(host, port, mac, addrs=(addr,), routes=(f"route add default via {addr[:-4]}1",))

    def start(self, bin_dir, tmp_path, text):
        self.tmp = tmp_path
        self.args = ("--state", tmp_path / "state")
        self.text = text
        self.net.start_pearld(bin_dir, text, tmp_path, extra_args=self.args)

    def ctl(self, bin_dir, *args, token=None, env_token=None):
        env = dict(os.environ)
        env.pop("PEARL_TOKEN", None)
        if env_token:
            env["PEARL_TOKEN"] = env_token
        tok = ("--token", token) if token else ()
        return subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(self.net.api), *tok, *map(str, args)],
                              capture_output=True, text=True, timeout=60, env=env)

    def api(self, method, path, token=None, body=None, authorization=None):
        """(status, headers, body text) of one request to pearld's socket."""
        lines = [f"{method} {path} HTTP/1.1", "Host: pearld", "Connection: close"]
        if token:
            lines.append(f"Authorization: Bearer {token}")
        if authorization:
            lines.append(f"Authorization: {authorization}")
        data = b""
        if body is not None:
            data = json.dumps(body).encode()
            lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(str(self.net.api))
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
        s.close()
        head, _, payload = reply.partition(b"\r\n\r\n")
        head_lines = head.decode().split("\r\n")
        headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in head_lines[1:])}
        return int(head_lines[0].split()[1]), headers, payload.decode(errors="replace")

    def document(self, token=None):
        status, _, body = self.api("GET", "/v1/config", token)
        assert status == 200, body
        return json.loads(body)

    def ping(self, host, dst, count=1, interval=None):
        extra = ["-i", str(interval)] if interval else []
        return sh("ping", "-c", count, "-W", "2", *extra, dst, ns=self.net.hosts[host], check=False)

    def wait_ping(self, host, dst, seconds=10):
        deadline = time.time() + seconds
        while (done := self.ping(host, dst)).returncode != 0:
            assert time.time() < deadline, f"ping {dst} from {host}: {done.stdout}{done.stderr}"
        return done

    def vr_stats(self, name, token=ADMIN):
        status, _, body = self.api("GET", "/v1/stats", token)
        assert status == 200, body
        return next(v for v in json.loads(body)["vrs"] if v["name"] == name)

    def write_spec(self, name, spec):
        path = self.tmp / f"{name}.json"
        path.write_text(json.dumps(spec))
        return path

    def close(self):
        self.net.close()


@pytest.fixture
def rig_factory():
    made = []

    def make(tag):
        r = Rig(tag)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def kernel_routes(vr):
    return sh("ip", "-n", vr, "route", "show").stdout


def test_a_vr_created_next_to_a_forwarding_one_carries_traffic_and_deleting_it_leaves_nothing(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("rc")
    rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a")]))
    rig.wait_ping("a", "10.2.0.2")

    # A steady ping through A while B is made.
    pinging = subprocess.Popen(["ip", "netns", "exec", rig.net.hosts["a"], "ping", "-q", "-c", "500", "-i", "0.01",
                                "-W", "2", "10.2.0.2"], stdout=subprocess.PIPE, text=True)
    made = rig.ctl(bin_dir, "vr", "create", "-f", rig.write_spec(rig.b, vr_spec(rig.b, "b")))
    assert made.returncode == 0, made.stderr
    assert f"created VR {rig.b}" in made.stdout
    out, _ = pinging.communicate(timeout=30)
    assert pinging.returncode == 0 and " 0% packet loss" in out, out

    assert rig.b in netns_names()
    rig.wait_ping("c", "10.2.0.2")
    listed = json.loads(rig.ctl(bin_dir, "vr", "list", "--json").stdout)
    assert [v["name"] for v in listed["vrs"]] == [rig.a, rig.b]

    gone = rig.ctl(bin_dir, "vr", "delete", rig.b)
    assert gone.returncode == 0 and f"deleted VR {rig.b}" in gone.stdout, gone.stderr
    assert rig.b not in netns_names(), "the VR's namespace went with it"
    assert rig.ping("c", "10.2.0.2").returncode != 0
    assert rig.ctl(bin_dir, "vr", "show", rig.b).returncode == 3
    assert rig.ping("a", "10.2.0.2").returncode == 0


def test_deleting_the_first_of_two_vrs_without_ids_leaves_the_second_as_it_was(rig_factory, bin_dir, tmp_path):
    """Ids left out are given by pearld; deleting the first VR must not renumber the second
    (which would remake it, or refuse the delete)."""
    rig = rig_factory("ri")
    rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a"), vr_spec(rig.b, "b")]))
    rig.wait_ping("c", "10.2.0.2")
    ids = {v["name"]: v["id"] for v in json.loads(rig.ctl(bin_dir, "vr", "list", "--json").stdout)["vrs"]}
    inode = os.stat(f"/run/netns/{rig.b}").st_ino
    forwarded = rig.vr_stats(rig.b)["forwarded_packets"]

    gone = rig.ctl(bin_dir, "vr", "delete", rig.a)
    assert gone.returncode == 0, gone.stderr
    listed = json.loads(rig.ctl(bin_dir, "vr", "list", "--json").stdout)["vrs"]
    assert [(v["name"], v["id"]) for v in listed] == [(rig.b, ids[rig.b])], "B keeps its id"
    assert os.stat(f"/run/netns/{rig.b}").st_ino == inode, "B's namespace is the one it had"
    assert rig.vr_stats(rig.b)["forwarded_packets"] >= forwarded, "B's counters go on"
    rig.wait_ping("c", "10.2.0.2")
    # Created again, A gets an id B does not have.
    made = rig.ctl(bin_dir, "vr", "create", "-f", rig.write_spec(rig.a, vr_spec(rig.a, "a")))
    assert made.returncode == 0, made.stderr
    listed = {v["name"]: v["id"] for v in json.loads(rig.ctl(bin_dir, "vr", "list", "--json").stdout)["vrs"]}
    assert listed[rig.b] == ids[rig.b] and listed[rig.a] != ids[rig.b], listed


def test_stats_and_metrics_answer_while_a_long_change_runs(rig_factory, bin_dir, tmp_path):
    """A change of hundreds of VRs takes seconds; readers do not wait for it."""
    rig = rig_factory("rl")
    rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a")], api={"admin_token": ADMIN}))
    doc = rig.document(ADMIN)
    # Long enough (seconds of namespaces) that reads sent once its first namespaces appear are
    # answered well before its end.
    many = [f"{rig.net.prefix}-m{i}" for i in range(600)]
    doc["vrs"] += [{"name": name, "interfaces": [{"name": "eth0", "port": "p2", "mac": f"02:00:00:01:{i >> 8:02x}:{i & 0xff:02x}",
                                                   "addresses": ["10.9.0.1/24"]}]} for i, name in enumerate(many)]
    put = {}
    # The rate sampler woken first: a read that wakes it waits a second for fresh rates, by
    # design, which is not the wait this test is about.
    assert rig.api("GET", "/metrics", ADMIN)[0] == 200
    change = threading.Thread(target=lambda: put.update(answer=rig.api("PUT", "/v1/config", ADMIN, doc)))
    change.start()
    try:
        deadline = time.time() + 30
        while not set(many) & netns_names():  # the change is under way: it makes namespaces
            assert change.is_alive() and time.time() < deadline, put
            time.sleep(0.01)
        stats = rig.api("GET", "/v1/stats", ADMIN)
        metrics = rig.api("GET", "/metrics", ADMIN)
        # The VR list is the node as the last finished change left it (published at its end),
        # so a list without the new VRs, asked for after both answers came, shows that they
        # came while the change ran. (Stats and metrics show the data plane, which may take the
        # new VRs while their namespaces are still being made; and whether the change's thread
        # was alive says less: its answer may still be on its way when the change is done.)
        listed = rig.api("GET", "/v1/vrs", ADMIN)
    finally:
        change.join(timeout=120)
    assert stats[0] == 200 and metrics[0] == 200 and listed[0] == 200, (stats, metrics, listed)
    assert [v["name"] for v in json.loads(listed[2])["vrs"]] == [rig.a], "stats or metrics waited for the change to finish"
    assert rig.a in metrics[2] and rig.a in {v["name"] for v in json.loads(stats[2])["vrs"]}
    assert put["answer"][0] == 200, put["answer"]
    assert len(json.loads(rig.api("GET", "/v1/stats", ADMIN)[2])["vrs"]) == 601


def test_a_refused_change_names_the_field_and_changes_nothing(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("rf")
    udp_rule = {"udp_dst": 4000, "priority": 50}
    rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a", match=[dict(udp_rule, in_port="p0")],
                                                 routes=[{"prefix": "198.51.100.0/24", "via": "10.2.0.2"}])]))
    rig.wait_ping("a", "10.2.0.2")
    before = (rig.document(), kernel_routes(rig.a), sorted(netns_names()))

    b_mac_clash = vr_spec(rig.b, "b")
    b_mac_clash["interfaces"][0]["mac"] = MACS["a"][0]
    cases = [
        (["vr", "create", "-f", rig.write_spec("clash", b_mac_clash)], "vrs[1].interfaces[0].mac", "duplicate of"),
        (["vr", "create", "-f", rig.write_spec("overlap", vr_spec(rig.b, "b", match=[udp_rule]))], "vrs[1].match[0]",
         "overlaps vrs[0].match[0] at the same priority"),
        (["route", "add", rig.a, "10.9.0.1/16", "via", "10.2.0.2"], "vrs[0].routes[1].prefix", "did you mean 10.9.0.0/16"),
        (["route", "add", rig.a, "10.9.0.0/16", "via", "10.7.0.1"], "vrs[0].routes[1].via", "none of the VR's interface"),
        (["queue", "set", rig.a, "0:64"], "vrs[0].queues[0].weight", "must be positive"),
        (["vr", "set", rig.a, "limits.filters=0"], "vrs[0].limits.filters", "below the 1 match rules"),
        (["filter", "add", rig.a, "udp_dst=5000", "queue=3"], "vrs[0].match[1].queue", "the VR has 1 queue"),
    ]
    for args, field, says in cases:
        done = rig.ctl(bin_dir, *args)
        assert done.returncode == 1, (args, done.returncode, done.stderr)
        assert field in done.stderr and says in done.stderr, (args, done.stderr)
        assert (rig.document(), kernel_routes(rig.a), sorted(netns_names())) == before, args
    # A new port on an interface that does not exist, with a new VR: refused before anything is
    # stored or made (the new VR's namespace is never made).
    whole = rig.document()
    whole["vrs"].append(vr_spec(rig.b, "b"))
    whole["ports"].append({"name": "px", "interface": "nope9", "driver": "af_packet"})
    status, _, body = rig.api("PUT", "/v1/config", ADMIN, whole)
    assert status == 422 and f"ports[{len(whole['ports']) - 1}].interface" in body, (status, body)
    assert (rig.document(), kernel_routes(rig.a), sorted(netns_names())) == before
    assert rig.ping("a", "10.2.0.2").returncode == 0
    assert rig.net.pearld.poll() is None


SINK = """
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("0.0.0.0", 4001))
s.settimeout(float(sys.argv[1]))
count, gaps, last = 0, [], None
try:
    while True:
        s.recv(2048)
        now = time.monotonic()
        if last is not None:
            gaps.append(now - last)
        count, last = count + 1, now
        s.settimeout(3.0)
except socket.timeout:
    pass
print(json.dumps({"count": count, "max_gap": max(gaps, default=0.0)}))
"""


def test_forwarding_of_a_vr_loses_nothing_while_another_is_created_changed_and_deleted(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("rp")
    rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a")]))
    rig.wait_ping("a", "10.2.0.2")
    b_file = rig.write_spec(rig.b, vr_spec(rig.b, "b"))
    seconds = 20
    sink = subprocess.Popen(["ip", "netns", "exec", rig.net.hosts["b"], sys.executable, "-c", SINK, "20"],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    sender = subprocess.Popen(["ip", "netns", "exec", rig.net.hosts["a"], sys.executable, str(HERE / "blast.py"), "eth0",
                               HOSTS["a"][1], MACS["a"][0], "10.1.0.2", "10.2.0.2", str(FRAME), "4", str(seconds)],
                              stdout=subprocess.PIPE, text=True)
    time.sleep(1)
    started, rounds = time.monotonic(), 0
    steps = [
        ["vr", "create", "-f", b_file],
        ["queue", "set", rig.b, "3:256", "1:128"],
        ["vr", "set", rig.b, "limits.rate_mbps=50"],
        ["vr", "set", rig.b, "code=ipv4"],
        ["route", "add", rig.b, "198.51.100.0/24", "via", "10.2.0.2"],
        ["filter", "add", rig.b, "in_port=p2", "udp_dst=5000", "queue=1"],
        ["vr", "set", rig.b, "code=ip"],
        ["vr", "delete", rig.b],
    ]
    # Changes one after the other for as long as the traffic runs, but for its last second.
    while time.monotonic() - started < seconds - 2:
        for step in steps:
            done = rig.ctl(bin_dir, *step)
            assert done.returncode == 0, (step, done.stderr)
        rounds += 1
    sent = int(sender.communicate(timeout=seconds + 30)[0])
    got = json.loads(sink.communicate(timeout=60)[0])
    print(f"{rounds} rounds in {time.monotonic() - started:.1f} s; sent {sent}, received {got['count']}, "
          f"largest gap {got['max_gap'] * 1000:.1f} ms")
    assert rounds >= 10, f"only {rounds} rounds of changes in {seconds} s"
    assert got["count"] == sent, f"VR {rig.a} lost {sent - got['count']} of {sent} packets while {rig.b} changed"
    assert got["max_gap"] < 0.25, f"forwarding paused for {got['max_gap']:.3f} s"


def test_routes_added_with_pearlctl_reach_the_vr_kernel_and_the_fast_path(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("rr")
    rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a")]))
    sh("ip", "addr", "add", "198.51.100.7/32", "dev", "lo", ns=rig.net.hosts["b"])
    rig.wait_ping("a", "10.2.0.2")
    assert rig.ping("a", "198.51.100.7").returncode != 0, "no route yet"

    added = rig.ctl(bin_dir, "route", "add", rig.a, "198.51.100.0/24", "via", "10.2.0.2")
    assert added.returncode == 0, added.stderr
    assert "198.51.100.0/24 via 10.2.0.2 dev eth1" in kernel_routes(rig.a)
    listed = json.loads(rig.ctl(bin_dir, "route", "list", rig.a, "--json").stdout)
    assert listed == {"routes": [{"prefix": "198.51.100.0/24", "via": "10.2.0.2"}]}
    assert "198.51.100.0/24  10.2.0.2" in rig.ctl(bin_dir, "route", "list", rig.a).stdout

    before = rig.vr_stats(rig.a)
    done = rig.ping("a", "198.51.100.7", count=5, interval=0.05)
    assert done.returncode == 0, done.stdout
    after = rig.vr_stats(rig.a)
    assert after["forwarded_packets"] - before["forwarded_packets"] >= 10, "requests and replies took the fast path"
    assert after["exceptions"].get("no_route", 0) == before["exceptions"].get("no_route", 0)

    removed = rig.ctl(bin_dir, "route", "del", rig.a, "198.51.100.0/24")
    assert removed.returncode == 0, removed.stderr
    assert "198.51.100.0" not in kernel_routes(rig.a)
    assert rig.ping("a", "198.51.100.7").returncode != 0
    missing = rig.ctl(bin_dir, "route", "del", rig.a, "198.51.100.0/24")
    assert missing.returncode == 3 and "has no route 198.51.100.0/24" in missing.stderr, missing.stderr


def test_a_vr_token_reaches_its_own_vr_only(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("rt")
    a, b = rig.a, rig.b
    rig.start(bin_dir, tmp_path, config([vr_spec(a, "a", token=TOKEN_A), vr_spec(b, "b", token=TOKEN_B)],
                                        api={"admin_token": ADMIN}))
    route = {"prefix": "198.51.100.0/24", "via": "10.2.0.2"}
    other = vr_spec(f"{rig.net.prefix}-vc", "b")
    refused = [
        ("GET", f"/v1/vrs/{b}", None, 404, "name"),
        ("PATCH", f"/v1/vrs/{b}", {"queues": [{"weight": 1}]}, 404, "name"),
        ("GET", f"/v1/vrs/{b}/routes", None, 404, "name"),
        ("POST", f"/v1/vrs/{b}/routes", route, 404, "name"),
        ("DELETE", f"/v1/vrs/{b}/routes/198.51.100.0/24", None, 404, "name"),
        ("GET", f"/v1/vrs/{b}/filters", None, 404, "name"),
        ("POST", f"/v1/vrs/{b}/filters", {"in_port": "p2", "udp_dst": 9}, 404, "name"),
        ("PUT", f"/v1/vrs/{b}/queues", [{"weight": 1}], 404, "name"),
        ("PUT", f"/v1/vrs/{b}/limits", {}, 403, "Authorization"),
        ("DELETE", f"/v1/vrs/{b}", None, 403, "Authorization"),
        ("DELETE", f"/v1/vrs/{a}", None, 403, "Authorization"),
        ("POST", "/v1/vrs", other, 403, "Authorization"),
        ("GET", "/v1/config", None, 403, "Authorization"),
        ("PUT", "/v1/config", {}, 403, "Authorization"),
        ("GET", "/metrics", None, 403, "Authorization"),
        ("PATCH", f"/v1/vrs/{a}", {"limits": {"rate_mbps": 1}}, 403, "limits"),
        ("PATCH", f"/v1/vrs/{a}", {"token": TOKEN_B}, 403, "token"),
        # A file on the node, which pearld would read (and quote from in its error).
        ("PATCH", f"/v1/vrs/{a}", {"plugin": {"wasm": "/etc/shadow"}}, 403, "plugin"),
        ("POST", f"/v1/vrs/{a}/filters", {"udp_dst": 4000}, 403, "in_port"),
        ("POST", f"/v1/vrs/{a}/filters", {"in_port": "p2", "udp_dst": 4000}, 403, "in_port"),
    ]
    refused.append(("POST", f"/v1/vrs/{b}/capture", {"seconds": 1}, 404, "name"))
    # Fail closed: a path no endpoint serves, even under the owner's own VR, is the admin's
    # (before issue 51 anything under /v1/vrs/NAME/ fell to the owner).
    refused += [("GET", f"/v1/vrs/{a}/nothing", None, 403, "Authorization"), ("DELETE", "/v1/vrs", None, 403, "Authorization"),
                ("GET", "/v1/nothing", None, 403, "Authorization")]
    document = rig.document(ADMIN)
    for method, path, body, status, field in refused:
        got, _, text = rig.api(method, path, TOKEN_A, body)
        assert got == status, (method, path, got, text)
        assert b not in text, f"{method} {path} shows VR {b}'s name: {text}"
        if field:
            assert json.loads(text).get("field") == field, (method, path, text)
    assert rig.document(ADMIN) == document, "nothing changed"

    # What the owner sees: its VR, its ports, no other VR's name anywhere.
    for path in ("/v1/vrs", f"/v1/vrs/{a}", "/v1/stats", f"/v1/vrs/{a}/routes", f"/v1/vrs/{a}/filters", "/"):
        got, _, text = rig.api("GET", path, TOKEN_A)
        assert got == 200 and b not in text, (path, got, text[:300])
    _, _, text = rig.api("GET", "/v1/stats", TOKEN_A)
    stats = json.loads(text)
    assert [v["name"] for v in stats["vrs"]] == [a] and {p["name"] for p in stats["ports"]} == {"p0", "p1"}
    assert stats["workers"] == []
    assert [v["name"] for v in json.loads(rig.api("GET", "/v1/vrs", TOKEN_A)[2])["vrs"]] == [a]

    # The owner changes its own VR, through pearlctl with --token or PEARL_TOKEN.
    added = rig.ctl(bin_dir, "route", "add", a, "198.51.100.0/24", "via", "10.2.0.2", env_token=TOKEN_A)
    assert added.returncode == 0, added.stderr
    assert "198.51.100.0/24 via 10.2.0.2 dev eth1" in kernel_routes(a)
    assert rig.ctl(bin_dir, "queue", "set", a, "2:128", "1:128", token=TOKEN_A).returncode == 0
    assert rig.ctl(bin_dir, "filter", "add", a, "in_port=p0", "udp_dst=7000", "queue=1", token=TOKEN_A).returncode == 0
    listed = rig.ctl(bin_dir, "vr", "list", token=TOKEN_A)
    assert listed.returncode == 0 and a in listed.stdout and b not in listed.stdout, listed.stdout
    for args, code in ((["vr", "show", b], 3), (["route", "add", b, "198.51.100.0/24", "via", "10.2.0.2"], 3),
                       (["vr", "delete", b], 1), (["vr", "create", "-f", rig.write_spec("c", other)], 1),
                       (["vr", "set", a, "limits.rate_mbps=10"], 1)):
        done = rig.ctl(bin_dir, *args, token=TOKEN_A)
        assert done.returncode == code, (args, done.returncode, done.stderr)
    shown = rig.ctl(bin_dir, "vr", "show", a, "--json", token=TOKEN_A).stdout
    assert "token" not in shown and TOKEN_A not in shown and ADMIN not in shown

    # Without a token, or with a wrong one: 401 naming the header, for pearlctl too.
    for token in (None, "not-a-token-of-anyone-0123"):
        got, headers, text = rig.api("GET", "/v1/vrs", token)
        assert got == 401 and json.loads(text)["field"] == "Authorization", text
        assert headers["www-authenticate"].startswith("Bearer")
        done = rig.ctl(bin_dir, "vr", "list", token=token)
        assert done.returncode == 1 and "Authorization" in done.stderr and "--token" in done.stderr, done.stderr
    for path in ("/v1/nothing", f"/v1/vrs/{a}/nothing"):
        got, headers, text = rig.api("GET", path)
        assert got == 401 and json.loads(text)["field"] == "Authorization", (path, text)
        got, _, text = rig.api("GET", path, ADMIN)
        assert got == 404 and json.loads(text)["field"] == "path", (path, text)
    assert rig.api("GET", "/healthz")[0] == 200
    got, _, text = rig.api("GET", "/openapi.json")
    assert got == 200 and json.loads(text)["security"] == [{"bearer": []}, {"basic": []}]

    # The dashboard: a browser is asked for the token (as the Basic password) and sends it on.
    got, headers, _ = rig.api("GET", "/")
    assert got == 401 and headers["www-authenticate"].startswith("Basic")
    basic = "Basic " + base64.b64encode(f"owner:{TOKEN_A}".encode()).decode()
    got, _, page = rig.api("GET", "/", authorization=basic)
    assert got == 200 and "PEARL dashboard" in page
    got, _, text = rig.api("GET", "/v1/stats", authorization=basic)
    assert got == 200 and b not in text

    # The admin does everything.
    assert [v["name"] for v in json.loads(rig.api("GET", "/v1/vrs", ADMIN)[2])["vrs"]] == [a, b]
    assert rig.document(ADMIN)["vrs"][1]["token"] == TOKEN_B
    assert rig.api("GET", "/metrics", ADMIN)[0] == 200
    assert rig.ctl(bin_dir, "route", "add", b, "198.51.100.0/24", "via", "10.2.0.2", token=ADMIN).returncode == 0
    assert rig.ctl(bin_dir, "vr", "set", a, "limits.rate_mbps=10", token=ADMIN).returncode == 0
    gone = rig.ctl(bin_dir, "vr", "delete", b, env_token=ADMIN)
    assert gone.returncode == 0 and b not in netns_names(), gone.stderr
    assert rig.api("GET", "/v1/vrs", TOKEN_B)[0] == 401, "a deleted VR's token is no token"


def test_a_vr_token_over_its_request_rate_is_answered_429_and_others_are_not(rig_factory, bin_dir, tmp_path):
    """One owner hammering the API gets 429 with Retry-After past api.owner_requests_per_second;
    the other VR's token and the admin token are answered as usual meanwhile."""
    rig = rig_factory("rq")
    a, b = rig.a, rig.b
    rig.start(bin_dir, tmp_path, config([vr_spec(a, "a", token=TOKEN_A), vr_spec(b, "b", token=TOKEN_B)],
                                        api={"admin_token": ADMIN, "owner_requests_per_second": 20}))
    statuses, others = [], []

    def hammer():
        for _ in range(150):
            statuses.append(rig.api("GET", f"/v1/vrs/{a}/routes", TOKEN_A))

    t = threading.Thread(target=hammer)
    t.start()
    while t.is_alive():  # b at half its rate, the admin as fast as it likes
        others.append(rig.api("GET", f"/v1/vrs/{b}/routes", TOKEN_B)[0])
        next_b = time.time() + 0.1
        while time.time() < next_b:
            others.append(rig.api("GET", "/v1/stats", ADMIN)[0])
    t.join()
    limited = [r for r in statuses if r[0] == 429]
    assert limited and all(r[0] in (200, 429) for r in statuses), [r[0] for r in statuses]
    assert limited[0][1].get("retry-after") == "1" and "owner_requests_per_second" in limited[0][2], limited[0]
    assert others and set(others) == {200}, others
    time.sleep(1.1)  # a second later the allowance is back
    assert rig.api("GET", f"/v1/vrs/{a}/routes", TOKEN_A)[0] == 200


def test_changes_survive_a_killed_pearld(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("rk")
    rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a")]))
    made = rig.ctl(bin_dir, "vr", "create", rig.b,
                   "--interface", f"name=eth0,port=p2,mac={MACS['b'][0]},address=10.1.0.1/24",
                   "--interface", f"name=eth1,port=p3,mac={MACS['b'][1]},address=10.2.0.1/24", "queues=2:128,1:128")
    assert made.returncode == 0, made.stderr
    assert rig.ctl(bin_dir, "route", "add", rig.b, "198.51.100.0/24", "via", "10.2.0.2").returncode == 0
    rig.wait_ping("c", "10.2.0.2")
    document = rig.document()

    rig.net.pearld.send_signal(signal.SIGKILL)
    rig.net.pearld.wait(timeout=10)
    rig.net.start_pearld(bin_dir, rig.text, tmp_path, extra_args=rig.args)

    assert rig.document() == document
    shown = json.loads(rig.ctl(bin_dir, "vr", "show", rig.b, "--json").stdout)
    assert [(q["weight"], q["length"]) for q in shown["queues"]] == [(2, 128), (1, 128)]
    assert shown["routes"] == [{"prefix": "198.51.100.0/24", "via": "10.2.0.2", "interface": "eth1"}]
    assert "198.51.100.0/24 via 10.2.0.2 dev eth1" in kernel_routes(rig.b)
    rig.wait_ping("c", "10.2.0.2")
    rig.wait_ping("a", "10.2.0.2")


def test_pearlctl_captures_a_vrs_traffic(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("ry")
    rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a")]))
    pcap = tmp_path / "a.pcap"
    capture = subprocess.Popen([str(bin_dir / "pearlctl"), "--socket", str(rig.net.api), "capture", rig.a,
                                "--interface", "eth0", "--point", "rx", "--seconds", "3", "-w", str(pcap)],
                               stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    rig.ping("a", "10.2.0.2", count=5, interval=0.1)
    _, err = capture.communicate(timeout=30)
    assert capture.returncode == 0, err
    assert "captured" in err and pcap.exists()
    packets = sh(sys.executable, "-c", f"from scapy.all import rdpcap, ICMP; print(sum(ICMP in p for p in rdpcap('{pcap}')))")
    assert int(packets.stdout) >= 5, packets.stdout
    bad = rig.ctl(bin_dir, "capture", rig.a, "--point", "sideways", "-w", tmp_path / "x.pcap")
    assert bad.returncode == 2 and "--point" in bad.stderr


def test_changing_a_vrs_code_option_keeps_the_vr_and_swaps_its_program(rig_factory, bin_dir, tmp_path):
    """`code` is a run-time change like any other: the VR keeps its namespace, tables and
    counters, and its packets meet the new program. With `code=ipv6` a VR's IPv4 is an
    unrouted family (handed to its kernel, counted); back to `ip`, the fast path routes it."""
    rig = rig_factory("rc")
    rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a", code="ip")]))
    rig.wait_ping("a", "10.2.0.2")
    netns = os.stat(f"/run/netns/{rig.a}").st_ino

    def unrouted():
        return rig.vr_stats(rig.a)["exceptions"].get("unrouted_family", 0)

    before = rig.vr_stats(rig.a)
    assert rig.ping("a", "10.2.0.2", count=3, interval=0.2).returncode == 0
    assert unrouted() == 0
    done = rig.ctl(bin_dir, "vr", "set", rig.a, "code=ipv6")
    assert done.returncode == 0, done.stderr
    assert json.loads(rig.ctl(bin_dir, "vr", "show", rig.a, "--json").stdout)["code"] == "ipv6"
    rig.ping("a", "10.2.0.2", count=3, interval=0.2)
    assert unrouted() >= 3, rig.vr_stats(rig.a)["exceptions"]
    assert os.stat(f"/run/netns/{rig.a}").st_ino == netns, "the VR kept its namespace"
    assert rig.vr_stats(rig.a)["rx_packets"] >= before["rx_packets"] + 6, "counters carried over the swap"
    done = rig.ctl(bin_dir, "vr", "set", rig.a, "code=ip")
    assert done.returncode == 0, done.stderr
    punted = unrouted()
    assert rig.ping("a", "10.2.0.2", count=3, interval=0.2).returncode == 0
    assert unrouted() == punted, "routed in the fast path again"
