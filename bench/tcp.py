#!/usr/bin/env python3
"""TCP through one router, hosts as they come (the kernel's default offloads on veth): iperf3
from host a to host b through a fast pearld VR and, on the same topology in the same run, through
the Linux kernel router (a namespace with ip_forward). Runs alternate; medians are reported.

Figures per case (streams, family, MTU, router): Gb/s received, retransmits, and CPU per GB:
the whole machine's busy CPU time (user, system, irq, softirq on every core, from /proc/stat)
divided by the gigabytes moved. The hosts' own work is the same behind either router, so the
difference is what the router costs; pearld's own process time per GB is given too.

Run as root: sudo bench/tcp.py [--runs 3] [--seconds 5] [--pearld target/release/pearld]
Writes docs/benchmarks/tcp.json and docs/benchmarks/tcp.md."""

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
from netns import one_vr, sh, two_hosts  # noqa: E402

PREFIX = "tcpb"
# port variant → (the ports' driver keys, what goes before them in pearld's configuration)
PORTS = {
    "af_packet": ("driver: af_packet", ""),
    "rx_af_packet": ("driver: af_xdp, rx: af_packet", ""),
    # As a new user first writes a port: pearld chooses by the device.
    "no_driver": ("", ""),
    # The fast path alone: no flow handed to the kernel.
    "af_packet_no_offload": ("driver: af_packet", "node: {flow_offload: false}\n"),
}


def kernel_router(n):
    r = n.router
    for port, v4, v6, mac in (("p0", "10.1.0.1/24", "2001:db8:1::1/64", "02:00:00:00:01:00"),
                              ("p1", "10.2.0.1/24", "2001:db8:2::1/64", "02:00:00:00:01:01")):
        sh("ip", "link", "set", port, "address", mac, ns=r)
        sh("ip", "addr", "add", v4, "dev", port, ns=r)
        sh("ip", "addr", "add", v6, "dev", port, "nodad", ns=r)
    sh("sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1", ns=r)


def busy_jiffies():
    fields = open("/proc/stat").readline().split()[1:]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return user + nice + system + irq + softirq + steal


