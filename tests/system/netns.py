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


def api_get(socket_path, path):
    """GETs `path` from pearld's API on its Unix socket; the decoded JSON body."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(str(socket_path))
    s.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


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
        # Every API socket a pearld of this network had: what a pearld left is found by it.
        self.apis = []
        self.pearld = None
        # Where pearlctl is, for the `node stop` that ends a test (conftest's `bin_dir`).
        self.bin_dir = pathlib.Path(os.environ.get("PEARL_BIN_DIR", HERE.parents[1] / "target" / "release"))
        sh("ip", "netns", "add", self.router)
        sh("ip", "link", "set", "lo", "up", ns=self.router)

    def host(self, name, port, mac, addrs=(), routes=(), neighbors=(), offloads=True, mtu=None):
        """Adds host `name` cabled to router port `port` (an interface in the router ns). Hosts
        keep the kernel's default offloads (checksum offload, TSO/GSO, GRO), as every container
        has; `offloads=False` turns them off on both ends, for a test that must see exact
        frames, which says why. `mtu` sets both ends' MTU (jumbo frames)."""
        ns = f"{self.prefix}{name}"
        sh("ip", "netns", "add", ns)
        # Known from here on, so that close() removes it should a later step fail.
        self.hosts[name] = ns
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
        return ns

    def iperf(self, client, server, dst, *args, seconds=2, port=5211):
        """Runs iperf3 from host `client` to `dst` on host `server`; returns its JSON `end`
        summary (bytes, bits per second, retransmits, UDP loss)."""
        s = subprocess.Popen(["ip", "netns", "exec", self.hosts[server], "iperf3", "-s", "-1", "-p", str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(s)
        time.sleep(0.3)
        done = sh("timeout", seconds + 30, "iperf3", "-c", dst, "-p", port, "-t", seconds, "-J", *args,
                  ns=self.hosts[client], check=False)
        s.wait(timeout=10)
        report = json.loads(done.stdout or "{}")
        if "error" in report or done.returncode != 0 or "end" not in report:
            raise RuntimeError(f"iperf3 {' '.join(map(str, args))} to {dst}: {report.get('error')} {done.stderr}")
        return report["end"]

    def start_pearld(self, bin_dir, config_text, tmp_path, extra_args=(), startup_seconds=10):
        cfg = tmp_path / "pearl.yaml"
        cfg.write_text(config_text)
        self.api = tmp_path / "pearl.sock"
        self.bin_dir = bin_dir
        if self.api not in self.apis:
            self.apis.append(self.api)
        log = open(tmp_path / "pearld.log", "w")
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.router, str(bin_dir / "pearld"), "--config", str(cfg), "--api", str(self.api),
             *map(str, extra_args)],
            stdout=log, stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        self.pearld = proc
        deadline = time.time() + startup_seconds
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
        return api_get(self.api, "/v1/stats")

    def sniff(self, host, pcap, seconds, wait=True):
        """Starts capturing on a host's eth0 for `seconds` and, with `wait`, returns once it
        listens (scapy takes a second or more to start on a busy machine: frames sent before
        would be missed; several captures are started with wait=False, then `listening`);
        returns the process (wait for it)."""
        pathlib.Path(f"{pcap}.ready").unlink(missing_ok=True)
        p = subprocess.Popen(["ip", "netns", "exec", self.hosts[host], "python3", str(SCAPY_TOOL), "sniff", "eth0",
                              str(pcap), str(seconds)])
        p.pcap = pcap
        self.procs.append(p)
        if wait:
            self.listening(p)
        return p

    @staticmethod
    def listening(*captures):
        """Waits until every capture `sniff` started listens."""
        deadline = time.time() + 30
        for p in captures:
            while not pathlib.Path(f"{p.pcap}.ready").exists():
                if p.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"the capture into {p.pcap} did not start (exit {p.poll()})")
                time.sleep(0.02)

    def send(self, host, pcap, gap=0.0):
        args = ["python3", SCAPY_TOOL, "send", "eth0", pcap] + (["--gap", gap] if gap else [])
        sh(*args, ns=self.hosts[host])

    def node_stop(self, timeout=60):
        """`pearlctl node stop`: pearld removes every VR and everything PEARL made, then exits
        (a stop signal leaves the VRs for the next pearld). Returns pearld's exit status."""
        done = subprocess.run([str(self.bin_dir / "pearlctl"), "--socket", str(self.api), "node", "stop"],
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"pearlctl node stop: {done.stderr.strip()}")
        return self.pearld.wait(timeout=timeout)

    def close(self):
        # A pearld a test started by itself (its own command line) has its socket here too.
        if getattr(self, "api", None) and self.api not in self.apis:
            self.apis.append(self.api)
        if self.pearld is not None and self.pearld.poll() is None and getattr(self, "api", None):
            try:
                self.node_stop()
            except (RuntimeError, OSError, subprocess.TimeoutExpired):
                pass
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for ns in list(self.hosts.values()) + [self.router]:
            remove_netns(ns)
        for api in self.apis:
            remove_left_by(api)


