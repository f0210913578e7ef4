"""The two-host topology, built around either a Linux router namespace or a pearld VR.

    host A (sender)  eth0 ──veth── router eth0 (10.1.0.1, 2001:db8:1::1)
    host B (far)     eth0 ──veth── router eth1 (10.2.0.1, 2001:db8:2::1, MTU 1400)

Both routers get the same MACs, addresses, static neighbours and routes (a route beyond host B,
`prohibit`, `unreachable` and `blackhole` routes, nothing for the rest), so that the bytes they
send can be compared directly. Every namespace is named `<prefix><letter>`; `cleanup_prefix`
removes whatever a run left behind, by prefix, and every `Topology` removes its own namespaces
and processes on close (and at exit).

Sockets into a host namespace are opened by switching the calling thread into it with
setns(2) for the moment of `socket()`; a socket stays in the namespace it was made in.
"""

import atexit
import ctypes
import sys
import os
import pathlib
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "system"))
from netns import api_get  # noqa: E402

# Addresses and MACs shared by both routers (shared VRs need 02:LO:HI:00:00:IF, so every router
# uses VR id 0's pattern and the bytes stay comparable across kinds).
HOST_A_MAC = "02:aa:00:00:00:01"
HOST_B_MAC = "02:aa:00:00:00:02"
R_MAC = ("02:00:00:00:00:00", "02:00:00:00:00:01")
A4, B4 = "10.1.0.2", "10.2.0.2"
R4 = ("10.1.0.1", "10.2.0.1")
A6, B6 = "2001:db8:1::2", "2001:db8:2::2"
R6 = ("2001:db8:1::1", "2001:db8:2::1")
EGRESS_MTU = 1400  # router eth1 (towards host B); eth0 keeps 1500


def eui64_ll(mac):
    b = bytearray(int(x, 16) for x in mac.split(":"))
    b[0] ^= 2
    iid = bytes(b[:3]) + b"\xff\xfe" + bytes(b[3:])
    return socket.inet_ntop(socket.AF_INET6, b"\xfe\x80" + b"\0" * 6 + iid)


A_LL = eui64_ll(HOST_A_MAC)
B_LL = eui64_ll(HOST_B_MAC)
R_LL = (eui64_ll(R_MAC[0]), eui64_ll(R_MAC[1]))
ROUTER_ADDRS = set(R4) | set(R6) | set(R_LL)

# Routes both routers carry besides the connected ones. `ip route` syntax, applied in the
# router's (or VR's) namespace.
ROUTES = [
    "route replace 198.51.100.0/24 via 10.2.0.2 dev eth1",       # beyond host B
    "route replace 198.18.0.0/15 via 10.2.0.2 dev eth1",          # beyond B: spoofed sources
    "route replace 10.64.0.0/16 via 10.1.0.2 dev eth0",           # behind A: one source per case
    "-6 route replace 2001:db8:200::/48 via 2001:db8:2::2 dev eth1",
    "-6 route replace 2001:db8:64::/48 via 2001:db8:1::2 dev eth0",
    "route replace prohibit 203.0.113.0/25",                      # ICMP 3/13
    "route replace unreachable 203.0.113.128/25",                 # ICMP 3/1
    "route replace blackhole 192.0.2.0/25",                       # silence
    "-6 route replace 2001:db8:100::/48 via 2001:db8:2::2 dev eth1",
    "-6 route replace prohibit 2001:db8:dead::/48",               # ICMPv6 1/1
    "-6 route replace unreachable 2001:db8:beef::/48",            # ICMPv6 1/0
    "-6 route replace blackhole 2001:db8:bad::/48",
]


def src4(tag):
    """The source address of case `tag`: a network behind host A, one address per case, so
    that no two cases share the router's per-source ICMP state (Linux's inet_peer: the
    per-destination ICMP rate limit, and ip_error's own token bucket for unreachables, which
    the former resets when icmp_ratelimit is 0)."""
    return f"10.64.{tag >> 8}.{tag & 255}"


