"""Raw frame handling shared by the harness: which case a captured frame belongs to (its key),
how it is normalised for comparison, how it is described in a report, and the checks a
forwarded frame must pass (TTL/hop limit −1, header checksum, MACs).

Keys. Every case stamps its tag (a number unique within one run of a topology) where a router
keeps it and an ICMP error quotes it: the IPv4 identification, the IPv6 flow label, the ICMP
echo identifier, the TCP source port. A captured frame is the router's (or host B's) answer to
the case whose tag it quotes, or a forwarded copy of the case's own frame.
"""

import ipaddress
import struct

from .topo import B4, B6, B_LL, HOST_A_MAC, HOST_B_MAC, R_MAC, ROUTER_ADDRS

ICMP4_ERRORS = {3, 4, 5, 11, 12}
ICMP4_REPLIES = {0, 14, 16, 18}
ICMP6_ERRORS = {1, 2, 3, 4}
ICMP6_REPLIES = {129}
RESPONDERS = {ipaddress.ip_address(a) for a in ROUTER_ADDRS | {B4, B6, B_LL}}


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s >> 16) + (s & 0xFFFF)
    return ~s & 0xFFFF


def mac_bytes(m):
    return bytes(int(x, 16) for x in m.split(":"))


def mac_text(b):
    return ":".join(f"{x:02x}" for x in b)


MAC_NAMES = {mac_bytes(HOST_A_MAC): "A", mac_bytes(HOST_B_MAC): "B", mac_bytes(R_MAC[0]): "R.eth0",
             mac_bytes(R_MAC[1]): "R.eth1"}


def mac_name(b):
    return MAC_NAMES.get(bytes(b), mac_text(b))


def ip4_text(b):
    return str(ipaddress.IPv4Address(bytes(b)))


def ip6_text(b):
    return str(ipaddress.IPv6Address(bytes(b)))


def ipv4_header_ok(l3):
    if len(l3) < 20:
        return False
    ihl = (l3[0] & 15) * 4
    return ihl >= 20 and len(l3) >= ihl and csum(l3[:ihl]) == 0


def v6_ext_walk(l3):
    """(upper-layer protocol, its offset) after IPv6 extension headers (best effort)."""
    nh, off = l3[6], 40
    for _ in range(16):
        if nh in (0, 43, 60, 135, 139, 140) and len(l3) >= off + 2:
            nh, off = l3[off], off + (l3[off + 1] + 1) * 8
        elif nh == 44 and len(l3) >= off + 8:
            frag_off = struct.unpack_from("!H", l3, off + 2)[0] & 0xFFF8
            nh, off = l3[off], off + 8
            if frag_off:
                return nh, None
        elif nh == 51 and len(l3) >= off + 2:
            nh, off = l3[off], off + (l3[off + 1] + 2) * 4
        else:
            return nh, off
    return nh, off


