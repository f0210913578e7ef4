"""The forwarding gap of a package upgrade: `dpkg -i` of a newer pearl .deb over an installed,
running older one, with one VR (fast, kernel or shared, a run each) forwarding 1,000 sequenced
UDP datagrams a second (a 1 ms ping's rate) between two hosts, and the Linux kernel router forwarding the same stream between
two other hosts in the same run (the peer: it has nothing to restart).

Both packages are built from this tree (`scripts/build-deb.sh --prebuilt --version`), the older
as VERSION-0, the newer as VERSION-1. systemd is not PID 1 on the project's machine, so the
unit's ExecStart runs by hand and the postinst's `systemctl try-restart` is done as systemd does
it: SIGTERM to the running pearld, then ExecStart again. Needs root; refuses to run where a pearl
package is installed.

  python3 bench/upgrade_gap.py [--runs 3] [--out docs/benchmarks/restart-upgrade]
"""

import argparse
import datetime
import json
import os
import pathlib
import shlex
import signal
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
from netns import api_get, one_vr, sh, two_hosts  # noqa: E402

SEQ = ROOT / "tests" / "system" / "seq_udp.py"
SOCKET = pathlib.Path("/run/pearl/pearl.sock")
CONF = pathlib.Path("/etc/pearl/pearl.yaml")
UNIT = pathlib.Path("/lib/systemd/system/pearld.service")
PPS, BEFORE_S, AFTER_S = 1000, 3, 4


def run(*cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=True, timeout=600)


def exec_start():
    line = next(l for l in UNIT.read_text().splitlines() if l.startswith("ExecStart="))
    return shlex.split(line.split("=", 1)[1])


def start_pearld(router, log):
    """The unit's ExecStart in the router's namespace; returns once the API answers."""
    proc = subprocess.Popen(["ip", "netns", "exec", router, *exec_start()], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"pearld exited {proc.returncode}")
        try:
            api_get(SOCKET, "/v1/stats")
            return proc
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("pearld did not come up")


def stream(net, seconds):
    """Starts a sequenced stream a → b; returns (sender, sink)."""
    sink = subprocess.Popen(["ip", "netns", "exec", net.hosts["b"], sys.executable, SEQ, "sink", "4001", str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    sender = subprocess.Popen(["ip", "netns", "exec", net.hosts["a"], sys.executable, SEQ, "send", "10.2.0.2", "4001", str(PPS),
                               str(seconds)], stdout=subprocess.PIPE, text=True)
    return sender, sink


def result(sender, sink):
    sent = int(sender.communicate(timeout=60)[0])
    got = json.loads(sink.communicate(timeout=60)[0])
    return {"sent": sent, "lost": sent - got["unique"], "max_gap_ms": round(got["max_gap_ms"], 1)}


def one_run(i, kind, old, new, log):
    prefix = f"ug{os.getpid() % 1000}{i}"
    pearl, kernel = two_hosts(prefix + "p"), two_hosts(prefix + "k")
    proc = None
    try:
        for port, addr in (("p0", "10.1.0.1/24"), ("p1", "10.2.0.1/24")):
            sh("ip", "addr", "add", addr, "dev", port, ns=kernel.router)
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=kernel.router)
        run("dpkg", "-i", old)
        # A shared VR's MACs name its id (0) and interfaces.
        macs = ("02:00:00:00:00:00", "02:00:00:00:00:01") if kind == "shared" else ("02:00:00:00:01:00", "02:00:00:00:01:01")
        CONF.write_text(one_vr(f"{prefix}v", kind=kind, driver="driver: af_packet", macs=macs))
        proc = start_pearld(pearl.router, log)
        seconds = BEFORE_S + AFTER_S + 10
        flows = {"pearld": stream(pearl, seconds), "kernel": stream(kernel, seconds)}
        time.sleep(BEFORE_S)
        t0 = time.monotonic()
        run("dpkg", "--force-confold", "-i", new)
        t_dpkg = time.monotonic() - t0
        # postinst's try-restart, as systemd does it.
        t1 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        t_stopped = time.monotonic() - t1
        proc = start_pearld(pearl.router, log)
        t_restart = time.monotonic() - t1
        out = {k: result(*f) for k, f in flows.items()}
        return {"dpkg_seconds": round(t_dpkg, 2), "sigterm_to_exit_seconds": round(t_stopped, 2),
                "sigterm_to_api_seconds": round(t_restart, 2), **out}
    finally:
        if proc is not None and proc.poll() is None:
            # SIGTERM would leave the VR running (live restore): the explicit teardown.
            subprocess.run(["pearlctl", "--socket", str(SOCKET), "node", "stop"], capture_output=True, timeout=120)
            proc.wait(timeout=120)
        run("dpkg", "--purge", "pearl")
        pearl.close()
        kernel.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kinds", default="fast,kernel,shared")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "restart-upgrade"))
    args = ap.parse_args()
    if subprocess.run(["dpkg-query", "-W", "-f=${Status}", "pearl"], capture_output=True, text=True).stdout.startswith("install ok"):
        sys.exit("a pearl package is installed; this benchmark installs and purges its own")
    if SOCKET.exists():
        sys.exit(f"{SOCKET} exists: a pearld runs on the package's socket")
    version = run("sed", "-n", 's/^version = "\\(.*\\)"/\\1/p', ROOT / "Cargo.toml").stdout.split()[0]
    old = run("bash", ROOT / "scripts/build-deb.sh", "--prebuilt", "--version", f"{version}-0").stdout.split()[-2]
    new = run("bash", ROOT / "scripts/build-deb.sh", "--prebuilt").stdout.split()[-2]
    # pearld's own output, for a run that went wrong.
    log = open("/tmp/upgrade_gap.pearld.log", "w")
    kinds = args.kinds.split(",")
    runs = {kind: [one_run(i, kind, old, new, log) for i in range(args.runs)] for kind in kinds}

    def median(kind, key, sub=None):
        return statistics.median(r[key][sub] if sub else r[key] for r in runs[kind])

    report = {
        "what": "forwarding gap of `dpkg -i` of a newer pearl .deb over a running older one (postinst try-restart done by hand: "
                "systemd is not PID 1 here; SIGTERM leaves the VR running and the new pearld adopts it), one VR per run "
                "(fast, kernel, shared), 1,000 sequenced UDP datagrams/s a→b; the Linux kernel router forwarding the same "
                "stream in the same run",
        "command": "python3 bench/upgrade_gap.py --runs %d" % args.runs,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "cpu": next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?"),
        "commit": run("git", "-C", ROOT, "rev-parse", "--short", "HEAD").stdout.strip(),
        "packages": [pathlib.Path(old).name, pathlib.Path(new).name],
        "median": {kind: {"pearld_max_gap_ms": median(kind, "pearld", "max_gap_ms"), "pearld_lost": median(kind, "pearld", "lost"),
                          "kernel_max_gap_ms": median(kind, "kernel", "max_gap_ms"), "kernel_lost": median(kind, "kernel", "lost"),
                          "sigterm_to_api_seconds": median(kind, "sigterm_to_api_seconds"), "dpkg_seconds": median(kind, "dpkg_seconds")}
                   for kind in kinds},
        "runs": runs,
    }
    pathlib.Path(args.out).with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["median"]))


if __name__ == "__main__":
    main()
