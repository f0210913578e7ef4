"""The tool matrix of issue 57: single invocations of thc-ipv6 (`atk6-*`) and SI6 Networks'
ipv6toolkit tools (alive6, implementation6, fragmentation6, toobig6, trace6, thcping6; frag6,
icmp6, tcp6, ni6, scan6) run from host A of the conformance topology (topo.py) through the
Linux kernel router and through a pearld VR, in the same run, and what came back compared.

A case is one invocation, bounded in time (`timeout`). While it runs both hosts capture; each
frame they receive becomes a signature — source and destination named (A, B, R0/R1 for the
router's addresses on A's and B's link, RLL0/RLL1 its link-local addresses, the hosts'
link-locals ALL/BLL; anything else literally), hop limit, the chain of extension headers,
fragment offset and more-flag, the upper layer (ICMPv6 type/code with an error's MTU or
pointer and quote length and the quoted addresses — a random one outside the topology as `rnd` —,
an ND target, TCP flags, UDP) and the payload length. What differs by
construction is left out: MACs (both routers use the same, but a port's own stack would not),
ICMP identifiers and sequence numbers, TCP/UDP ports and sequence numbers, fragment
identifications, checksums, the tools' random payloads and timing. Two routers agree on a case
when both hosts saw the same multiset of signatures. Frames nobody asked for are not part of a
case: MLD reports and router solicitations a kernel sends on its own.

Both routers run with the deterministic settings of the conformance run (ICMP rate limits lifted
on the router, topo.DETERMINISTIC_SYSCTLS) so that a tool's batch of probes is answered in full
by both; the hosts keep kernel defaults.
"""

import collections
import ipaddress
import socket
import struct
import subprocess
import time

from . import topo

BEYOND_B = "2001:db8:100::1"     # routed beyond host B (B drops it: forwarding off)
PROHIBIT = "2001:db8:dead::1"    # prohibit route: ICMPv6 1/1
UNREACH = "2001:db8:beef::1"     # unreachable route: ICMPv6 1/0
BLACKHOLE = "2001:db8:bad::1"    # blackhole: silence
NO_ROUTE = "2001:db8:999::1"     # no route at all: ICMPv6 1/0
ON_LINK_UNRESOLVED = "2001:db8:2::99"  # in B's subnet, nobody there: ND, then 1/3

R0, R1 = topo.R6
A, B = topo.A6, topo.B6


