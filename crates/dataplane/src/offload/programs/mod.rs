//! The two kernel programs of a port, built from one flow test so that they always agree:
//!
//! - the **socket filter** on the port's receive sockets refuses the frames of offloaded flows,
//!   so the kernel never copies them into PEARL's ring (a packet socket sees every frame before
//!   tc does);
//! - the **tcx ingress program** on the port's interface forwards those same frames as the fast
//!   path would: TTL or hop limit −1 (IPv4's checksum updated incrementally, as Linux's
//!   `ip_decrease_ttl`), MACs of the next hop, `bpf_redirect` to the egress interface. A GSO
//!   super-packet stays one unit, and the TCP checksum stays as its sender left it, as the
//!   Linux router leaves it (why: `forward`).
//!
//! A frame is an offloaded flow's when the port is armed (it has flows), it is untagged TCP
//! over IPv4 without options or fragmentation and with a correct header checksum, or over IPv6
//! with no extension header, its TTL or hop limit is above 1, and its key is in its family's
//! flow table. Anything else, a router's exceptions included, takes PEARL's path as before.
//!
//! What the tcx program does not forward it hands on to the host's stack, unless the frame is
//! addressed to another host's MAC (a VR's, say): PEARL's socket already has it, and the stack
//! would only drop it a few calls later. The program is attached for as long as pearld runs
//! (`hooks`), and that drop is meant to offset its test on frames that are no offloaded flow's
//! (measured: the 64-byte path's rate within the noise of the build without the program).

use super::entry::{Family, KeyLayout, VALUE_BYTES, VALUE_LAST_NS, VALUE_MACS, VALUE_PACKETS};
use crate::port::RxClass;
use pearl_ebpf::asm::{Asm, Cond, Helper, Label, Size, FP, R0, R1, R2, R3, R4, R5, R6, R7, R8};
use pearl_ebpf::insn::Insn;
use pearl_wire::ip_proto::TCP;

/// `struct __sk_buff` offsets.
const SKB_LEN: i16 = 0;
const SKB_PKT_TYPE: i16 = 4;
const SKB_VLAN_PRESENT: i16 = 20;
const SKB_GSO_SIZE: i16 = 176;

/// tcx verdicts: on to the kernel's stack as if no program ran, or dropped.
const TCX_NEXT: i32 = -1;
const TCX_DROP: i32 = 2;
/// `skb->pkt_type` of a frame addressed to another host's MAC: PEARL's socket has seen it
/// already (packet sockets come before tc), and the host's stack would only drop it.
const PACKET_OTHERHOST: i32 = 3;

/// Where a family's headers lie on the stack (the frame's first bytes: Ethernet, the IP header,
/// the TCP ports) and where its key is built, and where its fields are in those bytes.
struct Frame {
    hdr: i16,
    len: i32,
    key: i16,
    /// From `hdr`: the TTL or hop limit, the addresses, the ports.
    ttl: i16,
    src: i16,
    dst: i16,
    ports: i16,
    /// From `hdr`: IPv4's header checksum.
    checksum: Option<i16>,
    /// The bytes the tcx program writes back from `hdr`: the MACs to the TTL (IPv4: to the
    /// header checksum).
    rewritten: i32,
    /// From `hdr`: the IP header's length field; what it counts besides the TCP segment; where
    /// the TCP segment starts.
    ip_length: i16,
    ip_header_counted: i32,
    tcp: i32,
}

const ETH: i16 = 14;
/// The top of the stack holds the armed table's key (4 bytes) and 4 bytes of room.
const ARMED_KEY: i16 = -4;
const BELOW_ARMED_KEY: i16 = -8;

impl Frame {
    /// The copy of a frame's first `ETH + ip + 4` bytes ends at `BELOW_ARMED_KEY`, which puts
    /// its IP header at `-(ip + 12)`, 4-byte aligned for headers of 20 and 40 bytes (the
    /// verifier refuses misaligned stack access); the key lies below it, 8-byte aligned.
    const fn on_stack(ip: i16, key_len: usize) -> (i16, i32, i16) {
        let len = ETH + ip + 4;
        let hdr = BELOW_ARMED_KEY - len;
        let key = (hdr - key_len as i16).div_euclid(8) * 8;
        (hdr, len as i32, key)
    }
}

const _: () = assert!((V4.hdr + ETH) % 4 == 0 && (V6.hdr + ETH) % 4 == 0 && V4.key % 8 == 0 && V6.key % 8 == 0);

