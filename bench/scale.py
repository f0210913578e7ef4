#!/usr/bin/env python3
"""Many VRs on one node (issue 15): for each N, pearld starts with N VRs of one kind (two
interfaces each on two veth ports, no routing daemon, no traffic) from `--config`, and we take
what a user of such a node meets: the time until the API answers, pearld's threads and resident
memory, its CPU while everything is idle, the latency of `/v1/stats`, one more VR created and
deleted through the API (p50 over several), and the time SIGTERM takes to remove everything,
with what it left behind. One JSON line per N on stdout.

The peer, measured in the same run: the same N routers made the way one would without PEARL,
with iproute2 (`ip -batch` adding the namespaces, then per namespace one `ip -n NS -batch`
making two TAPs with their MACs and addresses, up), and removed with `ip -batch` deleting
the namespaces. It has no process of its own, so no idle CPU or memory to compare.

Run as root: bench/scale.py --vrs 256,1024 [--kind fast|kernel|shared] [--idle-seconds 60] [--settle-seconds 20]
  [--pearld target/release/pearld] [--out docs/benchmarks/scale]  (writes OUT.json and OUT.md)"""

import argparse
import http.client
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PREFIX = "scb"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def sh(*cmd, check=True):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: {done.stderr.strip()}")
    return done


class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=120)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(120)
        self.sock.connect(self.path)