def frame_keys(frame):
    """The keys under which this frame may belong to a case, best first."""
    if len(frame) < 14:
        return []
    et = struct.unpack_from("!H", frame, 12)[0]
    l3 = frame[14:]
    if et == 0x0800 and 6 <= len(l3) < 20:
        return [("4", struct.unpack_from("!H", l3, 4)[0])]  # a truncated header still names it
    if et == 0x86DD and 4 <= len(l3) < 40:
        return [("6", struct.unpack_from("!I", l3, 0)[0] & 0xFFFFF)]
    if et == 0x0800 and len(l3) >= 20:
        ihl = (l3[0] & 15) * 4
        proto, src = l3[9], ipaddress.ip_address(bytes(l3[12:16]))
        outer = ("4", struct.unpack_from("!H", l3, 4)[0])
        first = (struct.unpack_from("!H", l3, 6)[0] & 0x1FFF) == 0
        if l3[0] >> 4 == 4 and proto == 1 and first and ihl >= 20 and len(l3) >= ihl + 8:
            t = l3[ihl]
            if t in ICMP4_ERRORS:
                inner = l3[ihl + 8:]
                keys = []
                if len(inner) >= 6 and inner[0] >> 4 == 4:
                    keys.append(("4", struct.unpack_from("!H", inner, 4)[0]))
                # An error a router or host B sent names its case only by its quote (its own
                # identification is its kernel's); one the case itself sent carries its tag.
                return keys if src in RESPONDERS else [outer] + keys
            if t in ICMP4_REPLIES and src in RESPONDERS:
                return [("e", struct.unpack_from("!H", l3, ihl + 4)[0])]
        if proto == 6 and first and src in RESPONDERS and len(l3) >= ihl + 4:
            return [("t", struct.unpack_from("!H", l3, ihl + 2)[0])]
        if src in RESPONDERS:
            # Its identification is its kernel's (the second fragment of an echo reply): the
            # payload's marker names the case, when it carries one.
            mk = marker_key(frame)
            return ([mk] if mk else []) + [outer]
        return [outer]
    if et == 0x86DD and len(l3) >= 40:
        fl = ("6", struct.unpack_from("!I", l3, 0)[0] & 0xFFFFF)
        src = ipaddress.ip_address(bytes(l3[8:24]))
        if l3[0] >> 4 == 6 and l3[6] == 58 and len(l3) >= 48:
            t = l3[40]
            inner = None
            if t in ICMP6_ERRORS:
                inner = l3[48:]
            elif t == 137:  # redirect: the quote is in the Redirected Header option
                off = 40 + 40
                while off + 8 <= len(l3):
                    otype, olen = l3[off], l3[off + 1] * 8
                    if olen == 0:
                        break
                    if otype == 4:
                        inner = l3[off + 8:off + olen]
                        break
                    off += olen
            if inner is not None:
                keys = []
                if len(inner) >= 4 and inner[0] >> 4 == 6:
                    keys.append(("6", struct.unpack_from("!I", inner, 0)[0] & 0xFFFFF))
                return keys if src in RESPONDERS else [fl] + keys
            if t in ICMP6_REPLIES and src in RESPONDERS:
                return [("e", struct.unpack_from("!H", l3, 44)[0])]
        if src in RESPONDERS:
            nh, off = v6_ext_walk(l3)
            if nh == 6 and off is not None and len(l3) >= off + 4:
                return [("t", struct.unpack_from("!H", l3, off + 2)[0])]
        return [fl]
    return []


MARKER = b"=CF"


def marker(n):
    """Bytes naming tag `n` in a payload: found again in a frame nothing else identifies."""
    return MARKER + n.to_bytes(3, "big") + b"="


def marker_key(frame):
    i = frame.find(MARKER)
    while i >= 0:
        if i + 7 <= len(frame) and frame[i + 6:i + 7] == b"=":
            return ("m", int.from_bytes(frame[i + 3:i + 6], "big"))
        i = frame.find(MARKER, i + 1)
    return None


def _zero(b, start, n):
    b[start:start + n] = b"\0" * n


def finish_partial(frame):
    """Completes an L4 checksum the sending kernel left to the device (CHECKSUM_PARTIAL)."""
    b = bytearray(frame)
    et = struct.unpack_from("!H", b, 12)[0]
    l3 = 14
    if et == 0x0800:
        ihl = (b[l3] & 15) * 4
        proto, off = b[l3 + 9], l3 + ihl
        end = l3 + struct.unpack_from("!H", b, l3 + 2)[0]
        pseudo = bytes(b[l3 + 12:l3 + 20]) + struct.pack("!BBH", 0, proto, end - off)
    elif et == 0x86DD:
        nh, rel = v6_ext_walk(bytes(b[l3:]))
        if rel is None:
            return frame
        proto, off = nh, l3 + rel
        end = l3 + 40 + struct.unpack_from("!H", b, l3 + 4)[0]
        pseudo = bytes(b[l3 + 8:l3 + 40]) + struct.pack("!IxxxB", end - off, proto)
    else:
        return frame
    field = {6: 16, 17: 6, 58: 2}.get(proto)
    if field is None or end > len(b):
        return frame
    _zero(b, off + field, 2)
    c = csum(pseudo + bytes(b[off:end]))
    if proto == 17 and c == 0:
        c = 0xFFFF
    struct.pack_into("!H", b, off + field, c)
    return bytes(b)


