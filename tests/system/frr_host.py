"""Routing speakers in plain host namespaces, for the control-plane system tests: FRR (one
instance per namespace, in FRR's own `-N` mode) started from generated configurations, with
queries of its JSON state; and a paced frame sprayer to check that learned routes carry
traffic. `Frr.close()` stops the daemons and removes their files.

For 100k BGP prefixes FRR's bgpd announcing `network` statements was measured against gobgpd
fed by `gobgp mrt inject`: bgpd had sent all 100k 5 s after its start, gobgpd 16.6 s (and its
CLI drops the last few hundred routes of an injection unless the dump is padded)."""

import ipaddress
import json
import os
import pathlib
import pwd
import shutil
import signal
import socket
import struct
import sys
import time

from netns import sh

FRR_BIN = pathlib.Path("/usr/lib/frr")


def wait_until(what, timeout, check, interval=0.2):
    """Polls `check` until it returns something true, which is returned."""
    deadline = time.time() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.time() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(interval)


def prefixes(count, first="20.0.0.0", length=24):
    """`count` consecutive, distinct IPv4 prefixes."""
    base = int(ipaddress.IPv4Address(first))
    step = 1 << (32 - length)
    return [ipaddress.IPv4Network((base + i * step, length)) for i in range(count)]


def kernel_routes(ns, proto):
    """How many IPv4 routes of protocol `proto` (bgp, ospf, ...) the namespace's kernel has."""
    out = sh("ip", "-4", "route", "show", "proto", proto, ns=ns).stdout
    return out.count("\n")


def rss_kib(pids):
    """Resident memory of `pids` together, in KiB."""
    total = 0
    for pid in pids:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


class FrrView:
    """Queries to the FRR instance of namespace `ns` (`vtysh -N ns`), whoever started it."""

    def __init__(self, ns):
        self.ns = ns

    def vtysh(self, *commands):
        args = ["vtysh", "-N", self.ns]
        for c in commands:
            args += ["-c", c]
        return sh(*args).stdout

    def json(self, command):
        return json.loads(self.vtysh(command + " json"))

    def ospf_full_neighbors(self):
        """Router IDs of the OSPF neighbours in state Full."""
        nbrs = self.json("show ip ospf neighbor").get("neighbors", {})
        return {rid for rid, entries in nbrs.items() if any(e.get("nbrState", "").startswith("Full") for e in entries)}

    def bgp_peer(self, address):
        """The IPv4 unicast summary of one BGP peer ({} before bgpd knows it)."""
        peers = self.json("show bgp ipv4 unicast summary").get("peers", {})
        return peers.get(address, {})


class Frr(FrrView):
    """FRR started in namespace `ns`, each daemon reading its own file (`configs`: daemon
    name → text): a daemon parses a large file itself far faster than vtysh can feed it."""

    def __init__(self, ns, configs):
        super().__init__(ns)
        self.daemons = ["zebra"] + [d for d in configs if d != "zebra"]
        self.conf_dir = pathlib.Path("/etc/frr") / ns
        self.run_dir = pathlib.Path("/var/run/frr") / ns
        self.log = pathlib.Path("/var/log/frr") / f"{ns}.log"
        frr = pwd.getpwnam("frr")
        for d in (self.conf_dir, self.run_dir, self.log.parent):
            d.mkdir(parents=True, exist_ok=True)
            os.chown(d, frr.pw_uid, frr.pw_gid)
        files = {"vtysh.conf": ""} | {f"{d}.conf": configs.get(d, "") for d in self.daemons}
        for name, text in files.items():
            path = self.conf_dir / name
            path.write_text(text)
            os.chown(path, frr.pw_uid, frr.pw_gid)
        self.log.touch()
        os.chown(self.log, frr.pw_uid, frr.pw_gid)
        try:
            for d in self.daemons:
                # -d returns once the daemon serves its vty; -P 0: no TCP vty in the namespace.
                sh("ip", "netns", "exec", ns, FRR_BIN / d, "-d", "-N", ns, "-P", "0",
                   "-f", self.conf_dir / f"{d}.conf", "-i", self.pid_file(d), "--log", f"file:{self.log}")
        except Exception:
            self.close()
            raise

    def pid_file(self, daemon):
        return self.run_dir / f"{daemon}.pid"

    def pids(self):
        found = []
        for d in self.daemons:
            try:
                found.append(int(self.pid_file(d).read_text()))
            except (OSError, ValueError):
                pass
        return found

    def close(self):
        pids = self.pids()
        for pid in reversed(pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + 5
        for pid in pids:
            while pathlib.Path(f"/proc/{pid}").exists() and time.time() < deadline:
                time.sleep(0.05)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.conf_dir, ignore_errors=True)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        self.log.unlink(missing_ok=True)