def _cases():
    """id → (argv run on host A, seconds). `eth0` is host A's interface."""
    c = {}
    # thc-ipv6 alive6: echo, erroneous destination / hop-by-hop options, TCP SYN/ACK and UDP
    # probes, at the far host, the router's two addresses and routes of each kind.
    # (Not the router's address on A's link: alive6 finds it in host A's neighbour table — the
    # topology's permanent entry — and sends nothing.)
    for name, dst in (("b", B), ("r1", R1), ("beyond", BEYOND_B), ("prohibit", PROHIBIT),
                      ("unreach", UNREACH), ("noroute", NO_ROUTE), ("blackhole", BLACKHOLE),
                      ("unresolved", ON_LINK_UNRESOLVED)):
        # (an unresolved neighbour's 1/3 comes after Linux's 3 s of solicitations)
        c[f"alive6-ping-{name}"] = (["atk6-alive6", "-W", "300", "eth0", dst], 6 if name == "unresolved" else 4)
    for name, dst in (("b", B), ("r1", R1), ("beyond", BEYOND_B)):
        c[f"alive6-dstopt-{name}"] = (["atk6-alive6", "-W", "300", "-e", "dst", "eth0", dst], 4)
        c[f"alive6-hbh-{name}"] = (["atk6-alive6", "-W", "300", "-e", "hop", "eth0", dst], 4)
        c[f"alive6-syn-{name}"] = (["atk6-alive6", "-W", "300", "-s", "22,80,179", "eth0", dst], 4)
        c[f"alive6-ack-{name}"] = (["atk6-alive6", "-W", "300", "-a", "80", "eth0", dst], 4)
        c[f"alive6-udp-{name}"] = (["atk6-alive6", "-W", "300", "-u", "53,161", "eth0", dst], 4)
    c["alive6-range-b-subnet"] = (["atk6-alive6", "-W", "300", "eth0", "2001:db8:2::1-4"], 10)
    c["alive6-allnodes"] = (["atk6-alive6", "-W", "300", "eth0", "ff02::1"], 4)
    c["alive6-allrouters"] = (["atk6-alive6", "-W", "300", "eth0", "ff02::2"], 4)
    c["alive6-firewall-b"] = (["atk6-alive6", "-W", "300", "-F", "eth0", B], 5)
    # thcping6: crafted echoes (extension headers, hop limits, fake lengths)
    ping = lambda *opts, dst=B: ["atk6-thcping6", *opts, "eth0", A, dst]  # noqa: E731
    c["thcping6-b"] = (ping(), 4)
    c["thcping6-hlim1-b"] = (ping("-t", "1"), 4)
    c["thcping6-hlim2-b"] = (ping("-t", "2"), 4)
    c["thcping6-router-alert-b"] = (ping("-a"), 4)
    c["thcping6-frag-b"] = (ping("-f"), 4)
    c["thcping6-big-dstopt-b"] = (ping("-D", "xxx"), 4)
    c["thcping6-size1400-b"] = (ping("-d", "1400"), 4)
    c["thcping6-size1400-r0"] = (ping("-d", "1400", dst=R0), 4)
    c["thcping6-fakelen-b"] = (ping("-L", "2000"), 4)
    c["thcping6-fakenh-b"] = (ping("-N", "250"), 4)
    c["thcping6-version5-b"] = (ping("-V", "5"), 4)
    c["thcping6-syn-r0"] = (ping("-S", "179", dst=R0), 4)
    c["thcping6-udp-r0"] = (ping("-U", "53", dst=R0), 4)
    c["thcping6-prohibit"] = (ping(dst=PROHIBIT), 4)
    # trace6: echo, TCP SYN, with extension headers
    for name, opts in (("icmp", []), ("syn", ["-s", A]), ("hbh", ["-a"]), ("dstopt", ["-D"]),
                       ("baddstopt", ["-E"]), ("frag", ["-F"])):
        argv = ["atk6-trace6", *(opts if name != "syn" else []), "eth0", BEYOND_B] + (["80"] if name == "syn" else [])
        c[f"trace6-{name}-beyond"] = (argv, 8)
    c["trace6-icmp-b"] = (["atk6-trace6", "eth0", B], 6)
    # toobig6: implant an MTU on the far host (a spoofed echo from A, then the too-big) and on
    # the router itself
    c["toobig6-b-1280"] = (["atk6-toobig6", "eth0", B, A, "1280"], 5)
    c["toobig6-r0-1280"] = (["atk6-toobig6", "eth0", R0, A, "1280"], 5)
    # implementation6: each numbered check on its own (no alive check, -p), at host B
    for n in range(1, 43):
        c[f"implementation6-{n:02d}-b"] = (["atk6-implementation6", "-p", "eth0", B, str(n)], 5)
    # fragmentation6: each numbered check, at host B, first/final ping off
    for n in range(1, 13):
        c[f"fragmentation6-{n:02d}-b"] = (["atk6-fragmentation6", "-p", "eth0", B, str(n)], 6)
    # ipv6toolkit (a hop limit given: its tools pick a random one otherwise)
    c["frag6-atomic-b"] = (["frag6", "-i", "eth0", "-A", "64", "-d", B, "-O", "atomic", "-P", "64", "-v"], 3)
    c["frag6-first-b"] = (["frag6", "-i", "eth0", "-A", "64", "-d", B, "-O", "first", "-P", "64", "-v"], 3)
    c["frag6-last-r0"] = (["frag6", "-i", "eth0", "-A", "64", "-d", R0, "-O", "last", "-P", "64", "-v"], 3)
    c["frag6-policy-r0"] = (["frag6", "-i", "eth0", "-A", "64", "-d", R0, "-p", "-v"], 12)
    c["icmp6-unreach-b"] = (["icmp6", "-i", "eth0", "-c", "64", "-d", B, "-e", "4", "-v"], 3)
    c["icmp6-toobig-b"] = (["icmp6", "-i", "eth0", "-c", "64", "-d", B, "-E", "-m", "1280", "-v"], 3)
    c["icmp6-timeexc-b"] = (["icmp6", "-i", "eth0", "-c", "64", "-d", B, "-A", "0", "-v"], 3)
    c["icmp6-paramprob-r0"] = (["icmp6", "-i", "eth0", "-c", "64", "-d", R0, "-R", "0", "-v"], 3)
    c["icmp6-echo-r1-hbh"] = (["icmp6", "-i", "eth0", "-c", "64", "-d", R1, "-t", "128:0", "-H", "8", "-v"], 3)
    c["icmp6-type200-b"] = (["icmp6", "-i", "eth0", "-c", "64", "-d", B, "-t", "200:0", "-v"], 3)
    c["tcp6-syn-b"] = (["tcp6", "-i", "eth0", "-A", "64", "-d", B, "-a", "80", "-X", "S", "-v"], 3)
    c["tcp6-syn-r0"] = (["tcp6", "-i", "eth0", "-A", "64", "-d", R0, "-a", "179", "-X", "S", "-v"], 3)
    c["tcp6-syn-frag-b"] = (["tcp6", "-i", "eth0", "-A", "64", "-d", B, "-a", "80", "-X", "S", "-y", "24", "-v"], 3)
    c["tcp6-ack-dstopt-b"] = (["tcp6", "-i", "eth0", "-A", "64", "-d", B, "-a", "80", "-X", "A", "-u", "16", "-v"], 3)
    c["ni6-noop-r0"] = (["ni6", "-i", "eth0", "-c", "64", "-d", R0, "-q", "0", "-v"], 3)
    c["ni6-name-r0"] = (["ni6", "-i", "eth0", "-c", "64", "-d", R0, "-q", "2", "-v"], 3)
    c["ni6-addrs-b"] = (["ni6", "-i", "eth0", "-c", "64", "-d", B, "-q", "3", "-v"], 3)
    c["scan6-b-subnet-range"] = (["scan6", "-i", "eth0", "-d", "2001:db8:2::1-4", "-v"], 10)
    c["scan6-link-local"] = (["scan6", "-i", "eth0", "-L", "-e", "-P", "all", "-p", "all"], 10)
    c["scan6-b-ports"] = (["scan6", "-i", "eth0", "-d", B, "-j", "tcp:20-25"], 6)
    c["scan6-r1-udp"] = (["scan6", "-i", "eth0", "-d", R1, "-j", "udp:50-55"], 6)
    c["scan6-b-unrec"] = (["scan6", "-i", "eth0", "-d", B, "-p", "unrec"], 6)
    return c