def call(api, method, path, body=None):
    c = Unix(api)
    c.request(method, path, body=None if body is None else json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status >= 300:
        raise RuntimeError(f"{method} {path}: {r.status} {data[:300]!r}")
    return data


def mac(vr, interface, kind):
    if kind == "shared":
        return f"02:{vr & 0xff:02x}:{vr >> 8:02x}:00:00:{interface:02x}"
    return f"02:00:{vr >> 8:02x}:{vr & 0xff:02x}:01:{interface:02x}"


def vr_item(vr, kind):
    return {"name": f"{PREFIX}{vr}", "id": vr, "kind": kind, "interfaces": [
        {"name": f"eth{i}", "port": f"p{i}", "mac": mac(vr, i, kind), "addresses": [f"10.{i + 1}.0.1/24"]} for i in (0, 1)]}


def config(n, kind):
    ports = [{"name": f"p{i}", "interface": f"{PREFIX}p{i}", "driver": "af_packet"} for i in (0, 1)]
    return {"ports": ports, "vrs": [vr_item(v, kind) for v in range(n)]}


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def leftovers():
    spaces = [l.split()[0] for l in sh("ip", "netns", "list").stdout.splitlines() if l.startswith(PREFIX)]
    found = sh("find", "/sys/fs/cgroup", "-maxdepth", "4", "-type", "d", "-name", f"{PREFIX}*", check=False).stdout
    cgroups = found.split()
    return {"namespaces": len(spaces), "cgroups": len(cgroups)}


def batch(lines, ns=None):
    done = subprocess.run(["ip", *(["-n", ns] if ns else []), "-batch", "-"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip -batch: {done.stderr.strip()[:300]}")


def kernel_peer(n, kind):
    """Seconds to make and to remove N namespaces with two configured TAPs each."""
    names = [f"{PREFIX}k{v}" for v in range(n)]
    started = time.monotonic()
    try:
        batch([f"netns add {ns}" for ns in names])
        for v, ns in enumerate(names):
            lines = ["link set lo up"]
            for i in (0, 1):
                lines += [f"tuntap add dev eth{i} mode tap", f"link set eth{i} address {mac(v, i, kind)}",
                          f"addr add 10.{i + 1}.0.1/24 dev eth{i}", f"link set eth{i} up"]
            batch(lines, ns)
        up = time.monotonic() - started
    finally:
        s = time.monotonic()
        made = [ns for ns in names if os.path.exists(f"/run/netns/{ns}")]
        if made:
            batch([f"netns del {ns}" for ns in made])
        stop = time.monotonic() - s
    return {"start_s": round(up, 2), "stop_s": round(stop, 2)}


def point(pearld, n, kind, idle_seconds, settle_seconds, creates):
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pearl-scale-"))
    (tmp / "pearl.yaml").write_text(json.dumps(config(n, kind)))
    api = str(tmp / "api.sock")
    started = time.monotonic()
    proc = subprocess.Popen([pearld, "--config", tmp / "pearl.yaml", "--api", api, "--state", tmp / "state"],
                            stdout=open(tmp / "pearld.log", "w"), stderr=subprocess.STDOUT)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"pearld exited: {(tmp / 'pearld.log').read_text()[-2000:]}")
            try:
                call(api, "GET", "/healthz")
                break
            except OSError:
                time.sleep(0.1)
        up = time.monotonic() - started
        # The VRs' kernels announce themselves for a while after their TAPs come up (DAD,
        # router solicitations, MLD reports: ~4 frames each); idle is what follows.
        time.sleep(settle_seconds)
        threads = len(os.listdir(f"/proc/{proc.pid}/task"))
        rss = rss_mib(proc.pid)
        t0, c0 = time.monotonic(), cpu_ticks(proc.pid)
        time.sleep(idle_seconds)
        idle_cpu = (cpu_ticks(proc.pid) - c0) / CLK_TCK / (time.monotonic() - t0)
        stats_ms = []
        for _ in range(5):
            s = time.monotonic()
            call(api, "GET", "/v1/stats")
            stats_ms.append((time.monotonic() - s) * 1000)
        create_ms, delete_ms = [], []
        for k in range(creates):
            # Ids above the N present (a node holds up to 8,192): one more VR with N there.
            item = vr_item(n + k, kind)
            s = time.monotonic()
            call(api, "POST", "/v1/vrs", item)
            create_ms.append((time.monotonic() - s) * 1000)
            s = time.monotonic()
            call(api, "DELETE", f"/v1/vrs/{item['name']}")
            delete_ms.append((time.monotonic() - s) * 1000)
        s = time.monotonic()
        proc.terminate()
        proc.wait(timeout=600)
        stop = time.monotonic() - s
        return {"vrs": n, "kind": kind, "start_s": round(up, 2), "threads": threads, "rss_mib": round(rss, 1),
                "rss_per_vr_kib": round(rss * 1024 / n, 1), "idle_cpu_percent": round(idle_cpu * 100, 2),
                "idle_seconds": idle_seconds, "settle_seconds": settle_seconds, "stats_ms_p50": round(statistics.median(stats_ms), 1),
                "create_ms_p50": round(statistics.median(create_ms), 1) if create_ms else None,
                "delete_ms_p50": round(statistics.median(delete_ms), 1) if delete_ms else None,
                "stop_s": round(stop, 2), "left_behind": leftovers()}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vrs", default="256,1024")
    ap.add_argument("--kind", default="fast", choices=["fast", "kernel", "shared"])
    ap.add_argument("--idle-seconds", type=float, default=60)
    ap.add_argument("--settle-seconds", type=float, default=20)
    ap.add_argument("--creates", type=int, default=9)
    ap.add_argument("--pearld", default=str(ROOT / "target" / "release" / "pearld"))
    ap.add_argument("--out", help="write OUT.json and OUT.md")
    a = ap.parse_args()
    for i in (0, 1):
        sh("ip", "link", "del", f"{PREFIX}p{i}", check=False)
        sh("ip", "link", "add", f"{PREFIX}p{i}", "type", "veth", "peer", "name", f"{PREFIX}q{i}")
        sh("ip", "link", "set", f"{PREFIX}p{i}", "up")
        sh("ip", "link", "set", f"{PREFIX}q{i}", "up")
    results = []
    try:
        for n in [int(x) for x in a.vrs.split(",")]:
            r = point(a.pearld, n, a.kind, a.idle_seconds, a.settle_seconds, a.creates)
            # The kernel's namespaces of one run are still being freed for a while after it.
            time.sleep(30)
            r["kernel_peer"] = kernel_peer(n, a.kind)
            r["start_vs_kernel"] = round(r["start_s"] / r["kernel_peer"]["start_s"], 2)
            r["stop_vs_kernel"] = round(r["stop_s"] / r["kernel_peer"]["stop_s"], 2)
            print(json.dumps(r), flush=True)
            time.sleep(30)
            results.append(r)
    finally:
        for i in (0, 1):
            sh("ip", "link", "del", f"{PREFIX}p{i}", check=False)
    if a.out:
        out = pathlib.Path(a.out)
        out.with_suffix(".json").write_text(json.dumps({"command": " ".join(sys.argv), "kernel": os.uname().release,
                                                        "cpus": os.cpu_count(), "points": results}, indent=1) + "\n")
        head = "| VRs | kind | start | kernel peer start | ratio | threads | RSS | RSS/VR | idle CPU | /v1/stats | API create p50 | API delete p50 | stop | kernel peer stop | ratio | left behind |\n"
        head += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        rows = "".join(f"| {r['vrs']} | {r['kind']} | {r['start_s']} s | {r['kernel_peer']['start_s']} s | {r['start_vs_kernel']} | {r['threads']} | "
                       f"{r['rss_mib']} MiB | {r['rss_per_vr_kib']} KiB | "
                       f"{r['idle_cpu_percent']} % | {r['stats_ms_p50']} ms | {r['create_ms_p50']} ms | {r['delete_ms_p50']} ms | "
                       f"{r['stop_s']} s | {r['kernel_peer']['stop_s']} s | {r['stop_vs_kernel']} | "
                       f"{r['left_behind']['namespaces']} ns, {r['left_behind']['cgroups']} cgroups |\n" for r in results)
        out.with_suffix(".md").write_text(f"# Many VRs on one node\n\n`{' '.join(sys.argv)}` ({os.cpu_count()} CPUs, kernel "
                                          f"{os.uname().release}); idle CPU over {a.idle_seconds:g} s, pearld's own.\n\n" + head + rows)


if __name__ == "__main__":
    main()