/// RFC 791's header without options: length at 2, TTL at 8, checksum at 10, addresses at 12
/// and 16, TCP at 20.
const V4: Frame = {
    let (hdr, len, key) = Frame::on_stack(20, Family::V4.layout().len);
    Frame {
        hdr,
        len,
        key,
        ttl: ETH + 8,
        src: ETH + 12,
        dst: ETH + 16,
        ports: ETH + 20,
        checksum: Some(ETH + 10),
        rewritten: (ETH + 12) as i32,
        ip_length: ETH + 2,
        ip_header_counted: 20,
        tcp: (ETH + 20) as i32,
    }
};
/// RFC 8200's fixed header: payload length at 4, hop limit at 7, addresses at 8 and 24, TCP at
/// 40 (no extension header).
const V6: Frame = {
    let (hdr, len, key) = Frame::on_stack(40, Family::V6.layout().len);
    Frame {
        hdr,
        len,
        key,
        ttl: ETH + 7,
        src: ETH + 8,
        dst: ETH + 24,
        ports: ETH + 40,
        checksum: None,
        rewritten: (ETH + 8) as i32,
        ip_length: ETH + 4,
        ip_header_counted: 0,
        tcp: (ETH + 40) as i32,
    }
};

/// 0x0800, 0x86dd and 0x3fff (MF and the fragment offset) as a little-endian load of their
/// network-order bytes reads them.
const ETHERTYPE_IPV4_LE: i32 = 0x0008;
const ETHERTYPE_IPV6_LE: i32 = 0xdd86;
const FRAGMENT_BITS_LE: i32 = 0xff3f;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// On a receive socket that takes this class of frames: the filter replaces the socket's
    /// own, so it keeps the other class out first.
    SocketFilter(RxClass),
    Redirect,
}

/// The descriptors of the maps a port's programs read.
#[derive(Clone, Copy)]
pub struct Maps {
    pub armed: u32,
    pub flows_v4: u32,
    pub flows_v6: u32,
}

/// The program of `side` for port `port`.
pub fn build(side: Side, port: u32, maps: Maps) -> Vec<Insn> {
    let mut a = Asm::default();
    let (not_ours, v4, v6) = (a.label(), a.label(), a.label());
    // r6 = skb for the whole program: helpers take r1-r5.
    a.mov(R6, R1);
    if let Side::SocketFilter(class) = side {
        keep_to(&mut a, class);
    }

    // The armed table first: while the programs are being attached or detached, the port is
    // unarmed and everything passes.
    a.st(Size::W, FP, ARMED_KEY, port as i32);
    a.ld_map(R1, maps.armed);
    a.mov(R2, FP);
    a.add(R2, i32::from(ARMED_KEY));
    a.call(Helper::MapLookupElem);
    a.jump(Cond::Eq, R0, 0, not_ours);
    a.ldx(Size::W, R1, R0, 0);
    a.jump(Cond::Eq, R1, 0, not_ours);

    // Untagged frames only; then by EtherType (IPv4's copy is the shorter, so it serves both).
    a.ldx(Size::W, R1, R6, SKB_VLAN_PRESENT);
    a.jump(Cond::Ne, R1, 0, not_ours);
    load(&mut a, &V4, not_ours);
    a.ldx(Size::H, R1, FP, V4.hdr + ETH - 2);
    a.jump(Cond::Eq, R1, ETHERTYPE_IPV4_LE, v4);
    a.jump(Cond::Eq, R1, ETHERTYPE_IPV6_LE, v6);
    a.goto(not_ours);

    // IPv4: the header tested, the flow looked up, the frame kept or forwarded.
    a.bind(v4);
    ipv4_test(&mut a, not_ours);
    key_and_lookup(&mut a, &V4, Family::V4.layout(), port, maps.flows_v4, not_ours);
    ours(&mut a, side, &V4);

    // IPv6: the same, on its longer copy.
    a.bind(v6);
    load(&mut a, &V6, not_ours);
    ipv6_test(&mut a, not_ours);
    key_and_lookup(&mut a, &V6, Family::V6.layout(), port, maps.flows_v6, not_ours);
    ours(&mut a, side, &V6);

    // No offloaded flow's: a socket filter keeps the frame by returning its length or more;
    // tcx passes it on, unless it is addressed to another host.
    a.bind(not_ours);
    a.mov(R0, if side == Side::Redirect { TCX_NEXT } else { -1 });
    if side == Side::Redirect {
        let to_stack = a.label();
        a.ldx(Size::W, R1, R6, SKB_PKT_TYPE);
        a.jump(Cond::Ne, R1, PACKET_OTHERHOST, to_stack);
        a.mov(R0, TCX_DROP);
        a.bind(to_stack);
    }
    a.exit();
    a.finish()
}