def process_jiffies(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def iperf(n, dst, streams, seconds):
    # Warm-up: neighbours resolved, routes mirrored.
    sh("ping", *(["-6"] if ":" in dst else []), "-c", "2", "-W", "1", dst, ns=n.hosts["a"], check=False)
    end = n.iperf("a", "b", dst, "-P", streams, seconds=seconds, port=5301)
    return end["sum_received"]["bytes"], end["sum_received"]["bits_per_second"], end["sum_sent"].get("retransmits", 0)


def measure(router, port, family, mtu, streams, seconds, pearld, tmp):
    n = two_hosts(PREFIX, mtu=mtu)
    try:
        proc = None
        if router == "kernel":
            kernel_router(n)
        else:
            driver, node = PORTS[port]
            proc = n.start_pearld(pathlib.Path(pearld).parent, node + one_vr(f"{PREFIX}v", driver=driver), tmp)
            time.sleep(1)
        dst = "10.2.0.2" if family == "v4" else "2001:db8:2::2"
        hz = os.sysconf("SC_CLK_TCK")
        busy0, own0 = busy_jiffies(), process_jiffies(proc.pid) if proc else 0
        moved, bps, retrans = iperf(n, dst, streams, seconds)
        busy1, own1 = busy_jiffies(), process_jiffies(proc.pid) if proc else 0
        gb = moved / 1e9
        return {
            "gbps": bps / 1e9,
            "retransmits": retrans,
            "cpu_s_per_gb": (busy1 - busy0) / hz / gb if gb else None,
            "router_process_cpu_s_per_gb": (own1 - own0) / hz / gb if proc and gb else None,
        }
    finally:
        n.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--streams", default="1,8")
    ap.add_argument("--families", default="v4,v6")
    ap.add_argument("--mtus", default="1500,9000")
    ap.add_argument("--ports", default="af_packet,rx_af_packet")
    ap.add_argument("--pearld", default=str(ROOT / "target" / "release" / "pearld"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks"))
    ap.add_argument("--name", default="tcp", help="the files written: NAME.json and NAME.md")
    a = ap.parse_args()
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for mtu in map(int, a.mtus.split(",")):
            for family in a.families.split(","):
                for streams in map(int, a.streams.split(",")):
                    routers = [("kernel", None)] + [("pearld", p) for p in a.ports.split(",")]
                    samples = {r: [] for r in routers}
                    for run in range(a.runs):
                        for r in routers:
                            m = measure(r[0], r[1], family, mtu, streams, a.seconds, a.pearld, pathlib.Path(tmp))
                            samples[r].append(m)
                            print(f"mtu {mtu} {family} P{streams} {r[0]} {r[1] or ''} run {run}: {m}", flush=True)
                    med = lambda xs, k: statistics.median([x[k] for x in xs if x[k] is not None]) if any(x[k] is not None for x in xs) else None
                    for r, xs in samples.items():
                        cases.append({
                            "mtu": mtu, "family": family, "streams": streams, "router": r[0], "port": r[1],
                            "gbps": med(xs, "gbps"), "retransmits": med(xs, "retransmits"),
                            "cpu_s_per_gb": med(xs, "cpu_s_per_gb"),
                            "router_process_cpu_s_per_gb": med(xs, "router_process_cpu_s_per_gb"),
                            "runs": xs,
                        })
    out = pathlib.Path(a.out)
    meta = {"date": time.strftime("%Y-%m-%d"), "runs": a.runs, "seconds": a.seconds, "machine": os.uname().release,
            "cpus": os.cpu_count(), "command": "sudo bench/tcp.py " + " ".join(sys.argv[1:])}
    (out / f"{a.name}.json").write_text(json.dumps({"meta": meta, "cases": cases}, indent=1) + "\n")
    lines = [
        "# TCP through one router, hosts with default offloads",
        "",
        f"`{meta['command']}` on {meta['date']} ({meta['cpus']} CPUs, kernel {meta['machine']}); medians of "
        f"{a.runs} runs of {a.seconds} s, routers alternating. CPU/GB is the whole machine's busy CPU time "
        "per gigabyte received (the hosts' share is the same behind either router); pearld's own process "
        "time per GB in the last column. Ratios are pearld / kernel router.",
        "",
        "| MTU | family | streams | router | Gb/s | ratio | retransmits | CPU s/GB | ratio | pearld s/GB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        k = next(x for x in cases if (x["mtu"], x["family"], x["streams"], x["router"]) == (c["mtu"], c["family"], c["streams"], "kernel"))
        ratio = lambda key: f"{c[key] / k[key]:.2f}" if c["router"] != "kernel" and c[key] and k[key] else ""
        fmt = lambda v, f: format(v, f) if v is not None else "–"
        name = "kernel" if c["router"] == "kernel" else f"pearld ({c['port']})"
        lines.append(f"| {c['mtu']} | {c['family']} | {c['streams']} | {name} | {fmt(c['gbps'], '.2f')} | {ratio('gbps')} | "
                     f"{fmt(c['retransmits'], '.0f')} | {fmt(c['cpu_s_per_gb'], '.3f')} | {ratio('cpu_s_per_gb')} | "
                     f"{fmt(c['router_process_cpu_s_per_gb'], '.3f')} |")
    lines += [
        "",
        "pearld runs with `node.flow_offload` on (its default) unless the port says `no_offload`: an "
        "established TCP flow the fast path has routed is then forwarded by the kernel's tc layer with "
        "the fast path's decision (next hop's MACs, TTL or hop limit −1), its super-packets whole and "
        "uncopied, so pearld's own CPU per GB is about zero; `af_packet_no_offload` is the fast path "
        "alone, every super-packet copied through pearld.",
    ]
    (out / f"{a.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
