"""The configuration file and run-time changes together, without silent loss: a comment appended
to the file keeps every run-time change; an edited file over run-time changes is refused naming
what differs until --state-wins or --config-wins says which wins; `pearld --check` validates a
file as a start would and touches nothing; `pearlctl config export` writes a file pearld starts
the same node from; and each change through the API leaves one audit line in pearld's log."""

import json
import os
import signal
import subprocess

from netns import Network, sh
from test_runtime import ADMIN, MACS, TOKEN_A, config, rig_factory, vr_spec  # noqa: F401 (the fixture)
from test_slow_path import netns_names

ROUTE = {"prefix": "198.51.100.0/24", "via": "10.2.0.2"}


def stop(rig):
    rig.net.pearld.send_signal(signal.SIGTERM)
    assert rig.net.pearld.wait(timeout=30) == 0


def start_refused(bin_dir, rig, tmp_path, text, *flags):
    """A start on `text` expected to exit: its exit status and messages."""
    cfg = tmp_path / "pearl.yaml"
    cfg.write_text(text)
    done = subprocess.run(["ip", "netns", "exec", rig.net.router, str(bin_dir / "pearld"), "--config", str(cfg),
                           "--api", str(tmp_path / "pearl.sock"), *map(str, rig.args), *flags],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stderr


def with_runtime_changes(rig, bin_dir, tmp_path):
    """VR a from the file, then VR b and a route of a's made at run time."""
    rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a")]))
    made = rig.ctl(bin_dir, "vr", "create", "-f", rig.write_spec(rig.b, vr_spec(rig.b, "b")))
    assert made.returncode == 0, made.stderr
    added = rig.ctl(bin_dir, "route", "add", rig.a, ROUTE["prefix"], "via", ROUTE["via"])
    assert added.returncode == 0, added.stderr
    return rig.document()


def vr_names(doc):
    return sorted(v["name"] for v in doc["vrs"])


def test_a_comment_appended_to_the_file_keeps_the_run_time_vr_and_route(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("cc")
    document = with_runtime_changes(rig, bin_dir, tmp_path)
    stop(rig)
    rig.net.start_pearld(bin_dir, rig.text + "\n# edited: only a comment\n", tmp_path, extra_args=rig.args)
    assert rig.document() == document
    assert "198.51.100.0/24 via 10.2.0.2" in sh("ip", "-n", rig.a, "route", "show").stdout
    assert rig.b in netns_names(), "the VR made at run time runs again"


def test_an_edited_file_over_run_time_changes_is_refused_until_told_which_wins(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("ce")
    document = with_runtime_changes(rig, bin_dir, tmp_path)
    stop(rig)
    edited = config([vr_spec(rig.a, "a", queues=[{"weight": 2, "length": 128}])])

    # The VRs the stopped pearld left running (live restore) stay as they are.
    left = netns_names()
    status, err = start_refused(bin_dir, rig, tmp_path, edited)
    assert status == 2, err
    assert f"vrs {rig.b}: only in the stored state" in err, err
    assert f"vrs {rig.a}: queues, routes differ" in err, err
    assert "--state-wins" in err and "--config-wins" in err and "pearlctl config export" in err, err
    assert netns_names() == left and rig.b in left, "a refused start neither makes nor removes anything"

    # --state-wins: the stored state, and a warning that the file is stale.
    rig.net.start_pearld(bin_dir, edited, tmp_path, extra_args=(*rig.args, "--state-wins"))
    assert rig.document() == document
    log = (tmp_path / "pearld.log").read_text()
    assert "is stale" in log and "pearlctl config export" in log, log
    stop(rig)
    # The choice holds for this file: started on it again, pearld says nothing and keeps the state.
    rig.net.start_pearld(bin_dir, edited, tmp_path, extra_args=rig.args)
    assert rig.document() == document
    stop(rig)

    # Edited again, --config-wins: the file, each dropped change logged.
    again = config([vr_spec(rig.a, "a", queues=[{"weight": 3, "length": 128}])])
    assert start_refused(bin_dir, rig, tmp_path, again)[0] == 2
    rig.net.start_pearld(bin_dir, again, tmp_path, extra_args=(*rig.args, "--config-wins"))
    doc = rig.document()
    assert vr_names(doc) == [rig.a]
    assert doc["vrs"][0]["queues"] == [{"weight": 3, "length": 128}] and "routes" not in doc["vrs"][0]
    assert rig.b not in netns_names()
    log = (tmp_path / "pearld.log").read_text()
    assert f"--config-wins: dropping the stored state's vrs {rig.b}: only in the stored state" in log, log


def test_an_edited_file_wins_over_a_stored_state_without_run_time_changes(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("cf")
    rig.start(bin_dir, tmp_path, config([vr_spec(rig.a, "a")]))
    stop(rig)
    rig.net.start_pearld(bin_dir, config([vr_spec(rig.a, "a"), vr_spec(rig.b, "b")]), tmp_path, extra_args=rig.args)
    assert vr_names(rig.document()) == sorted([rig.a, rig.b])


def check(bin_dir, tmp_path, *args, ns=None):
    cmd = [str(bin_dir / "pearld"), "--check", *map(str, args), "--state", str(tmp_path / "state"), "--api", str(tmp_path / "check.sock")]
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_pearld_check_validates_as_a_start_does_and_touches_nothing(bin_dir, tmp_path):
    n = Network(f"ck{os.getpid() % 100000}")
    vr = f"{n.prefix}-v"
    try:
        for port in ("p0", "p1", "p2", "p3"):
            sh("ip", "link", "add", port, "netns", n.router, "type", "veth", "peer", "name", f"{port}x", "netns", n.router)
        good = tmp_path / "good.yaml"
        good.write_text(config([vr_spec(vr, "a")]))
        before = netns_names()
        done = check(bin_dir, tmp_path, good, ns=n.router)
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"{good}: valid: 4 port(s), 1 VR(s), 1 worker(s)\n"
        assert check(bin_dir, tmp_path, "--config", good, ns=n.router).returncode == 0, "--check --config FILE as well"

        bad = tmp_path / "bad.yaml"
        bad.write_text(config([vr_spec(vr, "a")]).replace(MACS["a"][1], MACS["a"][0]))
        done = check(bin_dir, tmp_path, bad, ns=n.router)
        assert done.returncode == 2
        assert "vrs[0].interfaces[1].mac: duplicate of vrs[0].interfaces[0].mac" in done.stderr, done.stderr

        # A port whose interface is missing: the start's very message.
        missing = tmp_path / "missing.yaml"
        missing.write_text(config([vr_spec(vr, "a")]).replace('"interface": "p3"', '"interface": "nosuch0"'))
        checked = check(bin_dir, tmp_path, missing, ns=n.router)
        started = subprocess.run(["ip", "netns", "exec", n.router, str(bin_dir / "pearld"), "--config", str(missing),
                                  "--api", str(tmp_path / "start.sock"), "--state", str(tmp_path / "start-state")],
                                 capture_output=True, text=True, timeout=60)
        assert checked.returncode == started.returncode == 2
        assert "ports[3]" in checked.stderr and "nosuch0" in checked.stderr, checked.stderr
        assert checked.stderr.strip() == started.stderr.strip().splitlines()[-1], (checked.stderr, started.stderr)

        assert netns_names() == before, "--check makes no namespace"
        assert not (tmp_path / "state").exists(), "--check writes no stored state"
        assert not list(tmp_path.glob("*.sock")), "--check serves no API"
    finally:
        n.close()


def canonical(doc):
    doc = json.loads(json.dumps(doc))
    doc["vrs"].sort(key=lambda v: v["name"])
    return json.dumps(doc, sort_keys=True)


def test_an_exported_file_starts_the_same_node(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("cx")
    document = with_runtime_changes(rig, bin_dir, tmp_path)
    assert rig.ctl(bin_dir, "queue", "set", rig.b, "2:128", "1:256").returncode == 0
    document = rig.document()
    exported = tmp_path / "exported.yaml"
    done = rig.ctl(bin_dir, "config", "export", "--output", exported)
    assert done.returncode == 0, done.stderr
    printed = rig.ctl(bin_dir, "config", "export")
    assert printed.stdout == exported.read_text()
    assert "vrs:\n  - " in printed.stdout, "block YAML, as a file is written by hand"
    shown = rig.ctl(bin_dir, "config", "show")
    assert shown.returncode == 0 and shown.stdout in printed.stdout, shown.stdout
    stop(rig)

    assert check(bin_dir, tmp_path, exported, ns=rig.net.router).returncode == 0
    rig.net.start_pearld(bin_dir, exported.read_text(), tmp_path, extra_args=("--state", tmp_path / "fresh-state"))
    assert canonical(rig.document()) == canonical(document)


def test_each_api_change_is_audited_with_who_what_and_the_result(rig_factory, bin_dir, tmp_path):
    rig = rig_factory("ca")
    a, b = rig.a, rig.b
    rig.start(bin_dir, tmp_path, config([vr_spec(a, "a", token=TOKEN_A), vr_spec(b, "b")], api={"admin_token": ADMIN}))
    made = rig.api("POST", f"/v1/vrs/{b}/routes", ADMIN, ROUTE)[0]
    bad = rig.api("POST", f"/v1/vrs/{b}/routes", ADMIN, {"prefix": "198.51.100.0/99", "via": "10.2.0.2"})
    own = rig.api("POST", f"/v1/vrs/{a}/routes", TOKEN_A, ROUTE)[0]
    assert made == own and made < 300 and bad[0] == 422
    assert rig.api("DELETE", f"/v1/vrs/{b}", TOKEN_A)[0] == 403
    assert rig.api("GET", f"/v1/vrs/{a}/routes", TOKEN_A)[0] == 200
    doc = rig.document(ADMIN)
    next(v for v in doc["vrs"] if v["name"] == b)["queues"] = [{"weight": 2, "length": 64}]
    assert rig.api("PUT", "/v1/config", ADMIN, doc)[0] == 200
    log = (tmp_path / "pearld.log").read_text()
    lines = [line for line in log.splitlines() if "audit: " in line]
    expected = [
        f"audit: admin: POST /v1/vrs/{b}/routes (vr {b}): applied ({made})",
        f"audit: admin: POST /v1/vrs/{b}/routes (vr {b}): refused (422) [{json.loads(bad[2])['field']}]: ",
        f"audit: VR {a}'s token: POST /v1/vrs/{a}/routes (vr {a}): applied ({own})",
        f"audit: VR {a}'s token: DELETE /v1/vrs/{b} (vr {b}): refused (403) [Authorization]: ",
        f"audit: admin: PUT /v1/config (vr {b}): applied (200)",
    ]
    assert len(lines) == len(expected), lines
    for line, want in zip(lines, expected):
        # At info level: no "warning:" or "error:" after the daemon's name.
        assert line.startswith(f"pearld: {want}"), (line, want)