/// Refuses the frames the socket's class leaves to the port's other socket, by length.
fn keep_to(a: &mut Asm, class: RxClass) {
    let (keep_if, bound) = match class {
        RxClass::All => return,
        RxClass::AtMost(n) => (Cond::Le, n),
        RxClass::Above(n) => (Cond::Gt, n),
    };
    let kept = a.label();
    a.ldx(Size::W, R1, R6, SKB_LEN);
    a.jump(keep_if, R1, bound as i32, kept);
    a.mov(R0, 0);
    a.exit();
    a.bind(kept);
}

/// bpf_skb_load_bytes(skb, 0, hdr, len): works in both program types, and on the linear head of
/// a GSO super-packet.
fn load(a: &mut Asm, f: &Frame, not_ours: Label) {
    a.mov(R1, R6);
    a.mov(R2, 0);
    a.mov(R3, FP);
    a.add(R3, i32::from(f.hdr));
    a.mov(R4, f.len);
    a.call(Helper::SkbLoadBytes);
    a.jump(Cond::Ne, R0, 0, not_ours);
}

fn ipv4_test(a: &mut Asm, not_ours: Label) {
    let ip = V4.hdr + ETH;
    // Version 4 without options, no fragment, a TTL to decrement, TCP.
    a.ldx(Size::B, R1, FP, ip);
    a.jump(Cond::Ne, R1, 0x45, not_ours);
    a.ldx(Size::H, R1, FP, ip + 6);
    a.and(R1, FRAGMENT_BITS_LE);
    a.jump(Cond::Ne, R1, 0, not_ours);
    a.ldx(Size::B, R1, FP, V4.hdr + V4.ttl);
    a.jump(Cond::Le, R1, 1, not_ours);
    a.ldx(Size::B, R1, FP, ip + 9);
    a.jump(Cond::Ne, R1, i32::from(TCP), not_ours);
    // RFC 1812 §5.2.2: the header checksum, verified (its ones'-complement sum is the same in
    // either byte order, so little-endian words do).
    a.mov(R1, 0);
    for word in 0..10 {
        a.ldx(Size::H, R2, FP, ip + 2 * word);
        a.add(R1, R2);
    }
    for _ in 0..2 {
        a.mov(R2, R1);
        a.rsh(R2, 16);
        a.and(R1, 0xffff);
        a.add(R1, R2);
    }
    a.jump(Cond::Ne, R1, 0xffff, not_ours);
}

fn ipv6_test(a: &mut Asm, not_ours: Label) {
    let ip = V6.hdr + ETH;
    a.ldx(Size::B, R1, FP, ip);
    a.and(R1, 0xf0);
    a.jump(Cond::Ne, R1, 0x60, not_ours);
    // TCP right after the fixed header: no extension header (hop-by-hop options, fragments).
    a.ldx(Size::B, R1, FP, ip + 6);
    a.jump(Cond::Ne, R1, i32::from(TCP), not_ours);
    a.ldx(Size::B, R1, FP, V6.hdr + V6.ttl);
    a.jump(Cond::Le, R1, 1, not_ours);
}

/// Builds the key at `f.key` and looks it up; leaves the flow's value in r7, or jumps to `not_ours`.
fn key_and_lookup(a: &mut Asm, f: &Frame, l: KeyLayout, port: u32, flows: u32, not_ours: Label) {
    let key = |offset: usize| f.key + offset as i16;
    a.st(Size::W, FP, f.key, port as i32);
    for (from, to) in [(f.src, l.src), (f.dst, l.dst)] {
        for w in 0..(l.addr_len / 4) as i16 {
            a.ldx(Size::W, R1, FP, f.hdr + from + 4 * w);
            a.stx(Size::W, FP, key(to) + 4 * w, R1);
        }
    }
    for (from, to) in [(f.ports, l.sport), (f.ports + 2, l.dport)] {
        a.ldx(Size::H, R1, FP, f.hdr + from);
        a.stx(Size::H, FP, key(to), R1);
    }
    a.st(Size::H, FP, key(l.proto), i32::from(TCP));
    for w in 0..3 {
        a.ldx(Size::H, R1, FP, f.hdr + 2 * w);
        a.stx(Size::H, FP, key(l.mac) + 2 * w, R1);
    }
    a.ld_map(R1, flows);
    a.mov(R2, FP);
    a.add(R2, i32::from(f.key));
    a.call(Helper::MapLookupElem);
    a.jump(Cond::Eq, R0, 0, not_ours);
    a.mov(R7, R0);
}