CASES = _cases()

# The bounded subset for the test command (tests/system/test_nd_matrix.py): one or two of
# each tool, chosen to exercise what the router answers itself and what it forwards.
SUBSET = ["alive6-ping-b", "alive6-dstopt-r1", "alive6-hbh-b", "alive6-syn-r1",
          "alive6-ping-unresolved", "thcping6-prohibit", "thcping6-hlim1-b", "thcping6-size1400-b", "thcping6-fakenh-b",
          "trace6-icmp-beyond", "toobig6-b-1280", "implementation6-01-b", "implementation6-10-b",
          "fragmentation6-01-b", "frag6-first-b", "icmp6-paramprob-r0", "tcp6-syn-r0", "ni6-noop-r0",
          "scan6-link-local"]


def names():
    n = {}
    for addr, name in ((A, "A"), (B, "B"), (R0, "R0"), (R1, "R1"), (topo.R_LL[0], "RLL0"), (topo.R_LL[1], "RLL1"),
                       (topo.A_LL, "ALL"), (topo.B_LL, "BLL")):
        n[ipaddress.ip_address(addr)] = name
    return n


NAMES = names()


def name(raw):
    a = ipaddress.ip_address(raw)
    return NAMES.get(a, str(a))


def inner_name(raw):
    """An address an ICMPv6 error quotes: named, or `rnd` if outside the topology's (icmp6 and
    its siblings quote a packet to a random address)."""
    a = ipaddress.ip_address(raw)
    if a in NAMES or a.is_multicast or a.is_link_local or a in ipaddress.ip_network("2001:db8::/32"):
        return name(raw)
    return "rnd"


