"""The Debian package as an operator installs it: `scripts/build-deb.sh` builds it (and
pearl-dev, the C header), dpkg-deb and lintian find it sound, `dpkg -i` installs it on this
machine, the installed pearld runs the shipped configuration the way its systemd unit starts
it, pearlctl is on the PATH with man pages and completions, the docs the README points to are
there, a newer package upgrades it, removing it stops every VR, and `dpkg --purge` takes it all
away again. (systemd itself does not run in this test machine: the unit is
checked with `systemd-analyze verify` and its ExecStart is run by hand.)"""

import configparser
import gzip
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
UNIT = pathlib.Path("/lib/systemd/system/pearld.service")
DOC = pathlib.Path("/usr/share/doc/pearl")
SOCKET = pathlib.Path("/run/pearl/pearl.sock")
# lintian's findings the packages keep, and why: the project has no public mail address (its
# Cargo.toml names "PEARL developers <pearl@localhost>"), and no bug tracker to close bugs in.
ACCEPTED_LINTIAN = {"bogus-mail-host", "bogus-mail-host-in-debian-changelog", "initial-upload-closes-no-bugs"}


def run(*cmd, check=True, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, check=check, **kw)


@pytest.fixture(scope="module")
def installed():
    if run("dpkg-query", "-W", "-f=${Status}", "pearl", check=False).stdout.startswith("install ok"):
        pytest.fail("a pearl package is installed on this machine already; this test would remove it")
    if SOCKET.exists():
        pytest.fail(f"{SOCKET} exists: a pearld runs on the package's socket; this test would stop it")
    # The binaries the other tests ran are the ones packaged (the suite built them already).
    deb, dev = map(pathlib.Path, run("bash", ROOT / "scripts" / "build-deb.sh", "--prebuilt").stdout.strip().splitlines()[-2:])
    assert deb.exists() and deb.name.startswith("pearl_") and dev.name.startswith("pearl-dev_"), (deb, dev)
    try:
        run("dpkg", "-i", deb, dev)
        yield deb, dev
    finally:
        run("dpkg", "--purge", "pearl", "pearl-dev", check=False)


def fields(deb, *names):
    out = run("dpkg-deb", "--field", deb, *names).stdout
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def cargo_version():
    return re.search(r'^version = "(.*)"', (ROOT / "Cargo.toml").read_text(), re.M).group(1)


def test_the_package_declares_itself_and_its_files(installed):
    deb, dev = installed
    info = fields(deb, "Package", "Version", "Depends", "Maintainer", "Homepage")
    assert info["Package"] == "pearl" and info["Version"] == cargo_version() + "-1", info
    # Versions from the binaries' own symbols (dpkg-shlibdeps), not bare names.
    depends = dict(re.match(r"([\w.+-]+)\s*(.*)", d.strip()).groups() for d in info["Depends"].split(","))
    assert depends["libc6"].startswith("(>= ") and "iproute2" in depends, info["Depends"]
    maintainer = re.search(r'^authors = \["(.*)"\]', (ROOT / "Cargo.toml").read_text(), re.M).group(1)
    assert info["Maintainer"] == maintainer and "Homepage" not in info, info
    files = run("dpkg-deb", "--contents", deb).stdout
    for path in ("./usr/bin/pearld", "./usr/bin/pearlctl", "./lib/systemd/system/pearld.service", "./etc/pearl/pearl.yaml",
                 "./usr/share/man/man1/pearld.1.gz", "./usr/share/man/man1/pearlctl.1.gz",
                 "./usr/share/man/man1/pearlctl-impair.1.gz", "./usr/share/man/man1/pearlctl-dashboard.1.gz",
                 "./usr/share/man/man5/pearl.yaml.5.gz",
                 "./usr/share/bash-completion/completions/pearlctl", "./usr/share/doc/pearl/changelog.Debian.gz",
                 "./usr/share/doc/pearl/copyright"):
        assert path in files, f"{path} is not in the package"
    assert "pearl_plugin.h" not in files
    assert "/etc/pearl/pearl.yaml" in run("dpkg-query", "--control-show", "pearl", "conffiles").stdout
    assert fields(dev, "Package", "Architecture") == {"Package": "pearl-dev", "Architecture": "all"}
    assert "./usr/include/pearl_plugin.h" in run("dpkg-deb", "--contents", dev).stdout
    assert pathlib.Path("/usr/include/pearl_plugin.h").read_bytes() == (ROOT / "crates/plugin-sdk/c/pearl_plugin.h").read_bytes()


def test_the_docs_the_packaged_readme_points_to_are_installed(installed):
    readme = (DOC / "README.md").read_text()
    named = set(re.findall(r"`((?:docs|examples)/[^`\s]*)`", readme))
    assert len(named) > 10, named
    missing = [p for p in named if "…" not in p and not (DOC / p).exists()]
    assert not missing, missing
    with gzip.open(DOC / "changelog.Debian.gz", "rt") as f:
        top = f.readline()
    assert top.startswith(f"pearl ({cargo_version()}-1) "), top


