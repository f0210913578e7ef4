"""Every change through the API lands whole or changes nothing: in the running node, in
`GET /v1/config` and in the stored state that a restart applies. A change adding a port with a
VR on it, which once answered 500 from a panic and stored the refused document, lands when the
port's interface exists (pearld starts again over its VRs to open it, the VRs adopted, not
remade) and is refused naming the field with nothing stored when it does not, also from the
packaged empty configuration; a random sequence of a few hundred changes (VRs, routes, ports,
valid and not) keeps GET and the stored state equal to a model after every step, and pearld
killed after it comes back as the same node and forwards."""

import copy
import json
import os
import random
import signal
import time

from test_runtime import Rig, rig_factory  # noqa: F401 (a fixture)

PORTS = ["p0", "p1", "p2"]


def ports(names):
    return [{"name": p, "interface": p, "driver": "af_packet"} for p in names]


def vr_a(name):
    """Hosts a (p0) and b (p1), routed between, static neighbours: forwards without ARP."""
    return {
        "name": name,
        "id": 0,
        "interfaces": [
            {"name": "eth0", "port": "p0", "mac": "02:00:00:00:0a:00", "addresses": ["10.1.0.1/24"]},
            {"name": "eth1", "port": "p1", "mac": "02:00:00:00:0a:01", "addresses": ["10.2.0.1/24"]},
        ],
        "neighbors": [
            {"ip": "10.1.0.2", "mac": "02:aa:00:00:00:01", "interface": "eth0"},
            {"ip": "10.2.0.2", "mac": "02:aa:00:00:00:02", "interface": "eth1"},
        ],
    }


def vr_on(name, vid, port, mac):
    return {"name": name, "id": vid, "interfaces": [{"name": "eth0", "port": port, "mac": mac, "addresses": ["10.1.0.1/24"]}]}


def stored(state_dir):
    """The stored desired state as a restart reads it: the snapshot, then the journal's newer lines."""
    [snapshot] = state_dir.glob("desired-*.json")
    saved = json.loads(snapshot.read_text())
    doc, generation = saved["document"], saved["generation"]
    journal = snapshot.with_suffix(".journal")
    for line in journal.read_text().splitlines() if journal.exists() else []:
        change = json.loads(line)
        if change["generation"] <= generation:
            continue
        generation = change["generation"]
        if "put" in change:
            at = [i for i, v in enumerate(doc["vrs"]) if v["name"] == change["put"]["name"]]
            if at:
                doc["vrs"][at[0]] = change["put"]
            else:
                doc["vrs"].append(change["put"])
        else:
            doc["vrs"] = [v for v in doc["vrs"] if v["name"] != change["delete"]]
    return doc


def restart_after_sigkill(rig, bin_dir):
    rig.net.pearld.send_signal(signal.SIGKILL)
    rig.net.pearld.wait(timeout=10)
    rig.net.start_pearld(bin_dir, rig.text, rig.tmp, extra_args=rig.args)


def starts(rig):
    """How many times pearld said it runs (its log: a start, or a start again over its VRs)."""
    return (rig.tmp / "pearld.log").read_text().count(" port(s) with ")


def wait_restarted(rig, since, seconds=20):
    """Waits for pearld, which had started `since` times, to have started again (a change of its
    ports restarts it over its VRs) and to answer."""
    deadline = time.time() + seconds
    while True:
        assert rig.net.pearld.poll() is None, (rig.tmp / "pearld.log").read_text()
        assert time.time() < deadline, (rig.tmp / "pearld.log").read_text()[-3000:]
        if starts(rig) > since:
            try:
                rig.document()
                return
            except OSError:
                pass
        time.sleep(0.05)


def inode(ns):
    return os.stat(f"/run/netns/{ns}").st_ino


def a_port_whose_interface_is_missing_is_refused_whole(rig, vr):
    """PUT = GET + a port on an interface that does not exist + a VR on it: refused naming the
    field, GET and the stored state as they were."""
    before = rig.document()
    n = len(before["ports"])
    doc = copy.deepcopy(before)
    doc["ports"].append({"name": "px", "interface": "nope9", "driver": "af_packet"})
    doc["vrs"].append(vr_on(vr, 5, "px", "02:00:00:00:0c:00"))
    got, _, body = rig.api("PUT", "/v1/config", body=doc)
    assert got == 422, body
    error = json.loads(body)
    assert error.get("field") == f"ports[{n}].interface", error
    assert "panicked" not in error["error"], error
    assert rig.document() == before
    assert stored(rig.tmp / "state") == before