def ospf_config(router_id, networks, passive=()):
    """ospfd.conf: `networks` (prefixes) in area 0; `passive` interfaces send no hellos. SPF
    runs on every change at once: FRR's default throttling delays a route by seconds."""
    lines = ["router ospf", f" ospf router-id {router_id}", " timers throttle spf 0 50 500",
             " timers lsa min-arrival 0"]
    lines += [f" network {n} area 0" for n in networks]
    lines += [f" passive-interface {i}" for i in passive]
    return "\n".join(lines + ["exit", ""])


def frr_bgp_config(asn, router_id, neighbors, originate=()):
    """bgpd.conf: eBGP `neighbors` ((address, asn) pairs) receiving every prefix of
    `originate`, which bgpd announces itself (`network`), without zebra or the kernel."""
    lines = [f"router bgp {asn}", f" bgp router-id {router_id}", " no bgp ebgp-requires-policy",
             " no bgp network import-check"]
    lines += [f" neighbor {a} remote-as {peer_as}" for a, peer_as in neighbors]
    lines += [" address-family ipv4 unicast"] + [f"  network {p}" for p in originate]
    return "\n".join(lines + [" exit-address-family", "exit", ""])


def rx_packets(ns, dev="eth0"):
    """Packets the interface has received so far."""
    link = json.loads(sh("ip", "-s", "-j", "link", "show", dev, ns=ns).stdout)[0]
    return link["stats64"]["rx"]["packets"]


def spray(ns, dev, src_mac, dst_mac, src_ip, first_dst, count, step=1, rate_pps=50_000):
    """Sends `count` UDP frames from inside `ns` to first_dst, first_dst + step, ..., paced."""
    sh("python3", pathlib.Path(__file__).resolve(), "spray", dev, src_mac, dst_mac, src_ip, first_dst, step, count,
       rate_pps, ns=ns)


def spray_prefixes(ns, dev, src_mac, dst_mac, src_ip, nets, rate_pps=50_000):
    """One frame to the first host address of each of `nets` (equal-sized, consecutive)."""
    spray(ns, dev, src_mac, dst_mac, src_ip, nets[0].network_address + 1, len(nets), nets[0].num_addresses, rate_pps)


def _spray(dev, src_mac, dst_mac, src_ip, first, step, count, rate_pps):
    """The sprayer itself, run by `spray` inside the namespace: a packet socket belongs to the
    namespace of the process that opens it."""
    src = ipaddress.IPv4Address(src_ip).packed
    base = int(ipaddress.IPv4Address(first))
    head = _mac(dst_mac) + _mac(src_mac) + b"\x08\x00"
    udp = struct.pack("!HHHH", 4000, 4001, 8 + 18, 0) + b"\xab" * 18
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((dev, 0))
    start = time.monotonic()
    for i in range(int(count)):
        dst = struct.pack("!I", base + i * int(step))
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, src, dst)
        s.send(head + ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:] + udp)
        ahead = start + (i + 1) / float(rate_pps) - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)


def _mac(text):
    return bytes(int(x, 16) for x in text.split(":"))


def _checksum(data):
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    return ~(s + (s >> 16)) & 0xFFFF


if __name__ == "__main__":
    assert sys.argv[1] == "spray", "usage: frr_host.py spray DEV SRC_MAC DST_MAC SRC_IP FIRST STEP COUNT RATE_PPS"
    _spray(*sys.argv[2:])