EXT = {0: "hbh", 43: "rh", 60: "dst", 51: "ah"}


def signature(frame):
    """The signature of a received frame (see the module's text), or None for a frame that is
    no part of a case."""
    if len(frame) < 14:
        return "runt"
    et = struct.unpack_from("!H", frame, 12)[0]
    if et == 0x0806:
        if len(frame) >= 42:
            op = struct.unpack_from("!H", frame, 20)[0]
            return f"arp op{op} {socket.inet_ntoa(frame[28:32])}→{socket.inet_ntoa(frame[38:42])}"
        return "arp"
    if et != 0x86DD:
        return f"ethertype 0x{et:04x}"
    l3 = frame[14:]
    if len(l3) < 40:
        return f"ipv6 truncated {len(l3)}"
    plen, nh, hlim = struct.unpack_from("!HBB", l3, 4)
    parts = [f"{name(l3[8:24])}→{name(l3[24:40])}", f"hl{hlim}", f"plen{plen}"]
    off = 40
    while nh in EXT or nh == 44:
        if off + 8 > len(l3):
            parts.append(f"{nh}:truncated")
            return " ".join(parts)
        if nh == 44:
            fo = struct.unpack_from("!H", l3, off + 2)[0]
            parts.append(f"frag@{fo & 0xFFF8}{'+' if fo & 1 else ''}")
            nxt, ln = l3[off], 8
            if fo & 0xFFF8:
                parts.append(f"nh{nxt}")
                return " ".join(parts)
        else:
            nxt, ln = l3[off], (l3[off + 1] + 2) * 4 if nh == 51 else (l3[off + 1] + 1) * 8
            parts.append(f"{EXT[nh]}{ln}")
        nh, off = nxt, off + ln
    if nh == 58 and off + 4 <= len(l3):
        t, code = l3[off], l3[off + 1]
        if t in (143, 131, 132, 133):
            return None  # MLD reports/done and router solicitations: a kernel's own
        s = f"icmp6 {t}/{code}"
        if t in (1, 2, 3, 4) and off + 8 <= len(l3):
            if t == 2:
                s += f" mtu{struct.unpack_from('!I', l3, off + 4)[0]}"
            if t == 4:
                s += f" ptr{struct.unpack_from('!I', l3, off + 4)[0]}"
            s += f" quote{len(l3) - off - 8}"
            inner = l3[off + 8:]
            if len(inner) >= 40:
                s += f" [{inner_name(inner[8:24])}→{inner_name(inner[24:40])} nh{inner[6]}]"
        if t in (135, 136, 137) and off + 24 <= len(l3):
            s += f" target {name(l3[off + 8:off + 24])}"
        parts.append(s)
    elif nh == 6 and off + 14 <= len(l3):
        parts.append(f"tcp flags0x{l3[off + 13]:02x}")
    elif nh == 17:
        parts.append("udp")
    else:
        parts.append(f"nh{nh}")
    return " ".join(parts)


def _router_ns(frame):
    return len(frame) >= 14 + 48 and frame[12:14] == b"\x86\xdd" and frame[14 + 6] == 58 and frame[14 + 40] == 135 \
        and name(frame[14 + 8:14 + 24]) in ("RLL1", "R1")