def normalise(frame, partial=False):
    """The frame as compared between routers: fields that legitimately differ from one kernel
    to another zeroed (a router-originated IPv4 packet's identification and header checksum,
    IPv4 timestamps), a partial L4 checksum finished."""
    if partial:
        frame = finish_partial(frame)
    b = bytearray(frame)
    if len(b) < 34:
        return bytes(b)
    et = struct.unpack_from("!H", b, 12)[0]
    if et == 0x0800 and b[14] >> 4 == 4:
        l3 = 14
        ihl = (b[l3] & 15) * 4
        src = ipaddress.ip_address(bytes(b[l3 + 12:l3 + 16]))
        originated = src in RESPONDERS
        if originated:
            _zero(b, l3 + 4, 2)
            _zero(b, l3 + 10, 2)
        if _normalise_ts_option(b, l3, ihl):
            _zero(b, l3 + 10, 2)  # it covers the times (its validity is compared apart)
        if b[l3 + 9] == 1 and len(b) >= l3 + ihl + 20:
            icmp = l3 + ihl
            if b[icmp] == 14:  # timestamp reply: receive and transmit times
                _zero(b, icmp + 12, 8)
                _zero(b, icmp + 2, 2)
            if b[icmp] in ICMP4_ERRORS:
                inner = icmp + 8
                if len(b) >= inner + 20 and b[inner] >> 4 == 4:
                    if _normalise_ts_option(b, inner, (b[inner] & 15) * 4):
                        _zero(b, icmp + 2, 2)  # the router stamped the quoted option
    elif et == 0x86DD and b[14] >> 4 == 6 and len(b) >= 62:
        src = ipaddress.ip_address(bytes(b[22:38]))
        if src in RESPONDERS and b[14 + 6] == 44:
            _zero(b, 14 + 44, 4)  # a fragment identification the router's kernel chose
    return bytes(b)


def _normalise_ts_option(b, l3, ihl):
    """Zeroes the time values an IPv4 timestamp option carries (they differ with the clock);
    says whether there was one."""
    found = False
    off, end = l3 + 20, min(l3 + ihl, len(b))
    while off < end:
        t = b[off]
        if t == 0:
            break
        if t == 1:
            off += 1
            continue
        if off + 1 >= end:
            break
        ln = b[off + 1]
        if ln < 2:
            break
        if t == 68 and ln >= 4:
            ptr, flag = b[off + 2], b[off + 3] & 15
            step = 4 if flag == 0 else 8
            first = 4 if flag == 0 else 8
            i = first
            while i + 4 <= min(ln, ptr - 1):
                _zero(b, off + i, 4)
                i += step
            found = True
        off += ln
    return found


def icmp_ok(frame):
    """Whether an ICMP (IPv4) message's checksum is right; True for anything else."""
    et, l3 = l3_of(frame)
    if et != 0x0800 or len(l3) < 20 or l3[9] != 1:
        return True
    ihl = (l3[0] & 15) * 4
    tot = struct.unpack_from("!H", l3, 2)[0]
    if (struct.unpack_from("!H", l3, 6)[0] & 0x3FFF) or tot > len(l3) or tot < ihl + 4:
        return True
    return csum(l3[ihl:tot]) == 0


def l3_of(frame):
    et = struct.unpack_from("!H", frame, 12)[0] if len(frame) >= 14 else 0
    return et, frame[14:]


def describe(frame, sent_l3s=(), host="B"):
    """One line saying what this frame is, for tables: an ICMP error with type, code, source,
    length, quote length and MTU/pointer; a reply; or a forwarded copy with its checks."""
    et, l3 = l3_of(frame)
    macs = f"{mac_name(frame[6:12])}→{mac_name(frame[0:6])}"
    if et == 0x0800 and len(l3) < 20 or et == 0x86DD and len(l3) < 40:
        return f"truncated IPv{4 if et == 0x0800 else 6} header ({len(l3)} bytes) {macs}"
    if et == 0x0800 and len(l3) >= 20:
        ihl = (l3[0] & 15) * 4
        src, proto = ip4_text(l3[12:16]), l3[9]
        first = (struct.unpack_from("!H", l3, 6)[0] & 0x1FFF) == 0
        tot = struct.unpack_from("!H", l3, 2)[0]
        if ipaddress.ip_address(src) in RESPONDERS and (not first or l3[6] & 0x20):
            off = (struct.unpack_from("!H", l3, 6)[0] & 0x1FFF) * 8
            return f"fragment (proto {proto}) from {src} offset {off} len {tot}"
        if proto == 1 and first and len(l3) >= ihl + 8 and (l3[ihl] in ICMP4_ERRORS or ipaddress.ip_address(src) in RESPONDERS):
            t, c = l3[ihl], l3[ihl + 1]
            s = f"ICMP {t}/{c} from {src} len {tot}"
            if t in ICMP4_ERRORS:
                s += f" quote {tot - ihl - 8}"
                if t == 3 and c == 4:
                    s += f" mtu {struct.unpack_from('!H', l3, ihl + 6)[0]}"
                if t == 12:
                    s += f" ptr {l3[ihl + 4]}"
                if t == 5:
                    s += f" gw {ip4_text(l3[ihl + 4:ihl + 8])}"
            if not ipv4_header_ok(l3):
                s += " BAD-IP-CSUM"
            if csum(l3[ihl:tot]) != 0:
                s += " BAD-ICMP-CSUM"
            return s
        if ipaddress.ip_address(src) in RESPONDERS and proto == 6:
            flags = l3[ihl + 13] if len(l3) > ihl + 13 else 0
            return f"TCP {'RST' if flags & 4 else 'flags 0x%02x' % flags} from {src}"
        return "forwarded" + _fwd_checks(frame, l3, sent_l3s, 4) + f" {macs}"
    if et == 0x86DD and len(l3) >= 40:
        src = ip6_text(l3[8:24])
        plen = struct.unpack_from("!H", l3, 4)[0]
        if l3[6] == 58 and len(l3) >= 48 and (l3[40] < 128 or ipaddress.ip_address(src) in RESPONDERS):
            t, c = l3[40], l3[41]
            s = f"ICMPv6 {t}/{c} from {src} len {40 + plen}"
            if t in ICMP6_ERRORS:
                s += f" quote {plen - 8}"
                if t == 2:
                    s += f" mtu {struct.unpack_from('!I', l3, 44)[0]}"
                if t == 4:
                    s += f" ptr {struct.unpack_from('!I', l3, 44)[0]}"
            if csum(l3[8:40] + struct.pack("!IxxxB", plen, 58) + l3[40:40 + plen]) != 0:
                s += " BAD-ICMP-CSUM"
            return s
        if ipaddress.ip_address(src) in RESPONDERS and l3[6] == 44 and len(l3) >= 48:
            off = struct.unpack_from("!H", l3, 42)[0] & 0xFFF8
            return f"fragment (next header {l3[40]}) from {src} offset {off} len {40 + plen}"
        if ipaddress.ip_address(src) in RESPONDERS:
            nh, off = v6_ext_walk(l3)
            if nh == 6 and off is not None and len(l3) > off + 13:
                return f"TCP {'RST' if l3[off + 13] & 4 else 'flags 0x%02x' % l3[off + 13]} from {src}"
        return "forwarded" + _fwd_checks(frame, l3, sent_l3s, 6) + f" {macs}"
    if et == 0x0806:
        return "ARP"
    return f"ethertype 0x{et:04x}"