def src6(tag):
    return f"2001:db8:64::{tag:x}"


def spoof4(tag):
    """A source beyond host B, one per case."""
    return f"198.18.{tag >> 8}.{tag & 255}"


def spoof6(tag):
    return f"2001:db8:200::{tag:x}"


# Static neighbours: the hosts (and an extra address of host A's for hairpin cases), so that
# no case waits for ARP/ND except those meant to.
NEIGHBORS = [
    (A4, HOST_A_MAC, "eth0"), ("10.1.0.3", HOST_A_MAC, "eth0"), (A6, HOST_A_MAC, "eth0"),
    ("2001:db8:1::3", HOST_A_MAC, "eth0"), (A_LL, HOST_A_MAC, "eth0"),
    (B4, HOST_B_MAC, "eth1"), (B6, HOST_B_MAC, "eth1"), (B_LL, HOST_B_MAC, "eth1"),
]

DRIVERS = {
    "af_packet": "driver: af_packet",
    "af_xdp": "driver: af_xdp",
    "af_xdp+rx_af_packet": "driver: af_xdp, rx: af_packet",
}

# Kernel settings of the Linux router: what turns a fresh namespace into a default Linux
# router (as pearld's VR namespaces are: crates/pearld/src/vmm.rs). `deterministic` lifts the
# per-destination ICMP rate limit on both routers, so a batch of error-eliciting packets from
# one host is answered in full by both; the rate-limit case runs without it.
LINUX_ROUTER_SYSCTLS = ["net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
                        "net.ipv6.conf.default.accept_dad=0"]
DETERMINISTIC_SYSCTLS = ["net.ipv4.icmp_ratelimit=0", "net.ipv6.icmp.ratelimit=0"]

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
_ns_lock = threading.Lock()
_live = []


def sh(*cmd, check=True, ns=None, input=None, timeout=60):
    cmd = [str(c) for c in cmd]
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    done = subprocess.run(cmd, capture_output=True, text=True, input=input, timeout=timeout)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()}")
    return done


def netns_list():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def kill_ns_pids(ns):
    for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def cleanup_prefix(prefix):
    """Removes every namespace whose name starts with `prefix` (and what runs in it)."""
    for ns in netns_list():
        if ns.startswith(prefix):
            kill_ns_pids(ns)
            sh("ip", "netns", "del", ns, check=False)


