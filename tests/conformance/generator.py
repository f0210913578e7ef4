"""A seeded mutator of valid headers: it starts from a valid packet of one of a dozen templates
(IPv4 and IPv6; UDP, TCP, ICMP; options, extension header chains, fragments) and changes one
field, or two to four fields at once, to a value drawn from that field's interesting values
(boundaries, special addresses, reserved bits) or at random. Lengths and checksums the
mutation did not touch are recomputed, so each packet is wrong in the way its description
says and no other. The same seed gives the same packets, byte for byte.

The tag fields (IPv4 identification, IPv6 flow label, ICMP echo identifier, TCP source port)
are never mutated: they name the packet's case in what comes back.
"""

import ipaddress
import random
import socket
import struct
from dataclasses import dataclass, field

from . import packets
from .topo import A_LL, B4, B6, HOST_A_MAC, R4, R6, R_LL, R_MAC, spoof4, spoof6, src4, src6

FAR4, FAR6 = "198.51.100.7", "2001:db8:100::7"


def a4(s):
    return socket.inet_aton(s)


def a6(s):
    return socket.inet_pton(socket.AF_INET6, s)


# -- a small serializer that leaves alone whatever field was set by hand --------------------------
@dataclass
class L4:
    kind: str                      # udp, tcp, icmp, icmp6, raw
    sport: int = 40000
    dport: int = 33434
    length: int = None             # UDP length
    csum: int = None
    seq: int = 1
    ack: int = 0
    doff: int = None
    flags: int = 0x02
    win: int = 65535
    urg: int = 0
    topts: bytes = b""
    type: int = 8
    code: int = 0
    rest: bytes = b"\0\0\0\0"
    data: bytes = b""

    def proto(self):
        return {"udp": 17, "tcp": 6, "icmp": 1, "icmp6": 58}.get(self.kind, 253)

    def build(self, pseudo):
        """`pseudo(length, proto)` → pseudo-header bytes (b"" for ICMPv4)."""
        if self.kind == "udp":
            ln = 8 + len(self.data) if self.length is None else self.length
            h = struct.pack("!HHHH", self.sport, self.dport, ln & 0xFFFF, 0) + self.data
            c = packets.csum(pseudo(len(h), 17) + h) or 0xFFFF
        elif self.kind == "tcp":
            opts = self.topts + b"\0" * (-len(self.topts) % 4)
            doff = (20 + len(opts)) // 4 if self.doff is None else self.doff
            h = struct.pack("!HHIIBBHHH", self.sport, self.dport, self.seq, self.ack, (doff & 15) << 4,
                            self.flags & 0xFF, self.win, 0, self.urg) + opts + self.data
            c = packets.csum(pseudo(len(h), 6) + h)
        elif self.kind in ("icmp", "icmp6"):
            h = struct.pack("!BBH", self.type, self.code, 0) + self.rest + self.data
            c = packets.csum((pseudo(len(h), 58) if self.kind == "icmp6" else b"") + h)
        else:
            return self.data
        at = {"udp": 6, "tcp": 16, "icmp": 2, "icmp6": 2}[self.kind]
        c = c if self.csum is None else self.csum
        return h[:at] + struct.pack("!H", c & 0xFFFF) + h[at + 2:]


@dataclass
class V4:
    src: bytes
    dst: bytes
    l4: L4
    id: int = 0
    version: int = 4
    ihl: int = None
    tos: int = 0
    tot_len: int = None
    flags: int = 0                 # 3 bits: reserved, DF, MF
    frag: int = 0
    ttl: int = 64
    proto: int = None
    csum: int = None
    options: bytes = b""

    def build(self):
        opts = self.options + b"\0" * (-len(self.options) % 4)
        body = self.l4.build(lambda ln, p: self.src + self.dst + struct.pack("!BBH", 0, p, ln))
        ihl = 5 + len(opts) // 4 if self.ihl is None else self.ihl
        tot = 20 + len(opts) + len(body) if self.tot_len is None else self.tot_len
        proto = self.l4.proto() if self.proto is None else self.proto
        h = struct.pack("!BBHHHBBH4s4s", (self.version & 15) << 4 | (ihl & 15), self.tos, tot & 0xFFFF, self.id,
                        (self.flags & 7) << 13 | (self.frag & 0x1FFF), self.ttl, proto, 0, self.src, self.dst) + opts
        c = packets.csum(h) if self.csum is None else self.csum
        return h[:10] + struct.pack("!H", c & 0xFFFF) + h[12:] + body, 0x0800