def settle(cap_b, quiet=0.5, resolving=1.6, longest=6.0):
    """Waits for a case's late answers: `quiet` s, and while the router is still soliciting a
    neighbour on host B's link (Linux: 3 solicitations 1 s apart, then ICMPv6 1/3 for what it
    queued), until `resolving` s after its last solicitation — so that no answer falls into
    the next case. At most `longest` s."""
    start = time.monotonic()
    time.sleep(quiet)
    while time.monotonic() - start < longest:
        last = max((t for t, f, _p in list(cap_b.frames) if _router_ns(f)), default=None)
        if last is None or time.monotonic() - last >= resolving:
            return
        time.sleep(0.2)


def run_case(t, case_id):
    """Runs one case on topology `t`: what hosts A and B received (signature → count), the
    tool's exit status and the last lines of what it printed."""
    argv, seconds = CASES[case_id]
    start = time.monotonic()
    caps = {"a": t.capture("a"), "b": t.capture("b")}
    time.sleep(0.1)
    done = subprocess.run(["ip", "netns", "exec", t.a, "timeout", "-k", "2", str(seconds), "stdbuf", "-oL", "-eL", *argv],
                          capture_output=True, text=True, timeout=seconds + 20)
    settle(caps["b"])
    seen = {}
    for host, cap in caps.items():
        got = collections.Counter()
        for _t, frame, _partial in cap.take():
            s = signature(frame)
            if s is not None:
                got[s] += 1
        cap.close()
        t.sockets.remove(cap)
        seen[host] = dict(sorted(got.items()))
    return {"case": case_id, "argv": argv, "rc": done.returncode, "a": seen["a"], "b": seen["b"],
            "output": (done.stdout + done.stderr).strip().splitlines()[-6:],
            "seconds": round(time.monotonic() - start, 1)}


def run_cases(t, ids, log=None):
    out = {}
    for cid in ids:
        out[cid] = run_case(t, cid)
        if log:
            log(f"{t.describe()} {cid}: A {sum(out[cid]['a'].values())} frames, B {sum(out[cid]['b'].values())}, "
                f"{out[cid]['seconds']} s")
    return out


# ICMPv6 "fragment reassembly time exceeded" comes 60 s (ip6frag_time) after the fragments that
# never completed, longer than any case: it lands in whichever later case is running, by timing,
# and answers none that sees it (through kernel and shared VRs, host B's fell into fragmentation6's
# case 02 on one router and 03 on the other). The fragments themselves are compared where they
# were sent, in what host B received.
LATE = " icmp6 3/1 "


def differences(kernel, pearld):
    """What pearld's run of a case shows that the kernel router's does not, and the reverse, per
    host: {host: {signature: (kernel count, pearld count)}}; empty when they agree."""
    diff = {}
    for host in ("a", "b"):
        k, p = kernel[host], pearld[host]
        d = {s: (k.get(s, 0), p.get(s, 0)) for s in sorted(set(k) | set(p))
             if k.get(s, 0) != p.get(s, 0) and LATE not in f"{s} "}
        if d:
            diff[host] = d
    return diff


def compare(kernel_runs, pearld_runs):
    """Per case: 'same' or the differences."""
    return {cid: differences(kernel_runs[cid], pearld_runs[cid]) for cid in kernel_runs}


# Cases where pearld is known to answer otherwise than the kernel router: why, and the difference
# itself (as `differences` gives it). The test command accepts a listed case answering either as
# the kernel router does or with exactly this difference, and fails on anything else.
# None now: alive6's four probes to an address nobody holds drew three "address unreachable"
# while the unresolved-neighbour policer let 3 frames a destination through (PER_NEIGHBOR, now 8).
EXPLAINED = {}


def explained(case_id, diff):
    """Whether `diff` (of `differences`) is no difference or the one EXPLAINED lists for the case."""
    if not diff:
        return True
    known = EXPLAINED.get(case_id)
    return known is not None and diff == known[1]