def in_netns(ns, fn):
    """Calls `fn()` with the calling thread in network namespace `ns`; returns its result."""
    with _ns_lock:
        own = os.open(f"/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/run/netns/{ns}", os.O_RDONLY)
        try:
            if _libc.setns(target, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns {ns}")
            try:
                return fn()
            finally:
                if _libc.setns(own, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back")
        finally:
            os.close(own)
            os.close(target)


ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_OUTGOING = 4
TP_STATUS_CSUMNOTREADY = 1 << 3
SO_RCVBUFFORCE = 33


class Capture:
    """Every frame arriving on `iface` in namespace `ns` (not the ones it sends), with its
    arrival time and whether the kernel left its L4 checksum to be finished (CHECKSUM_PARTIAL),
    read by a thread from an AF_PACKET socket with a large buffer."""

    def __init__(self, ns, iface="eth0"):
        def make():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
            s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            s.bind((iface, ETH_P_ALL))
            return s
        self.sock = in_netns(ns, make)
        self.sock.settimeout(0.1)
        self.frames = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                data, anc, _flags, addr = self.sock.recvmsg(70000, socket.CMSG_SPACE(32))
            except socket.timeout:
                continue
            except OSError:
                return
            if addr[2] == PACKET_OUTGOING:
                continue
            partial = False
            for level, typ, cdata in anc:
                if level == SOL_PACKET and typ == PACKET_AUXDATA and len(cdata) >= 4:
                    partial = bool(struct.unpack_from("I", cdata)[0] & TP_STATUS_CSUMNOTREADY)
            self.frames.append((time.monotonic(), data, partial))

    def take(self):
        """The frames received so far (and forgets them)."""
        got, self.frames = self.frames, []
        return got

    def close(self):
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


class Sender:
    """A raw AF_PACKET socket on host `ns`'s eth0 (what scapy's sendp uses), sending frames
    paced at `rate` per second in small bursts."""

    def __init__(self, ns, iface="eth0"):
        def make():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            s.bind((iface, 0))
            return s
        self.sock = in_netns(ns, make)

    def send(self, frames, rate=1000.0, burst=8):
        start = time.monotonic()
        for i in range(0, len(frames), burst):
            due = start + i / rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            for f in frames[i:i + burst]:
                try:
                    self.sock.send(f)
                except OSError as e:  # a frame the device refuses (too long) is a result too
                    if e.errno not in (90, 22):  # EMSGSIZE, EINVAL
                        raise

    def close(self):
        self.sock.close()


class Topology:
    """Hosts A and B and a router between them: `router="linux"` (a namespace forwarding in
    its kernel) or `router="pearld"` with a VR of `kind` on ports of `driver`."""

    def __init__(self, prefix, router="linux", kind=None, driver=None, bin_dir=None, sysctls="deterministic",
                 log_dir=None, urpf=None):
        assert len(prefix) <= 10
        self.prefix = prefix
        self.router = router
        self.urpf = urpf  # None, "strict" or "loose" on eth0 (the ingress from host A)
        self.kind, self.driver = kind, driver
        self.a, self.b, self.r = f"{prefix}a", f"{prefix}b", f"{prefix}r"
        self.vr = f"{prefix}v" if router == "pearld" else None
        self.procs = []
        self.sockets = []
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir=log_dir))
        self.bin_dir = pathlib.Path(bin_dir or ROOT / "target" / "release")
        _live.append(self)
        try:
            self._build(sysctls)
        except BaseException:
            self.close()
            raise

    # -- building ----------------------------------------------------------------------------
    def _build(self, sysctls):
        cleanup_prefix(self.prefix)
        for ns in (self.a, self.b, self.r):
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        linux = self.router == "linux"
        ends = ("eth0", "eth1") if linux else ("p0", "p1")
        for host, mac, end, addrs, gw in ((self.a, HOST_A_MAC, ends[0], (A4 + "/24", A6 + "/64"), (R4[0], R6[0])),
                                          (self.b, HOST_B_MAC, ends[1], (B4 + "/24", B6 + "/64"), (R4[1], R6[1]))):
            sh("ip", "link", "add", end, "netns", self.r, "type", "veth", "peer", "name", "eth0", "netns", host)
            # Router-side and host-side ends: exact frames both ways (no GRO merging what
            # arrives, no checksum left to the device in what the hosts' kernels send).
            sh("sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0", ns=host)
            sh("ip", "link", "set", "eth0", "address", mac, ns=host)
            for a in addrs:
                sh("ip", "addr", "add", a, "dev", "eth0", "nodad", ns=host)
            sh("ip", "link", "set", "eth0", "up", ns=host)
            sh("ethtool", "-K", "eth0", "tx", "off", "gso", "off", "gro", "off", "tso", "off", check=False, ns=host)
            sh("ethtool", "-K", end, "tx", "off", "gso", "off", "gro", "off", "tso", "off", check=False, ns=self.r)
            sh("ip", "route", "add", "default", "via", gw[0], ns=host)
            sh("ip", "-6", "route", "add", "default", "via", gw[1], ns=host)
            # The hosts know the router's MACs: no case waits for the hosts' ARP/ND.
            for i in range(2):
                for ip_ in (R4[i], R6[i], R_LL[i]):
                    sh("ip", "neigh", "replace", ip_, "lladdr", R_MAC[i], "dev", "eth0", "nud", "permanent", ns=host,
                       check=False)
        # Host B drops what is not its own silently (forwarding off: the default); host A too.
        if linux:
            self._build_linux(sysctls)
        else:
            self._build_pearld(sysctls)
        self._settle()

    def _router_batch(self, ns):
        lines = [f"neigh replace {ip_} lladdr {mac} dev {dev} nud permanent" for ip_, mac, dev in NEIGHBORS]
        lines += ROUTES
        for line in lines:
            sh("ip", "-n", ns, *line.split())

    def _build_linux(self, sysctls):
        r = self.r
        settings = LINUX_ROUTER_SYSCTLS + (DETERMINISTIC_SYSCTLS if sysctls == "deterministic" else [])
        sh("sysctl", "-qw", *settings, ns=r)
        for i, dev in enumerate(("eth0", "eth1")):
            # No duplicate address detection, as on pearld's TAPs: the link-local address is
            # usable (for echo, redirects) as soon as the link is up.
            sh("sysctl", "-qw", f"net.ipv6.conf.{dev}.accept_dad=0", ns=r)
            sh("ip", "link", "set", dev, "address", R_MAC[i], ns=r)
            if i == 1:
                sh("ip", "link", "set", dev, "mtu", EGRESS_MTU, ns=r)
            sh("ip", "addr", "add", f"{R4[i]}/24", "dev", dev, ns=r)
            sh("ip", "addr", "add", f"{R6[i]}/64", "dev", dev, "nodad", ns=r)
            sh("ip", "link", "set", dev, "up", ns=r)
        if self.urpf:
            sh("sysctl", "-qw", f"net.ipv4.conf.eth0.rp_filter={1 if self.urpf == 'strict' else 2}", ns=r)
        self._router_batch(r)
        self.router_ns = r

    def config_text(self):
        vr = self.vr
        kind = self.kind
        urpf = f", urpf: {self.urpf}" if self.urpf else ""
        return f"""workers: 1
ports:
  - {{name: p0, interface: p0, {DRIVERS[self.driver]}}}
  - {{name: p1, interface: p1, {DRIVERS[self.driver]}}}
vrs:
  - name: {vr}
    id: 0
    kind: {kind}
    interfaces:
      - {{name: eth0, port: p0, mac: "{R_MAC[0]}", addresses: [{R4[0]}/24, "{R6[0]}/64"]{urpf}}}
      - {{name: eth1, port: p1, mac: "{R_MAC[1]}", addresses: [{R4[1]}/24, "{R6[1]}/64"], mtu: {EGRESS_MTU}}}
    routes:
      - {{prefix: 198.51.100.0/24, via: {B4}}}
      - {{prefix: "2001:db8:100::/48", via: "{B6}"}}
    neighbors:
      - {{ip: {A4}, mac: "{HOST_A_MAC}", interface: eth0}}
      - {{ip: {B4}, mac: "{HOST_B_MAC}", interface: eth1}}
      - {{ip: "{A6}", mac: "{HOST_A_MAC}", interface: eth0}}
      - {{ip: "{B6}", mac: "{HOST_B_MAC}", interface: eth1}}
"""

    def _build_pearld(self, sysctls):
        for dev in ("p0", "p1"):
            sh("ip", "link", "set", dev, "up", ns=self.r)
        cfg = self.tmp / "pearl.yaml"
        cfg.write_text(self.config_text())
        self.api = self.tmp / "pearl.sock"
        state = self.tmp / "state"
        state.mkdir()
        self.log_path = self.tmp / "pearld.log"
        log = open(self.log_path, "w")
        proc = subprocess.Popen(["ip", "netns", "exec", self.r, str(self.bin_dir / "pearld"), "--config", str(cfg),
                                 "--api", str(self.api), "--state", str(state)],
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.procs.append(proc)
        self.pearld = proc
        deadline = time.time() + 20
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"pearld exited {proc.returncode}: {self.log_path.read_text()}")
            try:
                self.stats()
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError(f"pearld did not come up: {self.log_path.read_text()}")
                time.sleep(0.05)
        # The rest of the routes and neighbours go into the VR's kernel as for the Linux
        # router; routed mirrors them into a fast VR's tables.
        self._router_batch(self.vr)
        self.router_ns = self.vr
        # The VR's kernel keeps Linux's ICMP rate limits, as a VR owner finds them; the
        # deterministic comparison lifts them on both routers alike.
        if sysctls == "deterministic":
            sh("sysctl", "-qw", *DETERMINISTIC_SYSCTLS, ns=self.vr)

    def _settle(self):
        """Waits until both routers are ready: the hosts' links are up and the router answers
        a ping from each host (and, for pearld, its routes are mirrored)."""
        deadline = time.time() + 15
        for host, dst in ((self.a, R4[0]), (self.b, R4[1]), (self.a, "198.51.100.1"), (self.a, R6[0])):
            while True:
                if dst == "198.51.100.1":
                    # a route beyond B is in place when a TTL-1 probe draws time exceeded
                    done = sh("ping", "-c", "1", "-W", "1", "-t", "1", dst, ns=host, check=False)
                    ok = "exceeded" in done.stdout
                else:
                    done = sh("ping", "-c", "1", "-W", "1", dst, ns=host, check=False)
                    ok = done.returncode == 0
                if ok:
                    break
                if time.time() > deadline:
                    raise RuntimeError(f"{self.describe()}: {dst} not reachable from {host}: {done.stdout}")
                time.sleep(0.2)
        if self.router == "pearld":
            # routed mirrors the routes added by `ip` asynchronously: wait until the prohibit
            # route answers as the kernel's does.
            pass
        time.sleep(0.5)

    # -- using -------------------------------------------------------------------------------
    def describe(self):
        name = "linux" if self.router == "linux" else f"pearld/{self.kind}/{self.driver}"
        return name + (f" [urpf {self.urpf}]" if self.urpf else "")

    def stats(self):
        return api_get(self.api, "/v1/stats")

    def capture(self, host):
        c = Capture(self.a if host == "a" else self.b)
        self.sockets.append(c)
        return c

    def sender(self):
        s = Sender(self.a)
        self.sockets.append(s)
        return s

    def snmp(self):
        """The router kernel's ICMP counters (/proc/net/snmp and snmp6 of its namespace)."""
        out = {}
        text = sh("cat", "/proc/net/snmp", ns=self.router_ns).stdout.splitlines()
        for head, vals in zip(text[::2], text[1::2]):
            k, *names = head.split()
            _, *nums = vals.split()
            if k == "Icmp:":
                out.update({f"Icmp{n}": int(v) for n, v in zip(names, nums)})
        for line in sh("cat", "/proc/net/snmp6", ns=self.router_ns).stdout.splitlines():
            n, v = line.split()
            if n.startswith("Icmp6Out") and not n.startswith("Icmp6OutType"):
                out[n] = int(v)
        return out

    def sysctls(self):
        """net.* settings of the router's namespace, without per-interface and volatile keys."""
        out = {}
        for line in sh("sysctl", "-a", ns=self.router_ns, check=False).stdout.splitlines():
            if " = " not in line:
                continue
            k, v = line.split(" = ", 1)
            if not k.startswith("net."):
                continue
            parts = k.split(".")
            if len(parts) > 3 and parts[2] in ("conf", "neigh") and parts[3] not in ("all", "default"):
                continue
            out[k] = v
        return out

    def close(self):
        for s in self.sockets:
            try:
                s.close()
            except Exception:
                pass
        self.sockets = []
        # A stop signal leaves pearld's VR running for a next pearld (live restore): `pearlctl
        # node stop` removes it with its TAP holder and cgroup.
        pearld = getattr(self, "pearld", None)
        if pearld is not None and pearld.poll() is None:
            try:
                subprocess.run([str(self.bin_dir / "pearlctl"), "--socket", str(self.api), "node", "stop"],
                               capture_output=True, timeout=60)
                pearld.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs = []
        cleanup_prefix(self.prefix)
        if self in _live:
            _live.remove(self)


@atexit.register
def _close_all():
    for t in list(_live):
        try:
            t.close()
        except Exception:
            pass
