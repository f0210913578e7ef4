"""The network part of the demo: two fast-path VRs with the same addresses on different ports,
hosts in their own namespaces sending real traffic through pearld, then `pearlctl stats`.
Everything it creates is removed at the end, on Ctrl-C too."""

import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
from netns import Network  # noqa: E402

BIN = ROOT / "target" / "release"
CONFIG = """
workers: 1
ports:
  - {name: a0, interface: a0, driver: af_packet}
  - {name: a1, interface: a1, driver: af_packet}
  - {name: b0, interface: b0, driver: af_packet}
  - {name: b1, interface: b1, driver: af_packet, rate_mbps: 20}
vrs:
""" + "".join(f"""
  - name: {vr}
    code: ipv4
    interfaces:
      - {{name: eth0, port: {p}0, mac: "02:00:00:00:0{i}:00", addresses: [10.1.0.1/24]}}
      - {{name: eth1, port: {p}1, mac: "02:00:00:00:0{i}:01", addresses: [10.2.0.1/24]}}
    routes: [{{prefix: 198.51.100.0/24, via: 10.2.0.2}}]
    neighbors: [{{ip: 10.2.0.2, mac: "02:{p}{p}:00:00:00:02", interface: eth1}}]
""" for i, (vr, p) in enumerate((("red", "a"), ("blue", "b")), start=1))


def main():
    net = Network(f"demo{os.getpid() % 1000}")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pearl-demo-"))
    try:
        for host, port, mac, addr in (("ra", "a0", "02:aa:00:00:00:01", "10.1.0.2/24"),
                                      ("rb", "a1", "02:aa:00:00:00:02", "10.2.0.2/24"),
                                      ("ba", "b0", "02:bb:00:00:00:01", "10.1.0.2/24"),
                                      ("bb", "b1", "02:bb:00:00:00:02", "10.2.0.2/24")):
            net.host(host, port, mac, addrs=(addr,))
        net.start_pearld(BIN, CONFIG, tmp)
        print("pearld runs two VRs, red and blue, with the same addresses on different ports;")
        print("blue's output port is capped at 20 Mb/s. Sending 30 Mb/s into each for 3 s...\n")
        senders = [subprocess.Popen(["ip", "netns", "exec", net.hosts[h], "python3",
                                     str(ROOT / "tests" / "system" / "blast.py"), "eth0", src, dst,
                                     "10.1.0.2", "198.51.100.9", "1000", "30", "3"], stdout=subprocess.DEVNULL)
                   for h, src, dst in (("ra", "02:aa:00:00:00:01", "02:00:00:00:01:00"),
                                       ("ba", "02:bb:00:00:00:01", "02:00:00:00:02:00"))]
        for s in senders:
            s.wait(timeout=30)
        time.sleep(0.5)
        subprocess.run(["ip", "netns", "exec", net.router, str(BIN / "pearlctl"), "--socket", str(net.api), "stats"])
        print("\n(red forwarded everything; blue's queue dropped what exceeded its port's 20 Mb/s)")
    finally:
        net.close()


if __name__ == "__main__":
    main()
