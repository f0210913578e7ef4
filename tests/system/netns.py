"""Test networks: host namespaces wired to a pearld namespace by veth pairs, all named with a
per-test prefix and removed afterwards, whatever happens."""

import json
import os
import pathlib
import signal
import socket
import subprocess
import time

HERE = pathlib.Path(__file__).resolve().parent
SCAPY_TOOL = HERE / "scapy_tool.py"


def sh(*cmd, check=True, ns=None):
    cmd = [str(c) for c in cmd]
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    done = subprocess.run(cmd, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()}")
    return done


class Network:
    """A pearld namespace (`<prefix>r`) plus host namespaces, each host linked to it by a veth
    pair: the host end is `eth0` in the host, the router end is the port name given."""

    def __init__(self, prefix):
        assert len(prefix) <= 8, "interface names must stay within 15 characters"
        self.prefix = prefix
        self.router = f"{prefix}r"
        self.hosts = {}
        self.procs = []
        sh("ip", "netns", "add", self.router)
        sh("ip", "link", "set", "lo", "up", ns=self.router)

    def host(self, name, port, mac, addrs=(), routes=(), neighbors=(), offloads=True, mtu=None):
        """Adds host `name` cabled to router port `port` (an interface in the router ns). Hosts
        keep the kernel's default offloads (checksum offload, TSO/GSO, GRO), as every container
        has; `offloads=False` turns them off on both ends, for a test that must see exact
        frames, which says why. `mtu` sets both ends' MTU (jumbo frames)."""
        ns = f"{self.prefix}{name}"
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", port, "netns", self.router, "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "link", "set", "eth0", "address", mac, ns=ns)
        for a in addrs:
            sh("ip", "addr", "add", a, "dev", "eth0", "nodad", ns=ns)
        sh("ip", "link", "set", "eth0", "up", ns=ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("ip", "link", "set", port, "up", ns=self.router)
        if mtu:
            sh("ip", "link", "set", "eth0", "mtu", mtu, ns=ns)
            sh("ip", "link", "set", port, "mtu", mtu, ns=self.router)
        if not offloads:
            for n, dev in ((ns, "eth0"), (self.router, port)):
                sh("ethtool", "-K", dev, "tx", "off", "gso", "off", "gro", "off", "tso", "off", check=False, ns=n)
        for r in routes:
            sh("ip", *r.split(), ns=ns)
        for ip, lladdr in neighbors:
            sh("ip", "neigh", "replace", ip, "lladdr", lladdr, "dev", "eth0", "nud", "permanent", ns=ns)
        self.hosts[name] = ns
        return ns

    def start_pearld(self, bin_dir, config_text, tmp_path, extra_args=()):
        cfg = tmp_path / "pearl.yaml"
        cfg.write_text(config_text)
        self.api = tmp_path / "pearl.sock"
        log = open(tmp_path / "pearld.log", "w")
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.router, str(bin_dir / "pearld"), "--config", str(cfg), "--api", str(self.api),
             *map(str, extra_args)],
            stdout=log, stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        self.pearld = proc
        deadline = time.time() + 10
        while time.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"pearld exited {proc.returncode}: {(tmp_path / 'pearld.log').read_text()}")
            try:
                self.stats()
                return proc
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("pearld did not come up")

    def stats(self):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(5)
        s.connect(str(self.api))
        s.sendall(b"GET /v1/stats HTTP/1.0\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        s.close()
        return json.loads(data.split(b"\r\n\r\n", 1)[1])

    def sniff(self, host, pcap, seconds):
        """Starts capturing on a host's eth0; returns the process (wait for it)."""
        p = subprocess.Popen(["ip", "netns", "exec", self.hosts[host], "python3", str(SCAPY_TOOL), "sniff", "eth0",
                              str(pcap), str(seconds)])
        self.procs.append(p)
        return p

    def send(self, host, pcap, gap=0.0):
        args = ["python3", SCAPY_TOOL, "send", "eth0", pcap] + (["--gap", gap] if gap else [])
        sh(*args, ns=self.hosts[host])

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for ns in list(self.hosts.values()) + [self.router]:
            sh("ip", "netns", "pids", ns, check=False)
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            sh("ip", "netns", "del", ns, check=False)