def ip_length(l3):
    """The packet's own length (IPv4 total length, IPv6 40 + payload length), within l3."""
    if len(l3) >= 20 and l3[0] >> 4 == 4:
        n = struct.unpack_from("!H", l3, 2)[0]
    elif len(l3) >= 40 and l3[0] >> 4 == 6:
        n = 40 + struct.unpack_from("!H", l3, 4)[0]
    else:
        return len(l3)
    return n if 0 < n <= len(l3) else len(l3)


def sent_packets(frames):
    """The IP packets a case sent (VLAN tags and bytes past the packet's length left out)."""
    out = []
    for f in frames:
        off = 14
        while len(f) >= off and f[off - 2:off] in (b"\x81\x00", b"\x88\xa8"):
            off += 4
        l3 = f[off:]
        out.append(l3[:ip_length(l3)])
    return out


def _fwd_checks(frame, l3, sent_l3s, v):
    """How a forwarded frame relates to what the case sent: exact (only TTL/hop limit −1 and
    the IPv4 checksum changed), a fragment of it, or modified; and the header checksum."""
    notes = []
    extra = len(l3) - ip_length(l3)
    if extra > 0:
        notes.append(f"{extra} bytes past the IP length")
        l3 = l3[:len(l3) - extra]
    if v == 4:
        if not ipv4_header_ok(l3):
            notes.append("BAD-IP-CSUM")
        for s in sent_l3s:
            if len(s) == len(l3) and s[:8] == l3[:8] and s[9:10] == l3[9:10] and s[12:] == l3[12:]:
                notes.insert(0, f"ttl {s[8]}→{l3[8]}")
                break
        else:
            same_id = [s for s in sent_l3s if len(s) >= 20 and s[4:6] == l3[4:6] and s[12:20] == l3[12:20]]
            if same_id and any(len(s) > len(l3) for s in same_id) and (l3[6] & 0x20 or l3[6:8] != same_id[0][6:8]):
                notes.insert(0, f"fragment ttl {same_id[0][8]}→{l3[8]} len {len(l3)}")
            else:
                notes.insert(0, f"modified ttl {l3[8]} len {len(l3)}")
    else:
        for s in sent_l3s:
            if len(s) == len(l3) and s[:7] == l3[:7] and s[8:] == l3[8:]:
                notes.insert(0, f"hlim {s[7]}→{l3[7]}")
                break
        else:
            notes.insert(0, f"modified hlim {l3[7]} len {len(l3)}")
    return " (" + ", ".join(notes) + ")"
