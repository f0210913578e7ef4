"""The network part of the demo: three VRs of the three kinds, all with the same addresses
(10.1.0.0/24 and 10.2.0.0/24), each between two host namespaces of its own:

  red    fast path, FRR (zebra + staticd) inside its namespace routes 198.51.100.0/24
  green  kernel: its namespace's kernel forwards every packet
  blue   shared: a low-priority VR on the shared channel (MACs 02:VR:00:00:00:IF)

Traffic flows through all three (UDP blasts, and iperf3 TCP from hosts with the kernel's default
offloads) while `pearlctl stats --watch` shows the counters live and the
dashboard is served on http://169.254.77.2:8080/ (a link from this machine into pearld's
namespace). Runs DEMO_SECONDS (default 20; 0 = until Ctrl-C). Everything it creates is removed
at the end, on Ctrl-C too."""

import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
from netns import Network, sh  # noqa: E402

BIN = ROOT / "target" / "release"
DASHBOARD = "169.254.77.2"
FRR_CONF = "ip route 198.51.100.0/24 10.2.0.2\n"

# (VR, kind, the VR's two MACs, host a's and b's MACs, destination the traffic goes to)
VRS = (
    ("red", "fast", ("02:00:00:00:01:00", "02:00:00:00:01:01"), ("02:aa:00:00:01:01", "02:aa:00:00:01:02"), "198.51.100.9"),
    ("green", "kernel", ("02:00:00:00:02:00", "02:00:00:00:02:01"), ("02:aa:00:00:02:01", "02:aa:00:00:02:02"), "10.2.0.2"),
    ("blue", "shared", ("02:02:00:00:00:00", "02:02:00:00:00:01"), ("02:aa:00:00:03:01", "02:aa:00:00:03:02"), "10.2.0.2"),
)


def config(prefix, frr_conf):
    ports = "".join(f"  - {{name: {v[0]}0, interface: {prefix[:3]}{v[0][0]}0, driver: af_packet}}\n"
                    f"  - {{name: {v[0]}1, interface: {prefix[:3]}{v[0][0]}1, driver: af_packet}}\n" for v in VRS)
    vrs = ""
    for i, (vr, kind, macs, _, _) in enumerate(VRS):
        vrs += f"""  - name: {prefix}{vr}
    id: {i}
    kind: {kind}
    interfaces:
      - {{name: eth0, port: {vr}0, mac: "{macs[0]}", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: {vr}1, mac: "{macs[1]}", addresses: [10.2.0.1/24]}}
    queues: [{{weight: {3 - i}, length: 512}}]
"""
        if vr == "red":
            vrs += f"    control_plane: {{frr: {{daemons: [zebra, staticd], config: {frr_conf}}}}}\n"
    return f"workers: 1\nports:\n{ports}vrs:\n{vrs}"


def main():
    seconds = float(os.environ.get("DEMO_SECONDS", "20"))
    prefix = f"d{os.getpid() % 1000}"
    net = Network(prefix)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pearl-demo-"))
    procs = []
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        for vr, _, _, hosts, _ in VRS:
            for side in (0, 1):
                net.host(f"{vr[0]}{side}", f"{prefix[:3]}{vr[0]}{side}", hosts[side],
                         addrs=(f"10.{side + 1}.0.2/24",), routes=(f"route add default via 10.{side + 1}.0.1",))
        # A link from this machine into pearld's namespace, for the dashboard.
        sh("ip", "link", "add", f"{prefix}m", "type", "veth", "peer", "name", "mgmt", "netns", net.router)
        sh("ip", "addr", "add", "169.254.77.1/30", "dev", f"{prefix}m")
        sh("ip", "link", "set", f"{prefix}m", "up")
        sh("ip", "addr", "add", f"{DASHBOARD}/30", "dev", "mgmt", ns=net.router)
        sh("ip", "link", "set", "mgmt", "up", ns=net.router)
        frr_conf = tmp / "red-frr.conf"
        frr_conf.write_text(FRR_CONF)
        # Plain HTTP on purpose: the link is this machine's own, and a browser would balk at a
        # self-signed certificate. A real deployment gives api.tls instead.
        net.start_pearld(BIN, config(prefix, frr_conf), tmp, extra_args=["--api-tcp", f"{DASHBOARD}:8080", "--api-tcp-plain",
                                                                          "--state", str(tmp / "state")])
        print(f"pearld runs three VRs with the same addresses: {prefix}red (fast, FRR inside), "
              f"{prefix}green (kernel), {prefix}blue (shared).")
        print(f"Dashboard: http://{DASHBOARD}:8080/    Log in to a VR: "
              f"target/release/pearlctl --url http://{DASHBOARD}:8080 exec {prefix}red -- vtysh -N {prefix}red\n")
        for vr, _, macs, hosts, dst in VRS:
            sh("ping", "-c", "1", "-W", "2", "10.2.0.2", ns=net.hosts[f"{vr[0]}0"], check=False)
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", net.hosts[f"{vr[0]}0"], sys.executable, str(ROOT / "tests" / "system" / "blast.py"),
                 "eth0", hosts[0], macs[0], "10.1.0.2", dst, "512", "20", str(seconds or 3600)],
                stdout=subprocess.DEVNULL))
            # And TCP from hosts as they come (default offloads: GSO super-packets, partial
            # checksums), 200 Mb/s so the three VRs share the machine.
            procs.append(subprocess.Popen(["ip", "netns", "exec", net.hosts[f"{vr[0]}1"], "iperf3", "-s", "-p", "5201"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(0.2)
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", net.hosts[f"{vr[0]}0"], "iperf3", "-c", "10.2.0.2", "-p", "5201", "-b", "200M",
                 "-t", str(int(seconds) or 3600)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        watch = subprocess.Popen([str(BIN / "pearlctl"), "--url", f"http://{DASHBOARD}:8080", "stats", "--watch"])
        procs.append(watch)
        if seconds:
            time.sleep(seconds)
        else:
            watch.wait()
    except KeyboardInterrupt:
        print("\nstopping the demo")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        sh("ip", "link", "del", f"{prefix}m", check=False)
        net.close()
        print("everything the demo made is removed")


if __name__ == "__main__":
    main()