/// An offloaded flow's frame: kept from the socket, or forwarded.
fn ours(a: &mut Asm, side: Side, f: &Frame) {
    match side {
        Side::SocketFilter(_) => {
            // Returning 0 keeps the frame from the socket.
            a.mov(R0, 0);
            a.exit();
        }
        Side::Redirect => forward(a, f),
    }
}

/// The fast path's rewrite of a forwarded frame, then the redirect; r6 the skb, r7 the value.
fn forward(a: &mut Asm, f: &Frame) {
    // A super-packet counts as one, as PEARL's ports count it.
    a.mov(R1, 1);
    a.atomic_add64(R7, VALUE_PACKETS as i16, R1);
    a.ldx(Size::W, R1, R6, SKB_LEN);
    a.atomic_add64(R7, VALUE_BYTES as i16, R1);
    // The tick's time, not the clock source's: a flow's last frame needs no finer time (flows
    // are idle after two seconds), and reading the TSC on every frame showed in profiles.
    a.call(Helper::KtimeGetCoarseNs);
    a.stx(Size::Dw, R7, VALUE_LAST_NS as i16, R0);
    // Both MACs from the value into the header copy.
    for w in 0..6 {
        a.ldx(Size::H, R1, R7, VALUE_MACS as i16 + 2 * w);
        a.stx(Size::H, FP, f.hdr + 2 * w, R1);
    }
    a.ldx(Size::B, R1, FP, f.hdr + f.ttl);
    a.add(R1, -1);
    a.stx(Size::B, FP, f.hdr + f.ttl, R1);
    if let Some(at) = f.checksum {
        // IPv4's checksum +0x0100 in network order, carried around (RFC 1141).
        let (checksum, no_carry) = (f.hdr + at, a.label());
        a.ldx(Size::H, R1, FP, checksum);
        a.add(R1, 1);
        a.jump(Cond::Lt, R1, 0xffff, no_carry);
        a.add(R1, 1);
        a.bind(no_carry);
        a.stx(Size::H, FP, checksum, R1);
    }
    // bpf_skb_store_bytes(skb, 0, hdr, rewritten, 0): unclones a shared head first.
    let stored = a.label();
    a.mov(R1, R6);
    a.mov(R2, 0);
    a.mov(R3, FP);
    a.add(R3, i32::from(f.hdr));
    a.mov(R4, f.rewritten);
    a.mov(R5, 0);
    a.call(Helper::SkbStoreBytes);
    a.jump(Cond::Eq, R0, 0, stored);
    // Half-rewritten: neither path may take it any more (the socket filter refused it).
    a.mov(R0, TCX_DROP);
    a.exit();
    a.bind(stored);
    // The TCP checksum stays as the sender left it, as the Linux router leaves it. A sender
    // with checksum offload left in it the pseudo-header's sum for whoever finishes it (the
    // skb says so, and keeps saying so: tc cannot change that), the receiver or a device on
    // the way, which sums the segment over that field. A checksum finished here would be
    // summed over once more by such a device (a NIC with checksum offload, a tunnel, a veth
    // with tx checksumming off) and leave wrong. Only the segment's length is looked at.
    let (whole, drop) = (a.label(), a.label());
    a.ldx(Size::W, R1, R6, SKB_GSO_SIZE);
    a.jump(Cond::Ne, R1, 0, whole);
    segment_fits(a, f, drop);
    a.bind(whole);
    a.ldx(Size::W, R1, R7, 0);
    a.mov(R2, 0);
    a.call(Helper::Redirect);
    a.exit();
    a.bind(drop);
    // A length that does not add up: dropped, as the fast path drops a malformed frame.
    a.mov(R0, TCX_DROP);
    a.exit();
}

/// Whether the IP header's length leaves at least a TCP header and lies within the frame
/// (Ethernet padding may follow it); else to `drop`.
fn segment_fits(a: &mut Asm, f: &Frame, drop: Label) {
    a.ldx(Size::H, R8, FP, f.hdr + f.ip_length);
    a.swap_to_network(R8, 16);
    a.add(R8, -f.ip_header_counted);
    a.jump(Cond::Lt, R8, 20, drop);
    a.ldx(Size::W, R1, R6, SKB_LEN);
    a.add(R1, -f.tcp);
    a.jump(Cond::Gt, R8, R1, drop);
}

#[cfg(test)]
mod tests;
