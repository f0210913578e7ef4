"""The named cases: each a function of its tag returning the frames host A sends.

Every frame carries the tag where a router keeps it and an ICMP error quotes it (IPv4
identification, IPv6 flow label, ICMP echo identifier, TCP source port) and a payload marker
(`packets.marker`). Case ids read `family.ip-version.what`; `slow` cases wait for the router's
ARP/ND to give up (about 3 s).
"""

import struct
from dataclasses import dataclass, field

from scapy.all import (ICMP, IP, TCP, UDP, Ether, ICMPv6DestUnreach, ICMPv6EchoReply, ICMPv6EchoRequest,
                       ICMPv6TimeExceeded, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,
                       IPv6ExtHdrRouting, Raw, conf)

from . import packets
from .topo import (A4, A6, A_LL, B4, B6, EGRESS_MTU, HOST_A_MAC, HOST_B_MAC, R4, R6, R_LL, R_MAC, spoof4, spoof6,
                   src4, src6)

conf.verb = 0

FAR4, FAR6 = "198.51.100.7", "2001:db8:100::7"      # beyond host B
NOROUTE4, NOROUTE6 = "100.64.0.7", "2001:db8:ffff::7"
PROHIBIT4, PROHIBIT6 = "203.0.113.7", "2001:db8:dead::7"
UNREACH4, UNREACH6 = "203.0.113.200", "2001:db8:beef::7"
BLACKHOLE4, BLACKHOLE6 = "192.0.2.7", "2001:db8:bad::7"
UNRESOLVED4, UNRESOLVED6 = "10.2.0.99", "2001:db8:2::99"


@dataclass
class Case:
    id: str
    group: str
    build: object            # tag -> list of scapy packets or bytes
    desc: str = ""
    slow: bool = False
    tags: list = field(default_factory=list)  # extra key kinds besides 4/6/e/t/m

    def frames(self, n):
        return [bytes(f) for f in self.build(n)]


CASES = []


def case(id, group, desc="", slow=False):
    def deco(fn):
        CASES.append(Case(id, group, fn, desc or fn.__doc__ or "", slow))
        return fn
    return deco


# -- building blocks ---------------------------------------------------------------------------
def eth(dst=R_MAC[0], type=None):
    return Ether(src=HOST_A_MAC, dst=dst) if type is None else Ether(src=HOST_A_MAC, dst=dst, type=type)