def add_a_port_with_a_vr(rig, vr):
    """PUT = GET + port px on p2 (host c's link) + a VR on it: lands, pearld starts again over its
    VRs (the same process, its VRs adopted) and drives px; the new VR answers host c."""
    doc = rig.document()
    names = [p["name"] for p in doc["ports"]]
    doc["ports"].append({"name": "px", "interface": "p2", "driver": "af_packet"})
    doc["vrs"].append(vr_on(vr, 5, "px", "02:00:00:00:0c:00"))
    pid, since = rig.net.pearld.pid, starts(rig)
    got, _, body = rig.api("PUT", "/v1/config", body=doc)
    assert got == 200, body
    assert stored(rig.tmp / "state") == doc
    wait_restarted(rig, since)
    assert [p["name"] for p in rig.net.stats()["ports"]] == names + ["px"]
    assert rig.net.pearld.pid == pid, "pearld started again in place (the same process under its supervisor)"
    assert rig.document() == doc
    rig.wait_ping("c", "10.1.0.1")
    return doc


def test_a_port_added_with_a_vr_lands_through_a_restart_over_the_vrs_and_is_removed_again(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("at")
    a = rig.a
    rig.start(bin_dir, tmp_path, json.dumps({"workers": 1, "ports": ports(["p0", "p1"]), "vrs": [vr_a(a)]}))
    rig.wait_ping("a", "10.2.0.2")
    a_port_whose_interface_is_missing_is_refused_whole(rig, rig.b)
    kept = inode(a)

    doc = add_a_port_with_a_vr(rig, rig.b)
    assert inode(a) == kept, "the running VR was adopted, not made again"
    rig.wait_ping("a", "10.2.0.2")

    # A removed port's VR is refused unless it goes in the same change.
    without = copy.deepcopy(doc)
    without["ports"] = without["ports"][:2]
    got, _, body = rig.api("PUT", "/v1/config", body=without)
    assert got == 422 and json.loads(body)["field"] == "vrs[1].interfaces[0].port" and '"px"' in json.loads(body)["error"], body
    assert rig.document() == doc and stored(tmp_path / "state") == doc
    without["vrs"] = [v for v in without["vrs"] if v["name"] != rig.b]
    since = starts(rig)
    got, _, body = rig.api("PUT", "/v1/config", body=without)
    assert got == 200, body
    wait_restarted(rig, since)
    assert [p["name"] for p in rig.net.stats()["ports"]] == ["p0", "p1"]
    assert rig.document() == without
    assert not os.path.exists(f"/run/netns/{rig.b}"), "the VR removed with its port is gone"
    assert inode(a) == kept
    rig.wait_ping("a", "10.2.0.2")

    restart_after_sigkill(rig, bin_dir)
    assert rig.document() == without
    rig.wait_ping("a", "10.2.0.2")


def test_from_the_packaged_empty_configuration_a_port_and_vr_land_whole(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("ae")
    rig.start(bin_dir, tmp_path, "ports: []\nvrs: []\n")
    a_port_whose_interface_is_missing_is_refused_whole(rig, rig.b)
    doc = add_a_port_with_a_vr(rig, rig.b)
    restart_after_sigkill(rig, bin_dir)
    assert rig.document() == doc
    rig.wait_ping("c", "10.1.0.1")


class Model:
    """What GET /v1/config must answer: the document, changed only by what the API accepted."""

    def __init__(self, doc):
        self.doc = doc

    def vr(self, name):
        return next((v for v in self.doc["vrs"] if v["name"] == name), None)


def step(rig, model, rng, names):
    """One random API change, valid or not; returns (method, path, status). The model is
    changed only if the change is one that must land."""
    a, b = names
    doc = model.doc
    kind = rng.choice(["create", "delete", "route_add", "route_del", "put_vr", "put_port", "put_bad", "put_replace"])
    if kind == "create":
        good = model.vr(b) is None
        spec = vr_on(b, 1, rng.choice(["p2", "p2", "px"]), "02:00:00:00:0b:00")
        good = good and spec["interfaces"][0]["port"] == "p2"
        status, _, body = rig.api("POST", "/v1/vrs", body=spec)
        if good:
            doc["vrs"].append(spec)
        return ("POST /v1/vrs", status, body, good, (201,))
    if kind == "delete":
        name = rng.choice([a, b])
        good = model.vr(name) is not None and name == b
        if name == a:
            name = f"{b}-none"
        status, _, body = rig.api("DELETE", f"/v1/vrs/{name}")
        if good:
            doc["vrs"] = [v for v in doc["vrs"] if v["name"] != name]
        return (f"DELETE {name}", status, body, good, (200,))
    if kind == "route_add":
        vr = model.vr(a)
        free = [n for n in range(8) if all(r["prefix"] != f"198.51.{100 + n}.0/24" for r in vr.get("routes", []))]
        good = bool(free) and rng.random() < 0.8
        route = {"prefix": f"198.51.{100 + free[0]}.0/24" if good else "198.51.100.0/33", "via": "10.2.0.2"}
        status, _, body = rig.api("POST", f"/v1/vrs/{a}/routes", body=route)
        if good:
            vr.setdefault("routes", []).append(route)
        return ("POST routes", status, body, good, (201,))
    if kind == "route_del":
        net = rng.randrange(8)
        vr = model.vr(a)
        prefix = f"198.51.{100 + net}.0/24"
        good = any(r["prefix"] == prefix for r in vr.get("routes", []))
        status, _, body = rig.api("DELETE", f"/v1/vrs/{a}/routes/198.51.{100 + net}.0/24")
        if good:
            vr["routes"] = [r for r in vr["routes"] if r["prefix"] != prefix]
        return ("DELETE route", status, body, good, (200,))
    new = copy.deepcopy(doc)
    if kind == "put_vr":
        # The whole document with VR b there or not.
        new["vrs"] = [v for v in new["vrs"] if v["name"] != b]
        if rng.random() < 0.5:
            new["vrs"].append(vr_on(b, 1, "p2", "02:00:00:00:0b:00"))
        status, _, body = rig.api("PUT", "/v1/config", body=new)
        model.doc = new
        return ("PUT (VRs)", status, body, True, (200,))
    if kind == "put_replace" and model.vr(b) is not None:
        # VR b with other interfaces: valid, stored ahead, then refused by the running node
        # (a VR's interfaces cannot change in place yet): the stored state is restored.
        new["vrs"] = [v for v in new["vrs"] if v["name"] != b] + [vr_on(b, 1, "p2", "02:00:00:00:0b:01")]
        status, _, body = rig.api("PUT", "/v1/config", body=new)
        return ("PUT (VR replaced)", status, body, False, ())
    if kind == "put_port":
        # A port added (its interface there or not), changed or removed. One that lands is
        # applied by pearld starting again over its VRs; a removed port's VRs make the document
        # invalid unless they go too.
        what = rng.choice(["add", "add_missing", "change", "remove"])
        names = [p["name"] for p in new["ports"]]
        if what == "add":
            new["ports"].append({"name": "p3", "interface": "p3", "driver": "af_packet"})
            good = "p3" not in names
        elif what == "add_missing":
            new["ports"].append({"name": "pz", "interface": "nope9", "driver": "af_packet"})
            good = False
        elif what == "change":
            new["ports"][2]["rx_ring_frames"] = 512 if new["ports"][2].get("rx_ring_frames") == 256 else 256
            good = True
        else:
            new["ports"] = [p for p in new["ports"] if p["name"] != "p3"]
            good = True
        since, restarts = starts(rig), new["ports"] != doc["ports"]
        status, _, body = rig.api("PUT", "/v1/config", body=new)
        if good:
            model.doc = new
            if restarts:
                wait_restarted(rig, since)
        return (f"PUT (port {what})", status, body, good, (200,))
    # Invalid: two VRs with one MAC (or, with no VR b to replace, the same).
    new["vrs"].append(vr_on(f"{b}x", 3, "p2", "02:00:00:00:0a:00"))
    status, _, body = rig.api("PUT", "/v1/config", body=new)
    return ("PUT (duplicate MAC)", status, body, False, ())


def test_a_random_sequence_of_changes_keeps_get_and_the_stored_state_equal_to_the_model(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("ar")
    a, b = rig.a, rig.b
    rig.start(bin_dir, tmp_path, json.dumps({"workers": 1, "ports": ports(PORTS), "vrs": [vr_a(a)]}))
    rig.wait_ping("a", "10.2.0.2")
    model = Model(rig.document())
    rng = random.Random(50)
    landed = refused = 0
    for i in range(300):
        what, status, body, good, ok = step(rig, model, rng, (a, b))
        if good:
            assert status in ok, f"step {i}: {what}: {status} {body}"
            landed += 1
        else:
            assert 400 <= status < 500, f"step {i}: {what}: {status} {body}"
            assert "panicked" not in body, f"step {i}: {what}: {body}"
            refused += 1
        assert rig.document() == model.doc, f"step {i}: GET /v1/config after {what} ({status})"
        assert stored(tmp_path / "state") == model.doc, f"step {i}: the stored state after {what} ({status})"
    assert landed > 50 and refused > 50, (landed, refused)

    restart_after_sigkill(rig, bin_dir)
    assert rig.document() == model.doc
    vrs = {v["name"] for v in json.loads(rig.ctl(bin_dir, "vr", "list", "--json").stdout)["vrs"]}
    assert vrs == {v["name"] for v in model.doc["vrs"]}
    shown = json.loads(rig.ctl(bin_dir, "vr", "show", a, "--json").stdout)
    assert [r["prefix"] for r in shown["routes"]] == [r["prefix"] for r in model.vr(a).get("routes", [])]
    rig.wait_ping("a", "10.2.0.2")
