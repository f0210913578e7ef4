"""The Debian package as an operator installs it: `scripts/build-deb.sh` builds it, `dpkg -i`
installs it on this machine, the installed pearld runs the shipped configuration the way its
systemd unit starts it, pearlctl is on the PATH with man pages and completions, and `dpkg
--purge` takes it all away again. (systemd itself does not run in this test machine: the unit is
checked with `systemd-analyze verify` and its ExecStart is run by hand.)"""

import configparser
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
UNIT = pathlib.Path("/lib/systemd/system/pearld.service")


def run(*cmd, check=True, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, check=check, **kw)


@pytest.fixture(scope="module")
def installed():
    if run("dpkg-query", "-W", "-f=${Status}", "pearl", check=False).stdout.startswith("install ok"):
        pytest.fail("a pearl package is installed on this machine already; this test would remove it")
    # The binaries the other tests ran are the ones packaged (the suite built them already).
    deb = pathlib.Path(run("bash", ROOT / "scripts" / "build-deb.sh", "--prebuilt").stdout.strip().splitlines()[-1])
    assert deb.exists() and deb.suffix == ".deb", deb
    try:
        run("dpkg", "-i", deb)
        yield deb
    finally:
        run("dpkg", "--purge", "pearl", check=False)


def test_the_package_declares_itself_and_its_files(installed):
    info = run("dpkg-deb", "--field", installed, "Package", "Version", "Depends").stdout
    assert "Package: pearl" in info and "iproute2" in info, info
    files = run("dpkg-deb", "--contents", installed).stdout
    for path in ("./usr/bin/pearld", "./usr/bin/pearlctl", "./lib/systemd/system/pearld.service", "./etc/pearl/pearl.yaml",
                 "./usr/share/man/man1/pearld.1.gz", "./usr/share/man/man1/pearlctl.1.gz",
                 "./usr/share/man/man1/pearlctl-impair.1.gz", "./usr/share/bash-completion/completions/pearlctl"):
        assert path in files, f"{path} is not in the package"
    assert "/etc/pearl/pearl.yaml" in run("dpkg-query", "--control-show", "pearl", "conffiles").stdout


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
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        run("ip", "netns", "del", ns, check=False)
    assert proc.returncode == 0, out
    assert "running 0 VR(s)" in out, out


def test_purge_removes_everything_but_nothing_else(installed):
    run("dpkg", "--purge", "pearl")
    for path in ("/usr/bin/pearld", "/usr/bin/pearlctl", str(UNIT), "/etc/pearl/pearl.yaml", "/usr/share/man/man1/pearld.1.gz"):
        assert not pathlib.Path(path).exists(), path