def pay(n, size=16):
    m = packets.marker(n)
    return Raw((m * (size // len(m) + 1))[:max(size, len(m))])


def ip4(n, dst=FAR4, src=None, ttl=64, **kw):
    """IPv4 from case n's own source behind host A (see topo.src4) unless `src` is given."""
    return IP(src=src or src4(n), dst=dst, id=n, ttl=ttl, **kw)


def ip6(n, dst=FAR6, src=None, hlim=64, **kw):
    return IPv6(src=src or src6(n), dst=dst, fl=n, hlim=hlim, **kw)


def udp4(n, dst=FAR4, size=16, dport=33434, **kw):
    return eth() / ip4(n, dst=dst, **kw) / UDP(sport=40000, dport=dport) / pay(n, size)


def udp6(n, dst=FAR6, size=16, dport=33434, **kw):
    return eth() / ip6(n, dst=dst, **kw) / UDP(sport=40000, dport=dport) / pay(n, size)


def echo4(n, dst=FAR4, size=16, **kw):
    return eth() / ip4(n, dst=dst, **kw) / ICMP(type=8, id=n, seq=1) / pay(n, size)


def echo6(n, dst=FAR6, size=16, **kw):
    return eth() / ip6(n, dst=dst, **kw) / ICMPv6EchoRequest(id=n, seq=1) / pay(n, size)


def frag4(pkt, pieces):
    """Cuts an IPv4 packet's payload into fragments: `pieces` is a list of (offset bytes,
    length bytes, more-fragments) taken from the unfragmented payload."""
    ip = pkt[IP]
    ip.len, ip.chksum = None, None
    whole = IP(bytes(ip))
    data = bytes(whole.payload)
    out = []
    for off, ln, mf in pieces:
        h = whole.copy()
        h.remove_payload()
        h.len, h.chksum = None, None
        h.flags = ("MF" if mf else 0) | (whole.flags & 2)
        h.frag = off // 8
        h.proto = whole.proto
        out.append(eth() / h / Raw(data[off:off + ln]))
    return out


def frag6(n, upper, pieces, dst=FAR6, hlim=64, nh=17, ident=None):
    """IPv6 fragments of `upper` (bytes of the upper layer and what follows)."""
    out = []
    for off, ln, m in pieces:
        out.append(eth() / ip6(n, dst=dst, hlim=hlim) /
                   IPv6ExtHdrFragment(nh=nh, offset=off // 8, m=int(m), id=ident if ident is not None else 0x10000 + n) /
                   Raw(upper[off:off + ln]))
    return out


def udp6_bytes(n, dst=FAR6, size=64, src=None):
    pkt = IPv6(src=src or src6(n), dst=dst, fl=n) / UDP(sport=40000, dport=33434) / pay(n, size)
    return bytes(IPv6(bytes(pkt))[UDP])


def tcp4(n, dst=FAR4, flags="S", dport=80, size=0, **kw):
    p = eth() / ip4(n, dst=dst, **kw) / TCP(sport=n, dport=dport, flags=flags, seq=1000 + n)
    return p / pay(n, size) if size else p


def tcp6(n, dst=FAR6, flags="S", dport=80, size=0, **kw):
    p = eth() / ip6(n, dst=dst, **kw) / TCP(sport=n, dport=dport, flags=flags, seq=1000 + n)
    return p / pay(n, size) if size else p


def v4opts(n, options, dst=FAR4, ttl=64, size=16, proto_layer=None, flags=0):
    """Frame bytes of an IPv4 packet with exactly these option bytes (padded with EOL to a
    multiple of four), as scapy would not leave them."""
    raw = bytes(options)
    raw += b"\0" * (-len(raw) % 4)
    plain = bytes(IP(src=src4(n), dst=dst, id=n, ttl=ttl, flags=flags) / (proto_layer or UDP(sport=40000, dport=33434)) / pay(n, size))
    head, l4 = bytearray(plain[:20]), plain[20:]
    head[0] = 0x40 | (5 + len(raw) // 4)
    struct.pack_into("!H", head, 2, 20 + len(raw) + len(l4))
    struct.pack_into("!H", head, 10, 0)
    h = bytes(head) + raw
    h = h[:10] + struct.pack("!H", packets.csum(h)) + h[12:]
    return packets.mac_bytes(R_MAC[0]) + packets.mac_bytes(HOST_A_MAC) + b"\x08\x00" + h + l4


def hbh_opts(*opts, nh=17):
    """A hop-by-hop or destination-options body: raw TLVs, padded to 8n-2 bytes with PadN."""
    body = b"".join(opts)
    pad = (-(len(body) + 2)) % 8
    if pad == 1:
        body += b"\x00"
    elif pad:
        body += bytes([1, pad - 2]) + b"\0" * (pad - 2)
    return body


def ext(nh_type, nh, body):
    """An extension header of type `nh_type` (0, 60: options; raw body) as bytes."""
    assert (len(body) + 2) % 8 == 0
    return bytes([nh, (len(body) + 2) // 8 - 1]) + body


def v6chain(n, chain, upper_nh, upper, dst=FAR6, hlim=64, src=None, first_nh=None):
    """Bytes of a frame: IPv6 header, then `chain` (list of (type, bytes-without-next-header
    handling: each element is a function nh -> bytes)), then `upper`."""
    # Build back to front so each header names the next.
    nh = upper_nh
    body = upper
    for typ, make in reversed(chain):
        body = make(nh) + body
        nh = typ
    if first_nh is not None:
        nh = first_nh
    hdr = IPv6(src=src or src6(n), dst=dst, fl=n, hlim=hlim, nh=nh, plen=len(body))
    return packets.mac_bytes(R_MAC[0]) + packets.mac_bytes(HOST_A_MAC) + b"\x86\xdd" + bytes(hdr)[:40] + body


def udp_upper6(n, dst=FAR6, size=16, src=None):
    """A UDP header + payload whose checksum is right for src → dst."""
    return udp6_bytes(n, dst=dst, size=size, src=src)


def opt_hdr(*opts):
    return lambda nh: ext(0, nh, hbh_opts(*opts))


def rh(rtype, segleft, addrs=(), data=None):
    def make(nh):
        if data is not None:
            body = bytes([rtype, segleft]) + data
        else:
            body = bytes([rtype, segleft]) + b"\0\0\0\0" + b"".join(_a6(a) for a in addrs)
        return ext(43, nh, body)
    return make


def srh(segleft, segs):
    def make(nh):
        last = len(segs) - 1
        body = bytes([4, segleft, last, 0]) + b"\0\0" + b"".join(_a6(a) for a in segs)
        return ext(43, nh, body)
    return make


def fraghdr(n, offset=0, m=0):
    return lambda nh: bytes([nh, 0]) + struct.pack("!HI", (offset // 8) << 3 | m, 0x20000 + n)


def _a6(a):
    import socket
    return socket.inet_pton(socket.AF_INET6, a)


# -- ICMP errors ------------------------------------------------------------------------------
@case("icmp.v4.ttl1-udp", "icmp-errors")
def _(n):
    """UDP with TTL 1 to a routed destination: time exceeded from the ingress address."""
    return [udp4(n, ttl=1)]


@case("icmp.v4.ttl0-udp", "icmp-errors")
def _(n):
    """TTL 0 (never valid on the wire): time exceeded too."""
    return [udp4(n, ttl=0)]


@case("icmp.v4.ttl1-echo", "icmp-errors")
def _(n):
    return [echo4(n, ttl=1)]


@case("icmp.v4.ttl1-tcp-syn", "icmp-errors")
def _(n):
    return [tcp4(n, ttl=1)]


@case("icmp.v4.ttl1-large", "icmp-errors")
def _(n):
    """A 1000-byte datagram with TTL 1: how much of it the error quotes (≤ 576 bytes in all)."""
    return [udp4(n, ttl=1, size=1000)]


@case("icmp.v4.ttl1-options", "icmp-errors")
def _(n):
    """TTL 1 with a record-route option: the quote includes the options."""
    return [v4opts(n, b"\x07\x0b\x04" + b"\0" * 8, ttl=1)]


@case("icmp.v4.net-unreach", "icmp-errors")
def _(n):
    """A destination with no route: ICMP 3/0 from the ingress address."""
    return [udp4(n, dst=NOROUTE4)]


@case("icmp.v4.net-unreach-echo", "icmp-errors")
def _(n):
    return [echo4(n, dst=NOROUTE4)]


@case("icmp.v4.net-unreach-class-e", "icmp-errors")
def _(n):
    """240.0.0.7 (reserved class E): routed like any destination without a route."""
    return [udp4(n, dst="240.0.0.7")]


@case("icmp.v4.host-unreach-route", "icmp-errors")
def _(n):
    """An `unreachable` route: ICMP 3/1."""
    return [udp4(n, dst=UNREACH4)]


@case("icmp.v4.host-unreach-arp", "icmp-errors", slow=True)
def _(n):
    """An on-link address nobody answers ARP for: ICMP 3/1 once the router gives up."""
    return [udp4(n, dst=UNRESOLVED4)]


@case("icmp.v4.admin-prohibited", "icmp-errors")
def _(n):
    """A `prohibit` route: ICMP 3/13 (communication administratively prohibited)."""
    return [udp4(n, dst=PROHIBIT4)]


@case("icmp.v4.blackhole", "icmp-errors")
def _(n):
    """A `blackhole` route: silence."""
    return [udp4(n, dst=BLACKHOLE4)]


@case("icmp.v4.port-unreach-eth0", "icmp-errors")
def _(n):
    """UDP to a closed port of the router's ingress address: ICMP 3/3."""
    return [udp4(n, dst=R4[0])]


@case("icmp.v4.port-unreach-eth1", "icmp-errors")
def _(n):
    """UDP to a closed port of the router's far address."""
    return [udp4(n, dst=R4[1])]


@case("icmp.v4.proto-unreach", "icmp-errors")
def _(n):
    """An unknown protocol (253) to the router: ICMP 3/2."""
    return [eth() / ip4(n, dst=R4[0], proto=253) / pay(n, 16)]


@case("icmp.v4.tcp-rst", "icmp-errors")
def _(n):
    """TCP SYN to a closed port of the router: RST."""
    return [tcp4(n, dst=R4[0], dport=1)]


@case("icmp.v4.frag-needed", "icmp-errors")
def _(n):
    """1450 bytes with DF towards the 1400-byte egress: ICMP 3/4 with MTU 1400."""
    return [udp4(n, size=1450 - 28, flags="DF")]


@case("icmp.v4.frag-needed-mtu-plus-1", "icmp-errors")
def _(n):
    return [udp4(n, size=EGRESS_MTU + 1 - 28, flags="DF")]


@case("icmp.v4.exact-mtu-df", "icmp-errors")
def _(n):
    """Exactly the egress MTU with DF: forwarded."""
    return [udp4(n, size=EGRESS_MTU - 28, flags="DF")]


@case("icmp.v4.frag-needed-ttl1", "icmp-errors")
def _(n):
    """Too big and TTL 1: which error comes first."""
    return [udp4(n, size=1450 - 28, flags="DF", ttl=1)]


@case("icmp.v4.frag-needed-echo", "icmp-errors")
def _(n):
    return [echo4(n, size=1450 - 28, flags="DF")]


@case("icmp.v4.fragmented-df-clear", "icmp-errors")
def _(n):
    """1450 bytes without DF: the router fragments it for the 1400-byte egress."""
    return [udp4(n, size=1450 - 28)]


@case("icmp.v4.fragmented-df-clear-options", "icmp-errors")
def _(n):
    """Same with a record-route option (copied into the first fragment only)."""
    return [v4opts(n, b"\x07\x0b\x04" + b"\0" * 8, size=1450 - 40 - 8)]


@case("icmp.v4.param-problem-option-length", "icmp-errors")
def _(n):
    """An option whose length runs past the header: parameter problem."""
    return [v4opts(n, b"\x07\x30\x04" + b"\0" * 5)]


@case("icmp.v4.param-problem-rr-pointer", "icmp-errors")
def _(n):
    """Record route with pointer 3 (< 4): parameter problem pointing at it."""
    return [v4opts(n, b"\x07\x07\x03" + b"\0" * 4 + b"\0")]


@case("icmp.v4.param-problem-option-len-1", "icmp-errors")
def _(n):
    return [v4opts(n, b"\x07\x01\x00\x00")]


@case("icmp.v4.redirect-hairpin", "icmp-errors")
def _(n):
    """From host A to an on-link neighbour on the same side, through the router: redirect
    (the source is on-link) and forwarded back out."""
    return [udp4(n, dst="10.1.0.3", src=A4)]


@case("icmp.v6.hlim1-udp", "icmp-errors")
def _(n):
    return [udp6(n, hlim=1)]


@case("icmp.v6.hlim0-udp", "icmp-errors")
def _(n):
    return [udp6(n, hlim=0)]


@case("icmp.v6.hlim1-echo", "icmp-errors")
def _(n):
    return [echo6(n, hlim=1)]


@case("icmp.v6.hlim1-tcp-syn", "icmp-errors")
def _(n):
    return [tcp6(n, hlim=1)]


@case("icmp.v6.hlim1-large", "icmp-errors")
def _(n):
    """A 1400-byte packet with hop limit 1: the error quotes up to 1280 bytes in all."""
    return [udp6(n, hlim=1, size=1400 - 48)]


@case("icmp.v6.no-route", "icmp-errors")
def _(n):
    return [udp6(n, dst=NOROUTE6)]


@case("icmp.v6.no-route-echo", "icmp-errors")
def _(n):
    return [echo6(n, dst=NOROUTE6)]


@case("icmp.v6.unreachable-route", "icmp-errors")
def _(n):
    return [udp6(n, dst=UNREACH6)]


@case("icmp.v6.addr-unreach-nd", "icmp-errors", slow=True)
def _(n):
    """An on-link address nobody answers ND for: address unreachable once the router gives up."""
    return [udp6(n, dst=UNRESOLVED6)]


@case("icmp.v6.admin-prohibited", "icmp-errors")
def _(n):
    return [udp6(n, dst=PROHIBIT6)]


@case("icmp.v6.blackhole", "icmp-errors")
def _(n):
    return [udp6(n, dst=BLACKHOLE6)]


@case("icmp.v6.port-unreach-eth0", "icmp-errors")
def _(n):
    return [udp6(n, dst=R6[0])]


@case("icmp.v6.port-unreach-eth1", "icmp-errors")
def _(n):
    return [udp6(n, dst=R6[1])]


@case("icmp.v6.unknown-next-header-to-router", "icmp-errors")
def _(n):
    """An unknown upper layer (253) to the router: parameter problem code 1."""
    return [eth() / ip6(n, dst=R6[0], nh=253) / pay(n, 16)]


@case("icmp.v6.tcp-rst", "icmp-errors")
def _(n):
    return [tcp6(n, dst=R6[0], dport=1)]


@case("icmp.v6.packet-too-big", "icmp-errors")
def _(n):
    return [udp6(n, size=1450 - 48)]


@case("icmp.v6.packet-too-big-mtu-plus-1", "icmp-errors")
def _(n):
    return [udp6(n, size=EGRESS_MTU + 1 - 48)]


@case("icmp.v6.exact-mtu", "icmp-errors")
def _(n):
    return [udp6(n, size=EGRESS_MTU - 48)]


@case("icmp.v6.packet-too-big-hlim1", "icmp-errors")
def _(n):
    return [udp6(n, size=1450 - 48, hlim=1)]


@case("icmp.v6.packet-too-big-echo", "icmp-errors")
def _(n):
    return [echo6(n, size=1450 - 48)]


@case("icmp.v6.redirect-hairpin", "icmp-errors")
def _(n):
    return [udp6(n, dst="2001:db8:1::3", src=A6)]


# -- when no error may be sent ---------------------------------------------------------------
@case("noerr.v4.ttl1-dest-unreach", "no-error")
def _(n):
    """An ICMP error (destination unreachable) with TTL 1: no error about an error."""
    inner = IP(src=FAR4, dst=src4(n), id=n, ttl=60) / UDP(sport=33434, dport=40000)
    return [eth() / ip4(n, ttl=1) / ICMP(type=3, code=3) / inner / pay(n, 8)]


@case("noerr.v4.ttl1-time-exceeded", "no-error")
def _(n):
    inner = IP(src=FAR4, dst=src4(n), id=n, ttl=1) / UDP(sport=33434, dport=40000)
    return [eth() / ip4(n, ttl=1) / ICMP(type=11, code=0) / inner / pay(n, 8)]


@case("noerr.v4.no-route-dest-unreach", "no-error")
def _(n):
    inner = IP(src=NOROUTE4, dst=src4(n), id=n) / UDP(sport=33434, dport=40000)
    return [eth() / ip4(n, dst=NOROUTE4) / ICMP(type=3, code=1) / inner / pay(n, 8)]


@case("noerr.v4.ttl1-echo-reply", "no-error")
def _(n):
    """An echo reply is not an error: TTL 1 draws time exceeded."""
    return [eth() / ip4(n, ttl=1) / ICMP(type=0, id=n, seq=1) / pay(n)]


@case("noerr.v4.ttl1-multicast", "no-error")
def _(n):
    return [eth("01:00:5e:01:02:03") / ip4(n, dst="239.1.2.3", ttl=1) / UDP(sport=40000, dport=5000) / pay(n)]


@case("noerr.v4.ttl1-limited-broadcast", "no-error")
def _(n):
    return [eth("ff:ff:ff:ff:ff:ff") / ip4(n, dst="255.255.255.255", ttl=1) / UDP(sport=40000, dport=5000) / pay(n)]


@case("noerr.v4.ttl1-directed-broadcast", "no-error")
def _(n):
    return [udp4(n, dst="10.2.0.255", ttl=1)]


@case("noerr.v4.ttl1-non-first-fragment", "no-error")
def _(n):
    """A non-first fragment with TTL 1: no time exceeded (RFC 1812 4.3.2.7)."""
    return [eth() / ip4(n, ttl=1, flags="MF", frag=3, proto=17) / pay(n, 24)]


@case("noerr.v4.ttl1-first-fragment", "no-error")
def _(n):
    """A first fragment with TTL 1 does draw time exceeded."""
    return [eth() / ip4(n, ttl=1, flags="MF", frag=0, proto=17) / UDP(sport=40000, dport=33434, len=200) / pay(n, 24)]


@case("noerr.v4.l2-broadcast-unicast-ip", "no-error")
def _(n):
    """An Ethernet broadcast carrying a routable unicast packet: not forwarded."""
    return [eth("ff:ff:ff:ff:ff:ff") / ip4(n) / UDP(sport=40000, dport=33434) / pay(n)]


@case("noerr.v4.l2-multicast-unicast-ip", "no-error")
def _(n):
    return [eth("01:00:5e:00:00:01") / ip4(n) / UDP(sport=40000, dport=33434) / pay(n)]


@case("noerr.v4.l2-other-host", "no-error")
def _(n):
    """A frame for another MAC on the segment: not the router's to forward."""
    return [eth("02:99:00:00:00:09") / ip4(n) / UDP(sport=40000, dport=33434) / pay(n)]


@case("noerr.v4.l2-other-host-ttl1", "no-error")
def _(n):
    return [eth("02:99:00:00:00:09") / ip4(n, ttl=1) / UDP(sport=40000, dport=33434) / pay(n)]


@case("noerr.v4.port-unreach-subnet-broadcast", "no-error")
def _(n):
    """UDP to a closed port at the ingress subnet's broadcast address: no port unreachable."""
    return [eth("ff:ff:ff:ff:ff:ff") / ip4(n, dst="10.1.0.255") / UDP(sport=40000, dport=5000) / pay(n)]


@case("noerr.v4.port-unreach-limited-broadcast", "no-error")
def _(n):
    return [eth("ff:ff:ff:ff:ff:ff") / ip4(n, dst="255.255.255.255") / UDP(sport=40000, dport=5000) / pay(n)]


@case("noerr.v4.no-route-from-multicast-source", "no-error")
def _(n):
    return [udp4(n, dst=NOROUTE4, src="224.0.0.9")]


@case("noerr.v6.hlim1-dest-unreach", "no-error")
def _(n):
    inner = IPv6(src=FAR6, dst=src6(n), fl=n) / UDP(sport=33434, dport=40000)
    return [eth() / ip6(n, hlim=1) / ICMPv6DestUnreach(code=4) / inner / pay(n, 8)]


@case("noerr.v6.hlim1-time-exceeded", "no-error")
def _(n):
    inner = IPv6(src=FAR6, dst=src6(n), fl=n, hlim=1) / UDP(sport=33434, dport=40000)
    return [eth() / ip6(n, hlim=1) / ICMPv6TimeExceeded() / inner / pay(n, 8)]


@case("noerr.v6.no-route-dest-unreach", "no-error")
def _(n):
    inner = IPv6(src=NOROUTE6, dst=src6(n), fl=n) / UDP(sport=33434, dport=40000)
    return [eth() / ip6(n, dst=NOROUTE6) / ICMPv6DestUnreach(code=4) / inner / pay(n, 8)]


@case("noerr.v6.hlim1-echo-reply", "no-error")
def _(n):
    return [eth() / ip6(n, hlim=1) / ICMPv6EchoReply(id=n, seq=1) / pay(n)]


@case("noerr.v6.hlim1-multicast", "no-error")
def _(n):
    return [eth("33:33:00:00:01:02") / ip6(n, dst="ff0e::102", hlim=1) / UDP(sport=40000, dport=5000) / pay(n)]


@case("noerr.v6.hlim1-non-first-fragment", "no-error")
def _(n):
    """A non-first fragment with hop limit 1 (RFC 4443 does not exempt it)."""
    return frag6(n, b"\0" * 8 + bytes(pay(n, 32)), [(8, 32, True)], hlim=1)


@case("noerr.v6.l2-broadcast-unicast-ip", "no-error")
def _(n):
    return [eth("ff:ff:ff:ff:ff:ff") / ip6(n) / UDP(sport=40000, dport=33434) / pay(n)]


@case("noerr.v6.l2-multicast-unicast-ip", "no-error")
def _(n):
    return [eth("33:33:00:00:00:01") / ip6(n) / UDP(sport=40000, dport=33434) / pay(n)]


@case("noerr.v6.l2-other-host", "no-error")
def _(n):
    return [eth("02:99:00:00:00:09") / ip6(n) / UDP(sport=40000, dport=33434) / pay(n)]


@case("noerr.v6.port-unreach-multicast", "no-error")
def _(n):
    """UDP to a closed port at all-nodes: no port unreachable about a multicast destination."""
    return [eth("33:33:00:00:00:01") / ip6(n, dst="ff02::1", src=A_LL) / UDP(sport=40000, dport=5000) / pay(n)]


# -- fragments --------------------------------------------------------------------------------
def _udp_dgram4(n, size=64, flags=0):
    return eth() / ip4(n, flags=flags) / UDP(sport=40000, dport=33434) / pay(n, size)


@case("frag.v4.three-in-order", "fragments")
def _(n):
    """A UDP datagram its sender cut in three (first, middle, last): all forwarded as they came."""
    return frag4(_udp_dgram4(n, 64), [(0, 24, True), (24, 24, True), (48, 24, False)])


@case("frag.v4.out-of-order", "fragments")
def _(n):
    return frag4(_udp_dgram4(n, 64), [(48, 24, False), (0, 24, True), (24, 24, True)])


@case("frag.v4.overlapping", "fragments")
def _(n):
    return frag4(_udp_dgram4(n, 64), [(0, 32, True), (16, 32, True), (40, 32, False)])


@case("frag.v4.duplicate", "fragments")
def _(n):
    return frag4(_udp_dgram4(n, 64), [(0, 24, True), (0, 24, True), (24, 48, False)])


@case("frag.v4.tiny-first-tcp", "fragments")
def _(n):
    """A first fragment of 8 bytes splitting the TCP header (RFC 1858): forwarded."""
    p = eth() / ip4(n) / TCP(sport=n, dport=80, flags="S", seq=1) / pay(n, 16)
    return frag4(p, [(0, 8, True), (8, 28, False)])


@case("frag.v4.tiny-first-udp", "fragments")
def _(n):
    """A first fragment carrying the UDP header alone."""
    return frag4(_udp_dgram4(n, 40), [(0, 8, True), (8, 40, False)])


@case("frag.v4.offset-1-tcp", "fragments")
def _(n):
    """A fragment at offset 8 bytes overwriting TCP flags (RFC 1858's attack): forwarded."""
    p = eth() / ip4(n) / TCP(sport=n, dport=80, flags="S", seq=1) / pay(n, 16)
    return frag4(p, [(0, 16, True), (8, 28, False)])


@case("frag.v4.only-last", "fragments")
def _(n):
    return [eth() / ip4(n, frag=10, proto=17) / pay(n, 40)]


@case("frag.v4.only-middle", "fragments")
def _(n):
    return [eth() / ip4(n, flags="MF", frag=10, proto=17) / pay(n, 40)]


@case("frag.v4.df-and-mf", "fragments")
def _(n):
    return [eth() / ip4(n, flags="DF+MF", proto=17) / UDP(sport=40000, dport=33434, len=300) / pay(n, 40)]


@case("frag.v4.first-above-mtu", "fragments")
def _(n):
    """A first fragment (MF) larger than the egress MTU: fragmented again."""
    return frag4(_udp_dgram4(n, 2000), [(0, 1448, True), (1448, 560, False)])


@case("frag.v4.max-offset", "fragments")
def _(n):
    """Offset 8191 × 8: the datagram would exceed 65535 bytes; a router forwards it anyway."""
    return [eth() / ip4(n, frag=8191, proto=17) / pay(n, 40)]


@case("frag.v4.echo-fragmented", "fragments")
def _(n):
    return frag4(echo4(n, size=80), [(0, 40, True), (40, 48, False)])


@case("frag.v4.ttl1-all-fragments", "fragments")
def _(n):
    """Three fragments with TTL 1: only the first draws time exceeded."""
    p = eth() / ip4(n, ttl=1) / UDP(sport=40000, dport=33434) / pay(n, 64)
    return frag4(p, [(0, 24, True), (24, 24, True), (48, 24, False)])


@case("frag.v4.to-router-echo", "fragments")
def _(n):
    """A fragmented echo request to the router: it reassembles and answers."""
    return frag4(echo4(n, dst=R4[0], size=1800), [(0, 1480, True), (1480, 328, False)])


@case("frag.v6.three-in-order", "fragments")
def _(n):
    up = udp6_bytes(n, size=64)
    return frag6(n, up, [(0, 24, True), (24, 24, True), (48, 24, False)])


@case("frag.v6.out-of-order", "fragments")
def _(n):
    up = udp6_bytes(n, size=64)
    return frag6(n, up, [(48, 24, False), (0, 24, True), (24, 24, True)])


@case("frag.v6.overlapping", "fragments")
def _(n):
    up = udp6_bytes(n, size=64)
    return frag6(n, up, [(0, 32, True), (16, 32, True), (40, 32, False)])


@case("frag.v6.atomic", "fragments")
def _(n):
    """An atomic fragment (offset 0, M clear; RFC 8021): forwarded."""
    up = udp6_bytes(n, size=32)
    return frag6(n, up, [(0, len(up), False)])


@case("frag.v6.tiny-first-tcp", "fragments")
def _(n):
    """A first fragment of 8 bytes that splits the TCP header (RFC 7112 forbids it; a router forwards)."""
    t = bytes(IPv6(src=src6(n), dst=FAR6) / TCP(sport=n, dport=80, flags="S") / pay(n, 16))[40:]
    return frag6(n, t, [(0, 8, True), (8, len(t) - 8, False)], nh=6)


@case("frag.v6.only-last", "fragments")
def _(n):
    return frag6(n, b"\0" * 80 + bytes(pay(n, 40)), [(80, 40, False)])


@case("frag.v6.too-big", "fragments")
def _(n):
    """A fragment above the egress MTU: packet too big (routers do not fragment IPv6)."""
    up = udp6_bytes(n, size=2000)
    return frag6(n, up, [(0, 1432, True)])


@case("frag.v6.nested-fragment-headers", "fragments")
def _(n):
    up = udp_upper6(n, size=24)
    return [v6chain(n, [(44, fraghdr(n, 0, 0)), (44, fraghdr(n, 0, 0))], 17, up)]


@case("frag.v6.hlim1-first", "fragments")
def _(n):
    up = udp6_bytes(n, size=64)
    return frag6(n, up, [(0, 24, True)], hlim=1)


@case("frag.v6.to-router-echo", "fragments")
def _(n):
    e = bytes(IPv6(src=src6(n), dst=R6[0]) / ICMPv6EchoRequest(id=n, seq=1) / pay(n, 1800))[40:]
    return frag6(n, e, [(0, 1448, True), (1448, len(e) - 1448, False)], dst=R6[0], nh=58)


# -- IPv4 options -------------------------------------------------------------------------------
RR9 = b"\x07\x27\x04" + b"\0" * 36          # record route, 9 empty slots
TS0 = b"\x44\x28\x05\x00" + b"\0" * 36      # timestamps only
TS1 = b"\x44\x24\x05\x01" + b"\0" * 32      # address + timestamp
RA = b"\x94\x04\x00\x00"


def _a4(a):
    import socket
    return socket.inet_aton(a)


@case("opt.v4.nop-eol", "ipv4-options")
def _(n):
    return [v4opts(n, b"\x01\x01\x01\x00")]


@case("opt.v4.forty-nops", "ipv4-options")
def _(n):
    """A 60-byte header of NOPs (IHL 15)."""
    return [v4opts(n, b"\x01" * 40)]


@case("opt.v4.record-route", "ipv4-options")
def _(n):
    """Record route: the router writes its egress address into the next slot."""
    return [v4opts(n, RR9)]


@case("opt.v4.record-route-full", "ipv4-options")
def _(n):
    return [v4opts(n, b"\x07\x07\x08" + _a4("10.9.9.9") + b"\0")]


@case("opt.v4.timestamp", "ipv4-options")
def _(n):
    return [v4opts(n, TS0)]


@case("opt.v4.timestamp-with-address", "ipv4-options")
def _(n):
    return [v4opts(n, TS1)]


@case("opt.v4.timestamp-prespecified", "ipv4-options")
def _(n):
    """Timestamps for pre-specified addresses: the router's egress address is the first one."""
    return [v4opts(n, b"\x44\x14\x05\x03" + _a4(R4[1]) + b"\0" * 4 + _a4("10.9.9.9") + b"\0" * 4)]


@case("opt.v4.timestamp-overflow", "ipv4-options")
def _(n):
    """A full timestamp option: the overflow count goes up."""
    return [v4opts(n, b"\x44\x08\x09\x00" + b"\0" * 4)]


@case("opt.v4.router-alert", "ipv4-options")
def _(n):
    return [v4opts(n, RA)]


@case("opt.v4.lsrr-to-router", "ipv4-options")
def _(n):
    """Loose source route naming the router as destination: source routing is off by default."""
    return [v4opts(n, b"\x83\x07\x04" + _a4(FAR4), dst=R4[0])]


@case("opt.v4.lsrr-transit", "ipv4-options")
def _(n):
    return [v4opts(n, b"\x83\x07\x08" + _a4(R4[0]), dst=FAR4)]


@case("opt.v4.ssrr-to-router", "ipv4-options")
def _(n):
    return [v4opts(n, b"\x89\x07\x04" + _a4(FAR4), dst=R4[0])]


@case("opt.v4.ssrr-transit", "ipv4-options")
def _(n):
    return [v4opts(n, b"\x89\x07\x08" + _a4(R4[0]), dst=FAR4)]


@case("opt.v4.security", "ipv4-options")
def _(n):
    """The old security option (130): not understood, carried along."""
    return [v4opts(n, b"\x82\x0b" + b"\0" * 9)]


@case("opt.v4.cipso", "ipv4-options")
def _(n):
    return [v4opts(n, b"\x86\x0a\x00\x00\x00\x01\x01\x04\x00\x01")]


@case("opt.v4.unknown-option", "ipv4-options")
def _(n):
    return [v4opts(n, b"\x9e\x04\x00\x00")]


@case("opt.v4.zero-length-option", "ipv4-options")
def _(n):
    return [v4opts(n, b"\x44\x00\x00\x00")]


@case("opt.v4.record-route-frag-needed", "ipv4-options")
def _(n):
    """Record route on a packet too big for the egress, DF set: fragmentation needed."""
    return [v4opts(n, RR9, size=1450 - 60 - 8, flags="DF")]


@case("opt.v4.record-route-to-router-echo", "ipv4-options")
def _(n):
    """Echo with record route to the router: the reply carries the option back."""
    return [v4opts(n, RR9, dst=R4[0], proto_layer=ICMP(type=8, id=n, seq=1))]


@case("opt.v4.router-alert-ttl1", "ipv4-options")
def _(n):
    return [v4opts(n, RA, ttl=1)]


# -- IPv6 extension headers -------------------------------------------------------------------
def _ext_case(id, chain, desc="", upper="udp", dst=FAR6, hlim=64, first_nh=None):
    def build(n):
        if upper == "udp":
            up, unh = udp_upper6(n, dst=dst), 17
        elif upper == "none":
            up, unh = bytes(pay(n, 16)), 59
        else:
            up, unh = bytes(pay(n, 16)), upper
        return [v6chain(n, chain, unh, up, dst=dst, hlim=hlim, first_nh=first_nh)]
    CASES.append(Case(id, "ipv6-extensions", build, desc))


PADN4 = b"\x01\x02\0\0"
RA6 = b"\x05\x02\x00\x00"
_ext_case("ext.v6.hbh-padn", [(0, opt_hdr())], "Hop-by-hop options with padding only: forwarded.")
_ext_case("ext.v6.hbh-router-alert", [(0, opt_hdr(RA6))], "Hop-by-hop router alert (MLD): forwarded.")
_ext_case("ext.v6.hbh-unknown-skip", [(0, opt_hdr(b"\x1e\x02\0\0"))], "Unknown option, action 00 (skip): forwarded.")
_ext_case("ext.v6.hbh-unknown-discard", [(0, opt_hdr(b"\x5e\x02\0\0"))], "Unknown option, action 01: discarded silently.")
_ext_case("ext.v6.hbh-unknown-icmp", [(0, opt_hdr(b"\x9e\x02\0\0"))], "Unknown option, action 10: parameter problem code 2.")
_ext_case("ext.v6.hbh-unknown-icmp-unless-mcast", [(0, opt_hdr(b"\xde\x02\0\0"))], "Unknown option, action 11: parameter problem code 2.")
_ext_case("ext.v6.hbh-jumbo-with-length", [(0, opt_hdr(b"\xc2\x04\x00\x01\x00\x00"))], "A jumbo payload option while the payload length is set: parameter problem.")
_ext_case("ext.v6.hbh-padn-too-long", [(0, lambda nh: ext(0, nh, b"\x01\x0c" + b"\0" * 12))], "PadN of 12 bytes (more than 7).")
_ext_case("ext.v6.hbh-nine-options", [(0, opt_hdr(*([b"\x1e\x00"] * 9)))], "Nine options (the kernel's default limit is 8).")
_ext_case("ext.v6.hbh-not-first", [(60, opt_hdr()), (0, opt_hdr())], "Hop-by-hop after destination options, in transit: forwarded.")
_ext_case("ext.v6.hbh-not-first-to-router", [(60, opt_hdr()), (0, opt_hdr())], "Hop-by-hop not first, to the router: parameter problem code 1.", dst=R6[0])
_ext_case("ext.v6.hbh-hlim1", [(0, opt_hdr(RA6))], "Hop-by-hop with hop limit 1: time exceeded.", hlim=1)
_ext_case("ext.v6.dstopt", [(60, opt_hdr())], "Destination options: forwarded.")
_ext_case("ext.v6.dstopt-unknown-icmp-transit", [(60, opt_hdr(b"\x9e\x02\0\0"))], "Destination options with an action-10 option, in transit: forwarded (only the destination reads them).")
_ext_case("ext.v6.dstopt-unknown-icmp-to-router", [(60, opt_hdr(b"\x9e\x02\0\0"))], "The same to the router: parameter problem code 2.", dst=R6[0])
_ext_case("ext.v6.rh0-sl0", [(43, rh(0, 0, ["2001:db8:100::9"]))], "Routing type 0, segments left 0, in transit: forwarded.")
_ext_case("ext.v6.rh0-sl1-transit", [(43, rh(0, 1, ["2001:db8:100::9"]))], "Routing type 0 with a segment left, not addressed to the router: forwarded.")
_ext_case("ext.v6.rh0-sl1-to-router", [(43, rh(0, 1, [FAR6]))], "Routing type 0 addressed to the router (RFC 5095): parameter problem code 0 pointing at the type.", dst=R6[0])
_ext_case("ext.v6.rh2-transit", [(43, rh(2, 1, ["2001:db8:100::9"]))], "Routing type 2 (mobile IPv6), in transit: forwarded.")
_ext_case("ext.v6.rh2-to-router", [(43, rh(2, 1, [FAR6]))], "Routing type 2 addressed to the router.", dst=R6[0])
_ext_case("ext.v6.rh4-transit", [(43, srh(1, [FAR6, "2001:db8:100::9"]))], "Segment routing header (type 4), in transit: forwarded.")
_ext_case("ext.v6.rh4-to-router", [(43, srh(1, [FAR6, R6[0]]))], "Segment routing header addressed to the router (seg6 off).", dst=R6[0])
_ext_case("ext.v6.rh-unknown-sl0-to-router", [(43, rh(200, 0, ["2001:db8:100::9"]))], "An unknown routing type with no segment left, to the router: ignored.", dst=R6[0])
_ext_case("ext.v6.rh-unknown-sl1-to-router", [(43, rh(200, 1, ["2001:db8:100::9"]))], "An unknown routing type with a segment left, to the router: parameter problem.", dst=R6[0])
_ext_case("ext.v6.unknown-next-header-transit", [(0, opt_hdr())], "Hop-by-hop then an unknown upper layer (253), in transit: forwarded.", upper=253)
_ext_case("ext.v6.no-next-header", [(60, opt_hdr())], "Destination options then no next header (59): forwarded.", upper="none")
_ext_case("ext.v6.long-chain", [(0, opt_hdr(b"\x1e\x0a" + b"\0" * 10)), (60, opt_hdr(PADN4)), (43, rh(0, 0, ["2001:db8:100::9"])),
                                (44, fraghdr(0)), (60, opt_hdr(b"\x1e\x10" + b"\0" * 16))],
          "Hop-by-hop, destination options, routing, fragment, destination options (well past the first cache line): forwarded.")
_ext_case("ext.v6.long-chain-hlim1", [(0, opt_hdr(b"\x1e\x0a" + b"\0" * 10)), (60, opt_hdr(PADN4)), (43, rh(0, 0, ["2001:db8:100::9"])),
                                      (60, opt_hdr(b"\x1e\x10" + b"\0" * 16))],
          "A long chain with hop limit 1: time exceeded quoting it.", hlim=1)
_ext_case("ext.v6.many-dstopts", [(60, opt_hdr())] * 8, "Eight destination options headers: forwarded.")
_ext_case("ext.v6.ah-transit", [(60, opt_hdr())], "Destination options then AH (51): forwarded.", upper=51)
_ext_case("ext.v6.truncated-ext", [(0, lambda nh: bytes([nh, 8]) + b"\x01\x04\0\0\0\0")],
          "A hop-by-hop header whose length runs past the packet: dropped.", upper="none")


# -- sources and destinations a router must not forward -----------------------------------------
def _addr4(id, src=None, dst=FAR4, desc="", l2=None, slow=False):
    CASES.append(Case(id, "addresses", lambda n: [(eth(l2) if l2 else eth()) / ip4(n, src=src, dst=dst) /
                                                  UDP(sport=40000, dport=33434) / pay(n)], desc, slow))


def _addr6(id, src=None, dst=FAR6, desc="", l2=None, slow=False):
    CASES.append(Case(id, "addresses", lambda n: [(eth(l2) if l2 else eth()) / ip6(n, src=src, dst=dst) /
                                                  UDP(sport=40000, dport=33434) / pay(n)], desc, slow))


_addr4("addr.v4.src-own-ingress", src=R4[0], desc="The router's own ingress address as source.")
_addr4("addr.v4.src-own-egress", src=R4[1], desc="The router's own far address as source (issue 21).")
_addr4("addr.v4.src-loopback", src="127.0.0.1")
_addr4("addr.v4.src-zero", src="0.0.0.0")
_addr4("addr.v4.src-this-network", src="0.1.2.3")
_addr4("addr.v4.src-multicast", src="224.0.0.5")
_addr4("addr.v4.src-limited-broadcast", src="255.255.255.255")
_addr4("addr.v4.src-ingress-broadcast", src="10.1.0.255", desc="The ingress subnet's broadcast address as source.")
_addr4("addr.v4.src-egress-broadcast", src="10.2.0.255")
_addr4("addr.v4.src-class-e", src="240.0.0.1")
_addr4("addr.v4.src-link-local", src="169.254.1.1")
_addr4("addr.v4.src-far-host", src=B4, desc="Host B's address arriving from host A (no uRPF by default): forwarded.")
_addr4("addr.v4.src-unrouted", src="192.0.2.200", desc="A source with no route back: forwarded without uRPF.")
_addr4("addr.v4.dst-limited-broadcast", dst="255.255.255.255", l2="ff:ff:ff:ff:ff:ff")
_addr4("addr.v4.dst-limited-broadcast-unicast-mac", dst="255.255.255.255")
_addr4("addr.v4.dst-directed-broadcast-far", dst="10.2.0.255", desc="The far subnet's broadcast address (bc_forwarding off).")
_addr4("addr.v4.dst-directed-broadcast-near", dst="10.1.0.255")
_addr4("addr.v4.dst-far-network-address", dst="10.2.0.0", slow=True,
       desc="The far subnet's network address: an ordinary on-link host to Linux, which nobody answers.")
_addr4("addr.v4.dst-loopback", dst="127.0.0.1")
_addr4("addr.v4.dst-zero", dst="0.0.0.0")
_addr4("addr.v4.dst-link-local-multicast", dst="224.0.0.5", l2="01:00:5e:00:00:05")
_addr4("addr.v4.dst-multicast", dst="239.1.2.3", l2="01:00:5e:01:02:03")
_addr4("addr.v4.dst-multicast-unicast-mac", dst="239.1.2.3")
_addr4("addr.v4.dst-link-local", dst="169.254.1.1")
_addr4("addr.v4.dst-far-host", dst=B4, desc="Host B itself (it answers port unreachable through the router).")
_addr6("addr.v6.src-own-ingress", src=R6[0])
_addr6("addr.v6.src-own-egress", src=R6[1])
_addr6("addr.v6.src-loopback", src="::1")
_addr6("addr.v6.src-unspecified", src="::")
_addr6("addr.v6.src-multicast", src="ff02::1")
_addr6("addr.v6.src-multicast-global", src="ff0e::1")
_addr6("addr.v6.src-link-local", src=A_LL, desc="A link-local source to a global destination: destination unreachable, beyond scope.")
_addr6("addr.v6.src-v4-mapped", src="::ffff:10.1.0.2")
_addr6("addr.v6.src-site-local", src="fec0::1")
_addr6("addr.v6.src-far-host", src=B6)
_addr6("addr.v6.dst-link-local", dst="fe80::99", slow=True)
_addr6("addr.v6.dst-link-local-multicast", dst="ff02::1", l2="33:33:00:00:00:01")
_addr6("addr.v6.dst-site-multicast", dst="ff05::2", l2="33:33:00:00:00:02")
_addr6("addr.v6.dst-global-multicast", dst="ff0e::1", l2="33:33:00:00:00:01")
_addr6("addr.v6.dst-multicast-unicast-mac", dst="ff0e::1")
_addr6("addr.v6.dst-multicast-scope-0", dst="ff00::1", l2="33:33:00:00:00:01")
_addr6("addr.v6.dst-unspecified", dst="::")
_addr6("addr.v6.dst-loopback", dst="::1")
_addr6("addr.v6.dst-v4-mapped", dst="::ffff:198.51.100.7")
_addr6("addr.v6.dst-far-host", dst=B6)


# -- echo to every address of the router ---------------------------------------------------------
def _echo4_case(id, dst, l2=None, src=None, ttl=64, size=16):
    CASES.append(Case(id, "echo", lambda n: [(eth(l2) if l2 else eth()) / ip4(n, dst=dst, src=src, ttl=ttl) /
                                             ICMP(type=8, id=n, seq=1) / pay(n, size)]))


def _echo6_case(id, dst, l2=None, src=None, hlim=64, size=16):
    CASES.append(Case(id, "echo", lambda n: [(eth(l2) if l2 else eth()) / ip6(n, dst=dst, src=src, hlim=hlim) /
                                             ICMPv6EchoRequest(id=n, seq=1) / pay(n, size)]))


_echo4_case("echo.v4.ingress-address", R4[0])
_echo4_case("echo.v4.far-address", R4[1])
_echo4_case("echo.v4.far-address-ttl1", R4[1], ttl=1)
_echo4_case("echo.v4.ingress-address-large", R4[0], size=1472 - 8)
_echo4_case("echo.v4.subnet-broadcast", "10.1.0.255", l2="ff:ff:ff:ff:ff:ff")
_echo4_case("echo.v4.limited-broadcast", "255.255.255.255", l2="ff:ff:ff:ff:ff:ff")
_echo4_case("echo.v4.all-hosts", "224.0.0.1", l2="01:00:5e:00:00:01")
_echo4_case("echo.v4.far-host", B4)
_echo6_case("echo.v6.ingress-address", R6[0])
_echo6_case("echo.v6.far-address", R6[1])
_echo6_case("echo.v6.far-address-hlim1", R6[1], hlim=1)
_echo6_case("echo.v6.ingress-address-large", R6[0], size=1452 - 8)
_echo6_case("echo.v6.link-local", R_LL[0], src=A_LL)
_echo6_case("echo.v6.link-local-from-global", R_LL[0])
_echo6_case("echo.v6.far-link-local", R_LL[1], src=A_LL)
_echo6_case("echo.v6.all-nodes", "ff02::1", l2="33:33:00:00:00:01", src=A_LL)
_echo6_case("echo.v6.all-routers", "ff02::2", l2="33:33:00:00:00:02", src=A_LL)
_echo6_case("echo.v6.subnet-router-anycast", "2001:db8:1::")
_echo6_case("echo.v6.far-subnet-router-anycast", "2001:db8:2::")
_echo6_case("echo.v6.far-host", B6)


@case("echo.v4.timestamp-request", "echo")
def _(n):
    return [eth() / ip4(n, dst=R4[0]) / ICMP(type=13, id=n, seq=1, ts_ori=1000)]


# -- TTL / hop limit ------------------------------------------------------------------------------
@case("ttl.v4.2", "ttl")
def _(n):
    """TTL 2: forwarded, arriving with TTL 1."""
    return [udp4(n, ttl=2)]


@case("ttl.v4.255", "ttl")
def _(n):
    return [udp4(n, ttl=255)]


@case("ttl.v4.2-echo", "ttl")
def _(n):
    return [echo4(n, ttl=2)]


@case("ttl.v4.2-far-host", "ttl")
def _(n):
    return [echo4(n, dst=B4, ttl=2)]


@case("ttl.v6.2", "ttl")
def _(n):
    return [udp6(n, hlim=2)]


@case("ttl.v6.255", "ttl")
def _(n):
    return [udp6(n, hlim=255)]


@case("ttl.v6.2-echo", "ttl")
def _(n):
    return [echo6(n, hlim=2)]


def _csum_target(n, target):
    """A TTL-64 UDP packet whose header checksum is `target` before the router's update: the
    edges of the incremental update (RFC 1141, 1624), where a router that adds 0x0100 without
    the end-around carry, or that yields 0xFFFF for 0x0000, leaves a wrong or odd checksum.
    The last two bytes of the source (in 10.64.0.0/16, clear of the per-case sources) and the
    DF bit are chosen to get there."""
    used = {t >> 8 for t in range(1024, 65536 // 4)} | {253}
    for df in (0, 0x40):
        base = bytearray(bytes(udp4(n, src="10.64.0.0")))[14:34]
        base[6] |= df
        base[10:12] = b"\0\0"
        folded = ~packets.csum(bytes(base)) & 0xFFFF
        need = ((~target & 0xFFFF) - folded) % 0xFFFF   # what the source's last 16 bits add
        for v in (need, need + 0xFFFF):
            if v > 0xFFFF or (v >> 8) in used:
                continue
            src = f"10.64.{v >> 8}.{v & 255}"
            p = udp4(n, src=src, flags="DF" if df else 0)
            if IP(bytes(p[IP])).chksum == target:
                return [p]
    raise ValueError(f"no header with checksum {target:#06x}")


for _t in (0xFEFF, 0xFF00, 0xFEFE, 0x0000):
    CASES.append(Case(f"ttl.v4.checksum-{_t:04x}", "ttl", (lambda t: lambda n: _csum_target(n, t))(_t),
                      "An IPv4 header checksum at an edge of the incremental update (RFC 1624)."))


# -- validity ---------------------------------------------------------------------------------------
def _mangle4(n, fn, **kw):
    b = bytearray(bytes(udp4(n, **kw)))
    fn(b)
    return [bytes(b)]


def _recsum(b):
    ihl = (b[14] & 15) * 4
    struct.pack_into("!H", b, 24, 0)
    struct.pack_into("!H", b, 24, packets.csum(bytes(b[14:14 + max(20, min(ihl, len(b) - 14))])))


@case("valid.v4.bad-header-checksum", "validity")
def _(n):
    return _mangle4(n, lambda b: b.__setitem__(slice(24, 26), bytes([b[24] ^ 0x55, b[25]])))


@case("valid.v4.bad-header-checksum-ttl1", "validity")
def _(n):
    return _mangle4(n, lambda b: b.__setitem__(slice(24, 26), bytes([b[24] ^ 0x55, b[25]])), ttl=1)


@case("valid.v4.bad-header-checksum-to-router", "validity")
def _(n):
    b = bytearray(bytes(echo4(n, dst=R4[0])))
    b[24] ^= 0x55
    return [bytes(b)]


@case("valid.v4.zero-header-checksum", "validity")
def _(n):
    return _mangle4(n, lambda b: b.__setitem__(slice(24, 26), b"\0\0"))


@case("valid.v4.total-length-short", "validity")
def _(n):
    """Total length below the header length."""
    def f(b):
        struct.pack_into("!H", b, 16, 19)
        _recsum(b)
    return _mangle4(n, f)


@case("valid.v4.total-length-long", "validity")
def _(n):
    def f(b):
        struct.pack_into("!H", b, 16, len(b) - 14 + 10)
        _recsum(b)
    return _mangle4(n, f)


@case("valid.v4.trailing-bytes", "validity")
def _(n):
    """A frame longer than the packet's total length: the router forwards the packet, not the trailer."""
    return [bytes(udp4(n)) + b"\xee" * 12]


@case("valid.v4.ihl-4", "validity")
def _(n):
    def f(b):
        b[14] = 0x44
        _recsum(b)
    return _mangle4(n, f)


@case("valid.v4.ihl-past-packet", "validity")
def _(n):
    """IHL 15 while the packet is 44 bytes: the header would run into the payload."""
    def f(b):
        b[14] = 0x4F
    return _mangle4(n, f)


@case("valid.v4.version-5", "validity")
def _(n):
    def f(b):
        b[14] = 0x55
        _recsum(b)
    return _mangle4(n, f)


@case("valid.v4.version-6-in-ipv4-frame", "validity")
def _(n):
    b = bytearray(bytes(udp6(n)))
    b[12:14] = b"\x08\x00"
    return [bytes(b)]


@case("valid.v4.truncated-header", "validity")
def _(n):
    return [bytes(udp4(n))[:14 + 16]]


@case("valid.v4.reserved-flag", "validity")
def _(n):
    """The reserved ("evil") flag bit: forwarded unchanged."""
    return [udp4(n, flags="evil")]


@case("valid.v4.ecn-ce-dscp-ef", "validity")
def _(n):
    return [udp4(n, tos=0xBB)]


@case("valid.v4.udp-bad-checksum", "validity")
def _(n):
    """A wrong UDP checksum is not the router's business: forwarded."""
    p = udp4(n)
    p[UDP].chksum = 0x1234
    return [p]


@case("valid.v4.udp-zero-checksum", "validity")
def _(n):
    p = udp4(n)
    p[UDP].chksum = 0
    return [p]


@case("valid.v4.udp-bad-length", "validity")
def _(n):
    p = udp4(n)
    p[UDP].len = 200
    return [p]


@case("valid.v4.tcp-bad-checksum", "validity")
def _(n):
    p = tcp4(n, flags="A", size=8)
    p[TCP].chksum = 0x1234
    return [p]


@case("valid.v4.tcp-data-offset-past-end", "validity")
def _(n):
    p = tcp4(n, flags="A")
    p[TCP].dataofs = 15
    return [p]


@case("valid.v4.vlan-tagged", "validity")
def _(n):
    """An 802.1Q-tagged frame (VLAN 5) on an untagged port: not the router's."""
    b = bytes(udp4(n))
    return [b[:12] + b"\x81\x00\x00\x05" + b[12:]]


@case("valid.v6.payload-length-short", "validity")
def _(n):
    """Payload length below what the frame carries: the router trims to it."""
    b = bytearray(bytes(udp6(n)))
    struct.pack_into("!H", b, 18, struct.unpack_from("!H", b, 18)[0] - 4)
    return [bytes(b)]


@case("valid.v6.payload-length-long", "validity")
def _(n):
    b = bytearray(bytes(udp6(n)))
    struct.pack_into("!H", b, 18, struct.unpack_from("!H", b, 18)[0] + 20)
    return [bytes(b)]


@case("valid.v6.trailing-bytes", "validity")
def _(n):
    return [bytes(udp6(n)) + b"\xee" * 12]


@case("valid.v6.version-4-in-ipv6-frame", "validity")
def _(n):
    b = bytearray(bytes(udp6(n)))
    b[14] = (b[14] & 0x0F) | 0x40
    return [bytes(b)]


@case("valid.v6.truncated-header", "validity")
def _(n):
    return [bytes(udp6(n))[:14 + 30]]


@case("valid.v6.udp-zero-checksum", "validity")
def _(n):
    p = udp6(n)
    p[UDP].chksum = 0
    return [p]


@case("valid.v6.traffic-class-flow", "validity")
def _(n):
    return [udp6(n, tc=0xBB)]


@case("valid.v6.payload-length-zero-no-jumbo", "validity")
def _(n):
    b = bytearray(bytes(udp6(n)))
    struct.pack_into("!H", b, 18, 0)
    return [bytes(b)]


# -- plain forwarding (the baseline every router must get right) -----------------------------------
@case("fwd.v4.udp", "forwarding")
def _(n):
    return [udp4(n)]


@case("fwd.v4.tcp-syn", "forwarding")
def _(n):
    return [tcp4(n)]


@case("fwd.v4.echo", "forwarding")
def _(n):
    return [echo4(n)]


@case("fwd.v4.udp-1400", "forwarding")
def _(n):
    return [udp4(n, size=1400 - 28)]


@case("fwd.v4.udp-min", "forwarding")
def _(n):
    """A packet whose frame is below the Ethernet minimum (no padding on veth)."""
    return [eth() / ip4(n) / UDP(sport=40000, dport=33434)]


@case("fwd.v4.gre", "forwarding")
def _(n):
    return [eth() / ip4(n, proto=47) / pay(n, 24)]


@case("fwd.v6.udp", "forwarding")
def _(n):
    return [udp6(n)]


@case("fwd.v6.tcp-syn", "forwarding")
def _(n):
    return [tcp6(n)]


@case("fwd.v6.echo", "forwarding")
def _(n):
    return [echo6(n)]


@case("fwd.v6.udp-1400", "forwarding")
def _(n):
    return [udp6(n, size=1400 - 48)]


@case("fwd.v6.flow-label-only", "forwarding")
def _(n):
    return [eth() / ip6(n, nh=59)]


def by_id():
    return {c.id: c for c in CASES}


assert len({c.id for c in CASES}) == len(CASES), "case ids are unique"


# -- unicast reverse-path forwarding (run in the default profile, uRPF off, and again with the
#    ingress interface in strict and in loose mode: Linux's rp_filter 1 and 2, pearld's urpf:)
def _urpf(id, src, dst=FAR6, ttl=None, echo=False, desc=""):
    v6 = ":" in (src if isinstance(src, str) else src(1))

    def build(n):
        s = src(n) if callable(src) else src
        if v6:
            d = R6[0] if echo else FAR6
            hdr = ip6(n, dst=d, src=s, **({"hlim": ttl} if ttl is not None else {}))
            up = ICMPv6EchoRequest(id=n, seq=1) if echo else UDP(sport=40000, dport=33434)
        else:
            d = R4[0] if echo else FAR4
            hdr = ip4(n, dst=d, src=s, **({"ttl": ttl} if ttl is not None else {}))
            up = ICMP(type=8, id=n, seq=1) if echo else UDP(sport=40000, dport=33434)
        return [eth() / hdr / up / pay(n)]
    CASES.append(Case(id, "urpf", build, desc))


for _v, _own, _spoof, _in, _out, _far, _none, _bh, _pro in (
        ("v4", src4, spoof4, "10.1.0.77", "10.2.0.77", B4, "100.64.0.9", "192.0.2.9", "203.0.113.9"),
        ("v6", src6, spoof6, "2001:db8:1::77", "2001:db8:2::77", B6, "2001:db8:ffff::9", "2001:db8:bad::9",
         "2001:db8:dead::9")):
    _urpf(f"urpf.{_v}.src-behind-ingress", _own, desc="A source routed back through the ingress: passes strict and loose.")
    _urpf(f"urpf.{_v}.src-ingress-subnet", _in, desc="A source in the ingress subnet.")
    _urpf(f"urpf.{_v}.src-beyond-egress", _spoof, desc="A source routed through the other interface: strict drops, loose passes.")
    _urpf(f"urpf.{_v}.src-egress-subnet", _out)
    _urpf(f"urpf.{_v}.src-far-host", _far)
    _urpf(f"urpf.{_v}.src-no-route", _none, desc="A source with no route: strict and loose drop.")
    _urpf(f"urpf.{_v}.src-blackhole", _bh, desc="A source whose route is a blackhole.")
    _urpf(f"urpf.{_v}.src-prohibit", _pro, desc="A source whose route is `prohibit`.")
    _urpf(f"urpf.{_v}.src-beyond-egress-ttl1", _spoof, ttl=1, desc="A refused source with TTL 1: dropped before any error.")
    _urpf(f"urpf.{_v}.src-beyond-egress-to-router", _spoof, echo=True, desc="Echo to the router from a refused source.")
    _urpf(f"urpf.{_v}.src-no-route-to-router", _none, echo=True)
