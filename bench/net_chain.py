#!/usr/bin/env python3
"""A chain of N routers between two hosts, two ways in the same run: N fast VRs of one net
(`pearlctl net apply`) joined by wires inside PEARL's fast path, and N kernel routers in
namespaces joined by veths (the containerlab way). iperf3 TCP from one host to the other, Gb/s.

    sudo python3 bench/net_chain.py --chains 1,2,4,8 --seconds 5 --out docs/benchmarks/net.json
"""

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "system"))
from netns import Network, remove_netns, sh  # noqa: E402


def iperf(client, server, dst, seconds):
    s = subprocess.Popen(["ip", "netns", "exec", server, "iperf3", "-s", "-1", "-p", "5401"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    done = sh("iperf3", "-c", dst, "-p", "5401", "-t", seconds, "-J", ns=client, check=False)
    s.wait(timeout=30)
    return json.loads(done.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9


def chain_net(name, n):
    """Net `name`: h1 — v1 — … — vN — h2, 10.0.K.0/24 between router K and K+1 (0: h1, N: h2)."""
    vrs = []
    for k in range(1, n + 1):
        routes = []
        if k > 1:
            routes.append(f"{{prefix: 10.0.0.0/24, via: 10.0.{k - 1}.1}}")
        if k < n:
            routes.append(f"{{prefix: 10.0.{n}.0/24, via: 10.0.{k}.2}}")
        vrs.append(f"""  - name: {name}v{k}
    interfaces:
      - {{name: eth0, mac: "02:00:00:{k:02x}:00:00", addresses: [10.0.{k - 1}.2/24]}}
      - {{name: eth1, mac: "02:00:00:{k:02x}:00:01", addresses: [10.0.{k}.1/24]}}
    routes: [{", ".join(routes)}]""")
    links = [f"  - {{a: h1/eth0, b: {name}v1/eth0}}"]
    links += [f"  - {{a: {name}v{k}/eth1, b: {name}v{k + 1}/eth0}}" for k in range(1, n)]
    links.append(f"  - {{a: h2/eth0, b: {name}v{n}/eth1}}")
    vr_text, link_text = "\n".join(vrs), "\n".join(links)
    return f"""name: {name}
vrs:
{vr_text}
hosts:
  - {{name: h1, interfaces: [{{name: eth0, addresses: [10.0.0.1/24]}}], routes: [{{to: default, via: 10.0.0.2}}]}}
  - {{name: h2, interfaces: [{{name: eth0, addresses: [10.0.{n}.2/24]}}], routes: [{{to: default, via: 10.0.{n}.1}}]}}
links:
{link_text}
"""


def pearl_chain(bin_dir, n, seconds):
    prefix = f"c{os.getpid() % 1000}"
    net = Network(prefix)
    tmp = pathlib.Path(tempfile.mkdtemp())
    try:
        net.start_pearld(bin_dir, "vrs: []\n", tmp)
        f = tmp / "chain.yaml"
        f.write_text(chain_net(prefix, n))
        ctl = ["ip", "netns", "exec", net.router, str(bin_dir / "pearlctl"), "--socket", str(net.api)]
        subprocess.run([*ctl, "net", "apply", "-f", f], check=True, capture_output=True)
        deadline = time.time() + 30
        while sh("ping", "-c", "1", "-W", "1", f"10.0.{n}.2", ns=f"{prefix}-h1", check=False).returncode != 0:
            if time.time() > deadline:
                raise RuntimeError("the chain does not carry a ping")
        return iperf(f"{prefix}-h1", f"{prefix}-h2", f"10.0.{n}.2", seconds)
    finally:
        subprocess.run(["ip", "netns", "exec", net.router, str(bin_dir / "pearlctl"), "--socket", str(net.api),
                        "net", "destroy", prefix], capture_output=True)
        net.close()
        for ns in (f"{prefix}-h1", f"{prefix}-h2", *(f"{prefix}v{k}" for k in range(1, n + 1))):
            remove_netns(ns)


def kernel_chain(n, seconds):
    """The same chain of kernel routers: namespaces with ip_forward, joined by veths."""
    p = f"k{os.getpid() % 1000}"
    nodes = [f"{p}h1", *(f"{p}r{k}" for k in range(1, n + 1)), f"{p}h2"]
    try:
        for ns in nodes:
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        for k in range(n + 1):
            left, right = nodes[k], nodes[k + 1]
            # Subnet K: eth1 on the left (.1), eth0 on the right (.2), as in the net.
            sh("ip", "link", "add", "eth1", "netns", left, "type", "veth", "peer", "name", "eth0", "netns", right)
            sh("ip", "addr", "add", f"10.0.{k}.1/24", "dev", "eth1", ns=left)
            sh("ip", "addr", "add", f"10.0.{k}.2/24", "dev", "eth0", ns=right)
            sh("ip", "link", "set", "eth1", "up", ns=left)
            sh("ip", "link", "set", "eth0", "up", ns=right)
        for k, ns in enumerate(nodes[1:-1], start=1):
            sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=ns)
            if k < n:
                sh("ip", "route", "add", f"10.0.{n}.0/24", "via", f"10.0.{k}.2", ns=ns)
            if k > 1:
                sh("ip", "route", "add", "10.0.0.0/24", "via", f"10.0.{k - 1}.1", ns=ns)
        sh("ip", "route", "add", "default", "via", "10.0.0.2", ns=nodes[0])
        sh("ip", "route", "add", "default", "via", f"10.0.{n}.1", ns=nodes[-1])
        sh("ping", "-c", "1", "-W", "2", f"10.0.{n}.2", ns=nodes[0])
        return iperf(nodes[0], nodes[-1], f"10.0.{n}.2", seconds)
    finally:
        for ns in nodes:
            remove_netns(ns)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chains", default="1,2,4,8")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--bin-dir", default=str(HERE.parent / "target" / "release"))
    ap.add_argument("--out")
    args = ap.parse_args()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
    rows = []
    for n in map(int, args.chains.split(",")):
        pearl = pearl_chain(pathlib.Path(args.bin_dir), n, args.seconds)
        kernel = kernel_chain(n, args.seconds)
        rows.append({"routers": n, "pearl_wires_tcp_gbps": round(pearl, 2), "kernel_veths_tcp_gbps": round(kernel, 2)})
        print(f"{n} router(s): PEARL fast VRs on wires {pearl:.2f} Gb/s, kernel routers on veths {kernel:.2f} Gb/s",
              flush=True)
    report = {"cpu": cpu, "cpus": os.cpu_count(), "seconds": args.seconds, "command": " ".join(sys.argv), "rows": rows}
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