def remove_netns(ns):
    """Kills whatever runs in namespace `ns`, then removes it."""
    for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    sh("ip", "netns", "del", ns, check=False)


def holder_of(api):
    """The pid of the TAP holder of the pearld on `api`, if one runs."""
    want = f"--hold-taps\0{api}.taps\0".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if want in pathlib.Path(f"/proc/{pid}/cmdline").read_bytes():
                return int(pid)
        except OSError:
            pass
    return None


def owned_names(api):
    """The VR namespaces the registry of the pearld on `api` lists as PEARL's."""
    owned = pathlib.Path(f"{api}.owned")
    if not owned.exists():
        return []
    return [line.split()[0] for line in owned.read_text().splitlines()[1:] if line.strip()]


def remove_left_by(api):
    """What a pearld on `api` left running when it was not told `node stop` (a stop signal or
    SIGKILL leaves its VRs for the next pearld): the namespaces its registry lists and whatever
    runs in them, their cgroups and FRR directories, and its TAP holder."""
    for ns in owned_names(api):
        remove_netns(ns)
        for d in sh("find", "/sys/fs/cgroup", "-type", "d", "-path", f"*/pearl/{ns}", check=False).stdout.split():
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
        sh("rm", "-rf", f"/etc/frr/{ns}", f"/var/run/frr/{ns}", f"/var/log/frr/{ns}.log", check=False)
    holder = holder_of(api)
    if holder:
        os.kill(holder, signal.SIGKILL)
    pathlib.Path(f"{api}.owned").unlink(missing_ok=True)


def two_hosts(prefix, mtu=None, offloads=True):
    """Hosts a (10.1.0.2, 2001:db8:1::2) on port p0 and b (10.2.0.2, 2001:db8:2::2) on port
    p1, each routing everything through the router's .1 address on its side."""
    n = Network(prefix)
    n.host("a", "p0", "02:aa:00:00:00:01", addrs=("10.1.0.2/24", "2001:db8:1::2/64"), mtu=mtu, offloads=offloads,
           routes=("route add default via 10.1.0.1", "-6 route add default via 2001:db8:1::1"))
    n.host("b", "p1", "02:aa:00:00:00:02", addrs=("10.2.0.2/24", "2001:db8:2::2/64"), mtu=mtu, offloads=offloads,
           routes=("route add default via 10.2.0.1", "-6 route add default via 2001:db8:2::1"))
    return n


def one_vr(vr, kind="fast", driver="driver: af_packet", eth1_extra="", macs=("02:00:00:00:01:00", "02:00:00:00:01:01")):
    """pearld's configuration for one VR between `two_hosts`: eth0 (10.1.0.1) on p0, eth1
    (10.2.0.1) on p1, both ports with `driver` (e.g. "driver: af_xdp, rx: af_packet"; "": none,
    pearld chooses by the device);
    `eth1_extra` adds keys to eth1 (", mtu: 1400")."""
    return f"""
ports:
  - {{name: p0, interface: p0{", " + driver if driver else ""}}}
  - {{name: p1, interface: p1{", " + driver if driver else ""}}}
vrs:
  - name: {vr}
    kind: {kind}
    interfaces:
      - {{name: eth0, port: p0, mac: "{macs[0]}", addresses: [10.1.0.1/24, "2001:db8:1::1/64"]}}
      - {{name: eth1, port: p1, mac: "{macs[1]}", addresses: [10.2.0.1/24, "2001:db8:2::1/64"]{eth1_extra}}}
"""