def test_lintian_finds_nothing_but_what_the_project_accepts(installed):
    if not shutil.which("lintian"):
        pytest.fail("lintian is missing: apt-get install lintian")
    out = run("lintian", "--tag-display-limit", "0", *installed, check=False).stdout
    found = [line for line in out.splitlines() if line[:2] in ("E:", "W:")]
    unexpected = [line for line in found if line.split()[2] not in ACCEPTED_LINTIAN]
    assert not unexpected, out


def test_pearlctl_is_on_the_path_with_man_pages(installed):
    assert shutil.which("pearlctl") == "/usr/bin/pearlctl"
    assert run("pearlctl", "--version").stdout.startswith("pearlctl ")
    page = run("man", "-P", "cat", "pearlctl-impair", env={**os.environ, "MANWIDTH": "100"}).stdout
    assert "delay" in page and "jitter" in page, page
    assert "--config" in run("man", "-P", "cat", "pearld").stdout


def test_the_unit_starts_pearld_on_the_shipped_configuration(installed, tmp_path):
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read(UNIT)
    service = unit["Service"]
    argv = shlex.split(service["ExecStart"])
    assert argv[:3] == ["/usr/bin/pearld", "--config", "/etc/pearl/pearl.yaml"] and "/var/lib/pearl" in argv, argv
    assert service["KillMode"] == "process", "a crashed pearld's VR daemons must survive for the next one to adopt"
    assert "--api-tcp" not in argv, "an API on a TCP port without a token is every local user's (pearlctl dashboard serves the page)"
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    if shutil.which("systemd-analyze"):
        # Unknown keys and values it could not parse are "ignoring" lines; the binary and the
        # man pages the unit names must exist.
        verify = run("systemd-analyze", "verify", UNIT, check=False).stderr
        assert not any(w in verify for w in ("ignoring", "Unknown", "not executable", "failed")), verify
    # Its ExecStart, by hand, in a namespace of its own, with the API and state in tmp_path.
    ns = f"pk{os.getpid() % 100000}"
    run("ip", "netns", "add", ns)
    api = tmp_path / "pearl.sock"
    args = list(argv)
    args[args.index("--api") + 1] = str(api)
    args[args.index("--state") + 1] = str(tmp_path / "state")
    proc = subprocess.Popen(["ip", "netns", "exec", ns, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 10
        while not api.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        stats = run("ip", "netns", "exec", ns, "pearlctl", "--socket", api, "stats", "--json", check=False)
        assert stats.returncode == 0, (stats.stderr, proc.poll())
    finally:
        # A stop signal would leave the node (its TAP holder) for a next pearld.
        if run("pearlctl", "--socket", api, "node", "stop", check=False).returncode != 0:
            proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        run("ip", "netns", "del", ns, check=False)
    assert proc.returncode == 0, out
    assert "running 0 VR(s)" in out, out


def test_a_newer_package_upgrades_it_keeping_the_configuration(installed, tmp_path):
    deb, _ = installed
    conf = pathlib.Path("/etc/pearl/pearl.yaml")
    edited = conf.read_text() + "# an operator's note\n"
    conf.write_text(edited)
    newer = f"{cargo_version()}-2"
    built = run("bash", ROOT / "scripts" / "build-deb.sh", "--prebuilt", "--version", newer).stdout.strip().splitlines()
    try:
        done = run("dpkg", "--force-confold", "-i", built[-2])
        assert run("dpkg-query", "-W", "-f=${Version}", "pearl").stdout == newer, done.stdout
        assert conf.read_text() == edited, "an upgrade keeps the operator's configuration"
        with gzip.open(DOC / "changelog.Debian.gz", "rt") as f:
            assert f.readline().startswith(f"pearl ({newer}) ")
    finally:
        run("dpkg", "-i", deb)  # back to the version the other tests expect
        for path in built:
            pathlib.Path(path).unlink(missing_ok=True)


def test_removing_the_package_stops_the_running_pearld_and_its_vrs(installed, tmp_path):
    """Without systemd here, pearld runs as the unit starts it, on the package's socket; prerm
    asks it to stop everything (`pearlctl node stop`)."""
    ns = f"pr{os.getpid() % 100000}"
    run("ip", "netns", "add", ns)
    SOCKET.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(["ip", "netns", "exec", ns, "/usr/bin/pearld", "--config", "/etc/pearl/pearl.yaml", "--api", str(SOCKET),
                             "--state", str(tmp_path / "state")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 10
        while not SOCKET.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert SOCKET.exists(), proc.poll()
        run("dpkg", "-r", "pearl")
        assert not pathlib.Path("/usr/bin/pearld").exists() and pathlib.Path("/etc/pearl/pearl.yaml").exists(), \
            "remove keeps the configuration for a purge to take"
        assert proc.wait(timeout=30) == 0, proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        run("ip", "netns", "del", ns, check=False)
        SOCKET.unlink(missing_ok=True)
        run("dpkg", "-i", installed[0])


def test_purge_removes_everything_but_nothing_else(installed):
    run("dpkg", "--purge", "pearl")
    for path in ("/usr/bin/pearld", "/usr/bin/pearlctl", str(UNIT), "/etc/pearl/pearl.yaml", "/usr/share/man/man1/pearld.1.gz"):
        assert not pathlib.Path(path).exists(), path