@dataclass
class V6:
    src: bytes
    dst: bytes
    l4: L4
    fl: int = 0
    version: int = 6
    tc: int = 0
    plen: int = None
    nh: int = None
    hlim: int = 64
    exts: list = field(default_factory=list)   # [(type, body-without-next-header-and-length)] or (type, raw)

    def build(self):
        upper = self.l4.build(lambda ln, p: self.src + self.dst + struct.pack("!IxxxB", ln, p))
        nh = self.l4.proto()
        body = upper
        for typ, content in reversed(self.exts):
            if typ == 44:
                body = bytes([nh, 0]) + content + body
            elif isinstance(content, tuple):          # (raw header bytes after the next-header byte)
                body = bytes([nh]) + content[0] + body
            else:
                pad = content + b"\0" * ((-(len(content) + 2)) % 8)
                body = bytes([nh, (len(pad) + 2) // 8 - 1]) + pad + body
            nh = typ
        nh = nh if self.nh is None else self.nh
        plen = len(body) if self.plen is None else self.plen
        h = struct.pack("!IHBB16s16s", (self.version & 15) << 28 | (self.tc & 0xFF) << 20 | (self.fl & 0xFFFFF),
                        plen & 0xFFFF, nh, self.hlim, self.src, self.dst)
        return h + body, 0x86DD


# -- value domains ------------------------------------------------------------------------------
SRC4 = ["own", "own", "own", "spoof", B4, R4[0], R4[1], "0.0.0.0", "127.0.0.1", "224.0.0.1", "239.1.2.3", "255.255.255.255",
        "10.1.0.255", "10.2.0.255", "240.0.0.1", "169.254.1.1", "192.0.2.1", "100.64.0.1", "0.1.2.3"]
DST4 = [FAR4, FAR4, FAR4, "198.51.100.200", B4, R4[0], R4[1], "10.2.0.255", "10.1.0.255", "10.2.0.0",
        "255.255.255.255", "0.0.0.0", "127.0.0.1", "224.0.0.1", "224.0.0.5", "239.1.2.3", "240.0.0.1",
        "203.0.113.7", "203.0.113.200", "192.0.2.7", "100.64.0.1", "169.254.1.1"]
SRC6 = ["own", "own", "own", "spoof", A_LL, "::", "::1", "ff02::1", "ff0e::1", R6[0], R6[1], B6, "fe80::99", "::ffff:10.1.0.2",
        "fec0::1", "64:ff9b::a01:2"]
DST6 = [FAR6, FAR6, FAR6, "2001:db8:100::200", B6, R6[0], R6[1], R_LL[0], "ff02::1", "ff02::2", "ff05::2",
        "ff0e::1", "ff01::1", "ff00::1", "::", "::1", "fe80::99", "2001:db8:dead::1", "2001:db8:beef::1",
        "2001:db8:bad::1", "2001:db8:ffff::1", "2001:db8:1::", "2001:db8:2::", "::ffff:198.51.100.7"]
ONLINK4 = [ipaddress.ip_network("10.1.0.0/24"), ipaddress.ip_network("10.2.0.0/24")]
ONLINK6 = [ipaddress.ip_network("2001:db8:1::/64"), ipaddress.ip_network("2001:db8:2::/64")]
KNOWN4 = {ipaddress.ip_address(x) for x in SRC4 + DST4 + ["10.1.0.0"] if x[0].isdigit()}
KNOWN6 = {ipaddress.ip_address(x) for x in SRC6 + DST6 if x not in ("own", "spoof")}

V4_OPTIONS = [
    b"\x01", b"\x00", b"\x01\x01\x01\x00", b"\x07\x07\x04" + b"\0" * 4, b"\x07\x27\x04" + b"\0" * 36,
    b"\x07\x07\x03\0\0\0\0", b"\x07\x07\x08" + a4("10.9.9.9"), b"\x44\x0c\x05\x00" + b"\0" * 8,
    b"\x44\x0c\x05\x01" + b"\0" * 8, b"\x44\x0c\x05\x03" + a4(R4[1]) + b"\0" * 4, b"\x44\x08\x09\x00" + b"\0" * 4,
    b"\x94\x04\x00\x00", b"\x94\x04\x00\x01", b"\x83\x07\x04" + a4(FAR4), b"\x83\x07\x08" + a4(R4[0]),
    b"\x89\x07\x04" + a4(FAR4), b"\x82\x0b" + b"\0" * 9, b"\x86\x06\0\0\0\x01", b"\x9e\x04\0\0", b"\x44\x00",
    b"\x07\x01", b"\x07\x30\x04", b"\x19\x04\0\0", b"\x88\x04\x00\x01",
]
V6_TLVS = [b"\x00", b"\x01\x00", b"\x01\x04\0\0\0\0", b"\x05\x02\x00\x00", b"\x05\x02\x00\x01", b"\x1e\x02\0\0",
           b"\x5e\x02\0\0", b"\x9e\x02\0\0", b"\xde\x02\0\0", b"\xc2\x04\x00\x01\x00\x00", b"\x01\x0c" + b"\0" * 12,
           b"\x26\x01\x00", b"\x63\x04\0\0\0\0", b"\x8b\x02\0\0"]


def _ext_options(rng):
    return b"".join(rng.choice(V6_TLVS) for _ in range(rng.randint(0, 4)))


def _routing(rng):
    rtype = rng.choice([0, 0, 2, 3, 4, 4, 5, 200, 253])
    sl = rng.choice([0, 0, 1, 2, 255])
    if rtype == 4:
        segs = [rng.choice([FAR6, R6[0], "2001:db8:100::9", "::1"]) for _ in range(rng.randint(1, 3))]
        return bytes([4, sl, len(segs) - 1, 0, 0, 0]) + b"".join(a6(s) for s in segs)
    addrs = [rng.choice([FAR6, "2001:db8:100::9", R6[0], "ff02::1"]) for _ in range(rng.randint(0, 3))]
    return bytes([rtype, sl, 0, 0, 0, 0]) + b"".join(a6(s) for s in addrs)


def _fragment(rng, tag):
    offset = rng.choice([0, 0, 1, 8, 185, 8191, rng.randint(0, 8191)])
    m = rng.choice([0, 1])
    return struct.pack("!HI", offset << 3 | m, 0x30000 + tag)


# -- templates ----------------------------------------------------------------------------------
def payload(tag, size):
    m = packets.marker(tag)
    return (m * (size // len(m) + 1))[:max(size, len(m))]


def template(rng, tag, name):
    size = rng.choice([16, 16, 32, 64, 200])
    data = payload(tag, size)
    if name.startswith("v4"):
        if name == "v4-udp":
            l4 = L4("udp", data=data)
        elif name == "v4-tcp":
            l4 = L4("tcp", sport=tag, dport=80, flags=0x02, data=b"")
        elif name == "v4-icmp":
            l4 = L4("icmp", type=8, rest=struct.pack("!HH", tag, 1), data=data)
        elif name == "v4-options":
            l4 = L4("udp", data=data)
        else:  # v4-fragment
            l4 = L4("raw", data=data)
        p = V4(src=a4(src4(tag)), dst=a4(FAR4), l4=l4, id=tag)
        if name == "v4-options":
            p.options = rng.choice(V4_OPTIONS)
        if name == "v4-fragment":
            p.proto, p.flags, p.frag = 17, rng.choice([1, 0]), rng.choice([0, 3, 10, 185])
        return p
    if name == "v6-udp":
        l4 = L4("udp", data=data)
    elif name == "v6-tcp":
        l4 = L4("tcp", sport=tag, dport=80, data=b"")
    elif name == "v6-icmp":
        l4 = L4("icmp6", type=128, rest=struct.pack("!HH", tag, 1), data=data)
    else:
        l4 = L4("udp", data=data)
    p = V6(src=a6(src6(tag)), dst=a6(FAR6), l4=l4, fl=tag)
    if name == "v6-ext":
        for _ in range(rng.randint(1, 4)):
            p.exts.append(_random_ext(rng, tag))
    if name == "v6-fragment":
        p.exts.append((44, _fragment(rng, tag)))
    return p


def _random_ext(rng, tag):
    t = rng.choice([0, 60, 60, 43, 44])
    if t == 43:
        return (43, _routing(rng))
    if t == 44:
        return (44, _fragment(rng, tag))
    return (t, _ext_options(rng))


TEMPLATES = ["v4-udp", "v4-udp", "v4-tcp", "v4-icmp", "v4-options", "v4-fragment",
             "v6-udp", "v6-udp", "v6-tcp", "v6-icmp", "v6-ext", "v6-ext", "v6-fragment"]


# -- mutations: (name, applies to v4/v6/both, function(rng, packet) -> description) --------------
def _pick(rng, values, random_value):
    return rng.choice(values) if rng.random() < 0.75 else random_value()


def _addr(rng, pool, random_value, own, spoof, known, onlink, far, tag):
    v = _pick(rng, pool, random_value)
    if v == "own":
        return own(tag)
    if v == "spoof":
        return spoof(tag)
    ip = ipaddress.ip_address(v)
    if ip not in known and any(ip in n for n in onlink):
        v = far         # unresolved on-link neighbours would wait for ARP/ND: left to named cases
    return v


def _addr4(rng, pool, tag=0):
    random_value = lambda: str(ipaddress.IPv4Address(rng.getrandbits(32)))  # noqa: E731
    return _addr(rng, pool, random_value, src4, spoof4, KNOWN4, ONLINK4, FAR4, tag)


def _addr6(rng, pool, tag=0):
    random_value = lambda: str(ipaddress.IPv6Address((0x2000 << 112) | rng.getrandbits(125) >> 3))  # noqa: E731
    return _addr(rng, pool, random_value, src6, spoof6, KNOWN6, ONLINK6, FAR6, tag)


def m_v4(rng, p):
    f = rng.choice(["version", "ihl", "tos", "tot_len", "flags", "frag", "ttl", "proto", "csum", "src", "dst",
                    "options", "ttl", "dst", "src"])
    if f == "version":
        p.version = rng.choice([0, 5, 6, 15, rng.randint(0, 15)])
    elif f == "ihl":
        p.ihl = rng.choice([0, 1, 4, 6, 7, 15, rng.randint(0, 15)])
    elif f == "tos":
        p.tos = rng.choice([0x01, 0x02, 0x03, 0xB8, 0xFC, 0xFF, rng.randint(0, 255)])
    elif f == "tot_len":
        base = len(p.build()[0])
        p.tot_len = rng.choice([0, 19, 20, 21, base - 1, base + 1, base + 100, 576, 65535, rng.randint(0, 65535)])
    elif f == "flags":
        p.flags = rng.choice([0, 1, 2, 3, 4, 5, 6, 7])
    elif f == "frag":
        p.frag = rng.choice([1, 2, 3, 185, 8190, 8191, rng.randint(0, 8191)])
    elif f == "ttl":
        p.ttl = rng.choice([0, 1, 1, 2, 3, 63, 128, 254, 255, rng.randint(0, 255)])
    elif f == "proto":
        p.proto = rng.choice([0, 1, 2, 4, 6, 17, 41, 47, 50, 51, 58, 89, 103, 112, 132, 253, 255])
    elif f == "csum":
        good = packets.csum(p.build()[0][:(p.ihl or 5 + len(p.options + b"\0" * (-len(p.options) % 4)) // 4) * 4])
        p.csum = rng.choice([0, 0xFFFF, rng.randint(0, 0xFFFF), 0x1234])
        if good == p.csum:
            p.csum ^= 0x8001
    elif f == "src":
        p.src = a4(_addr4(rng, SRC4, p.id))
    elif f == "dst":
        p.dst = a4(_addr4(rng, DST4))
    elif f == "options":
        n = rng.randint(1, 3)
        p.options = b"".join(rng.choice(V4_OPTIONS) for _ in range(n))[:40]
        if rng.random() < 0.2:
            p.options = bytes(rng.getrandbits(8) for _ in range(rng.choice([4, 8, 12, 40])))
    return f"ip.{f}={_show(getattr(p, f))}"


def m_v6(rng, p):
    f = rng.choice(["version", "tc", "plen", "nh", "hlim", "src", "dst", "exts", "hlim", "dst", "src", "exts"])
    if f == "version":
        p.version = rng.choice([0, 4, 5, 7, 15])
    elif f == "tc":
        p.tc = rng.choice([0x01, 0x03, 0xB8, 0xFF, rng.randint(0, 255)])
    elif f == "plen":
        base = len(p.build()[0]) - 40
        p.plen = rng.choice([0, 1, 7, 8, base - 1, base + 1, base + 100, 65535, rng.randint(0, 65535)])
    elif f == "nh":
        p.nh = rng.choice([0, 6, 17, 58, 43, 44, 59, 60, 135, 139, 140, 50, 51, 253, 255, rng.randint(0, 255)])
    elif f == "hlim":
        p.hlim = rng.choice([0, 1, 1, 2, 3, 63, 128, 255, rng.randint(0, 255)])
    elif f == "src":
        p.src = a6(_addr6(rng, SRC6, p.fl))
    elif f == "dst":
        p.dst = a6(_addr6(rng, DST6))
    elif f == "exts":
        action = rng.choice(["insert", "insert", "drop", "mangle"]) if p.exts else "insert"
        if action == "insert":
            p.exts.insert(rng.randint(0, len(p.exts)), _random_ext(rng, p.fl))
        elif action == "drop":
            p.exts.pop(rng.randrange(len(p.exts)))
        else:
            i = rng.randrange(len(p.exts))
            t, content = p.exts[i]
            if t == 44 or isinstance(content, tuple):
                raw = bytearray(content if t == 44 else content[0])
            else:
                padded = content + b"\0" * ((-(len(content) + 2)) % 8)
                raw = bytearray(bytes([(len(padded) + 2) // 8 - 1]) + padded)
            if raw:
                j = rng.randrange(len(raw))
                raw[j] = rng.choice([0, 1, 0xFF, rng.getrandbits(8)])
            p.exts[i] = (t, bytes(raw)) if t == 44 else (t, (bytes(raw),))
        return f"ipv6.exts.{action}={[t for t, _ in p.exts]}"
    return f"ipv6.{f}={_show(getattr(p, f))}"


def m_l4(rng, p):
    l4 = p.l4
    if l4.kind == "udp":
        f = rng.choice(["length", "csum", "sport", "dport"])
        if f == "length":
            l4.length = rng.choice([0, 7, 8, 9, len(l4.data) + 7, len(l4.data) + 9, 65535])
        elif f == "csum":
            l4.csum = rng.choice([0, 0xFFFF, 0x1234])
        elif f == "dport":
            l4.dport = rng.choice([0, 7, 53, 33434, 65535])
        else:
            l4.sport = rng.choice([0, 53, 65535])
    elif l4.kind == "tcp":
        f = rng.choice(["flags", "doff", "csum", "dport"])
        if f == "flags":
            l4.flags = rng.choice([0, 0x01, 0x04, 0x10, 0x12, 0x14, 0x29, 0x3F, 0xFF, rng.getrandbits(8)])
        elif f == "doff":
            l4.doff = rng.choice([0, 1, 4, 6, 15])
        elif f == "csum":
            l4.csum = rng.choice([0, 0xFFFF, 0x1234])
        else:
            l4.dport = rng.choice([0, 22, 179, 65535])
    elif l4.kind in ("icmp", "icmp6"):
        f = rng.choice(["type", "code", "csum"])
        if f == "type":
            choices = [0, 3, 5, 8, 11, 12, 13, 15, 17, 40, 255] if l4.kind == "icmp" else \
                [1, 2, 3, 4, 127, 128, 129, 130, 133, 134, 135, 136, 137, 139, 255]
            l4.type = rng.choice(choices)
            if l4.type in (3, 5, 11, 12, 1, 2, 3, 4) and rng.random() < 0.7:
                # an error: quote an invented packet carrying the same tag
                l4.rest = b"\0\0\0\0"
                l4.data = _quoted(p)
        elif f == "code":
            l4.code = rng.choice([1, 4, 13, 255])
        else:
            l4.csum = rng.choice([0, 0xFFFF, 0x1234])
    else:
        f = "data"
        l4.data = l4.data[:rng.choice([0, 1, 8])] if rng.random() < 0.5 else l4.data * 2
    return f"l4.{f}={_show(getattr(l4, f))}"


def _quoted(p):
    if isinstance(p, V4):
        inner = V4(src=p.dst, dst=p.src, l4=L4("udp", sport=33434, dport=40000, data=b"x" * 4), id=p.id, ttl=1)
    else:
        inner = V6(src=p.dst, dst=p.src, l4=L4("udp", sport=33434, dport=40000, data=b"x" * 4), fl=p.fl, hlim=1)
    return inner.build()[0]


def m_size(rng, p):
    n = rng.choice([0, 1, 1372, 1373, 1400, 1452, rng.randint(0, 1440)])
    p.l4.data = payload(p.id if isinstance(p, V4) else p.fl, n) if n else b""
    return f"payload={n}B"


MUTATORS_V4 = [m_v4] * 6 + [m_l4] * 2 + [m_size]
MUTATORS_V6 = [m_v6] * 6 + [m_l4] * 2 + [m_size]
POST = ["truncate", "trailer", "l2-broadcast", "l2-multicast", "l2-other", "ethertype"]


def _show(v):
    if isinstance(v, bytes):
        if len(v) == 4:
            return socket.inet_ntoa(v)
        if len(v) == 16:
            return socket.inet_ntop(socket.AF_INET6, v)
        return v.hex() if len(v) <= 12 else v[:12].hex() + "…"
    if isinstance(v, int):
        return str(v)
    return str(v)


@dataclass
class Generated:
    id: str
    desc: str
    tag: int
    frame: bytes


def generate(seed, count, first_tag):
    """`count` mutated packets from `seed`, tagged first_tag, first_tag + 1, …"""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        tag = first_tag + i
        name = rng.choice(TEMPLATES)
        p = template(rng, tag, name)
        k = rng.choices([1, 2, 3, 4], weights=[55, 30, 10, 5])[0]
        muts = MUTATORS_V4 if isinstance(p, V4) else MUTATORS_V6
        desc = [name]
        for _ in range(k):
            desc.append(rng.choice(muts)(rng, p))
        l3, et = p.build()
        l3 = l3[:1500]
        eth_dst = packets.mac_bytes(R_MAC[0])
        if rng.random() < 0.08:
            post = rng.choice(POST)
            desc.append(post)
            if post == "truncate":
                l3 = l3[:rng.randint(0, max(0, len(l3) - 1))]
            elif post == "trailer":
                l3 = l3 + bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 6, 20])))
                l3 = l3[:1500]
            elif post == "l2-broadcast":
                eth_dst = b"\xff" * 6
            elif post == "l2-multicast":
                eth_dst = b"\x01\x00\x5e\x00\x00\x01" if et == 0x0800 else b"\x33\x33\x00\x00\x00\x01"
            elif post == "l2-other":
                eth_dst = b"\x02\x99\x00\x00\x00\x09"
            else:
                et = 0x86DD if et == 0x0800 else 0x0800
        frame = eth_dst + packets.mac_bytes(HOST_A_MAC) + struct.pack("!H", et) + l3
        out.append(Generated(f"gen.{seed}.{i:05d}", " ".join(desc), tag, frame))
    return out
