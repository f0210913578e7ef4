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

use super::asm::{Asm, Cond, Label, Size, FP, R0, R1, R2, R3, R4, R5, R6, R7, R8};
use super::entry::{Family, KeyLayout, VALUE_BYTES, VALUE_LAST_NS, VALUE_MACS, VALUE_PACKETS};
use crate::bpf_sys::Insn;
use pearl_wire::ip_proto::TCP;

/// Helper ids (`enum bpf_func_id`).
const MAP_LOOKUP_ELEM: i32 = 1;
const SKB_STORE_BYTES: i32 = 9;
const REDIRECT: i32 = 23;
const SKB_LOAD_BYTES: i32 = 26;
/// The tick's time, not the clock source's: a flow's last frame needs no finer time (flows are
/// idle after two seconds), and reading the TSC on every frame showed in profiles.
const KTIME_GET_COARSE_NS: i32 = 160;

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
/// the TCP ports), placed so that the IP header is 4-byte aligned (the verifier refuses
/// misaligned stack access), and where its key is built.
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

const V4: Frame = Frame {
    hdr: -46,
    len: 38,
    key: -72,
    ttl: 22,
    src: 26,
    dst: 30,
    ports: 34,
    checksum: Some(24),
    rewritten: 26,
    ip_length: 16,
    ip_header_counted: 20,
    tcp: 34,
};
const V6: Frame = Frame {
    hdr: -66,
    len: 58,
    key: -120,
    ttl: 21,
    src: 22,
    dst: 38,
    ports: 54,
    checksum: None,
    rewritten: 22,
    ip_length: 18,
    ip_header_counted: 0,
    tcp: 54,
};
const ARMED_KEY: i16 = -4;

/// 0x0800, 0x86dd and 0x3fff (MF and the fragment offset) as a little-endian load of their
/// network-order bytes reads them.
const ETHERTYPE_IPV4_LE: i32 = 0x0008;
const ETHERTYPE_IPV6_LE: i32 = 0xdd86;
const FRAGMENT_BITS_LE: i32 = 0xff3f;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    SocketFilter,
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
    a.mov(R6, R1);
    // The armed table first: while the programs are being attached or detached, the port is
    // unarmed and everything passes.
    a.st(Size::W, FP, ARMED_KEY, port as i32);
    a.ld_map(R1, maps.armed);
    a.mov(R2, FP);
    a.add_imm(R2, i32::from(ARMED_KEY));
    a.call(MAP_LOOKUP_ELEM);
    a.jump_imm(Cond::Eq, R0, 0, not_ours);
    a.ldx(Size::W, R1, R0, 0);
    a.jump_imm(Cond::Eq, R1, 0, not_ours);
    a.ldx(Size::W, R1, R6, SKB_VLAN_PRESENT);
    a.jump_imm(Cond::Ne, R1, 0, not_ours);
    load(&mut a, &V4, not_ours);
    a.ldx(Size::H, R1, FP, V4.hdr + 12);
    a.jump_imm(Cond::Eq, R1, ETHERTYPE_IPV4_LE, v4);
    a.jump_imm(Cond::Eq, R1, ETHERTYPE_IPV6_LE, v6);
    a.goto(not_ours);
    a.bind(v4);
    ipv4_test(&mut a, not_ours);
    key_and_lookup(&mut a, &V4, Family::V4.layout(), port, maps.flows_v4, not_ours);
    ours(&mut a, side, &V4);
    a.bind(v6);
    load(&mut a, &V6, not_ours);
    ipv6_test(&mut a, not_ours);
    key_and_lookup(&mut a, &V6, Family::V6.layout(), port, maps.flows_v6, not_ours);
    ours(&mut a, side, &V6);
    a.bind(not_ours);
    // A socket filter keeps the frame by returning its length or more; tcx passes it on.
    a.mov_imm(R0, if side == Side::SocketFilter { -1 } else { TCX_NEXT });
    if side == Side::Redirect {
        let to_stack = a.label();
        a.ldx(Size::W, R1, R6, SKB_PKT_TYPE);
        a.jump_imm(Cond::Ne, R1, PACKET_OTHERHOST, to_stack);
        a.mov_imm(R0, TCX_DROP);
        a.bind(to_stack);
    }
    a.exit();
    a.finish()
}

/// bpf_skb_load_bytes(skb, 0, hdr, len): works in both program types, and on the linear head of
/// a GSO super-packet.
fn load(a: &mut Asm, f: &Frame, not_ours: Label) {
    a.mov(R1, R6);
    a.mov_imm(R2, 0);
    a.mov(R3, FP);
    a.add_imm(R3, i32::from(f.hdr));
    a.mov_imm(R4, f.len);
    a.call(SKB_LOAD_BYTES);
    a.jump_imm(Cond::Ne, R0, 0, not_ours);
}

fn ipv4_test(a: &mut Asm, not_ours: Label) {
    let ip = V4.hdr + 14;
    a.ldx(Size::B, R1, FP, ip);
    a.jump_imm(Cond::Ne, R1, 0x45, not_ours);
    a.ldx(Size::H, R1, FP, ip + 6);
    a.and_imm(R1, FRAGMENT_BITS_LE);
    a.jump_imm(Cond::Ne, R1, 0, not_ours);
    a.ldx(Size::B, R1, FP, V4.hdr + V4.ttl);
    a.jump_imm(Cond::Le, R1, 1, not_ours);
    a.ldx(Size::B, R1, FP, ip + 9);
    a.jump_imm(Cond::Ne, R1, i32::from(TCP), not_ours);
    // RFC 1812 §5.2.2: the header checksum, verified (its ones'-complement sum is the same in
    // either byte order, so little-endian words do).
    a.mov_imm(R1, 0);
    for word in 0..10 {
        a.ldx(Size::H, R2, FP, ip + 2 * word);
        a.add(R1, R2);
    }
    for _ in 0..2 {
        a.mov(R2, R1);
        a.rsh_imm(R2, 16);
        a.and_imm(R1, 0xffff);
        a.add(R1, R2);
    }
    a.jump_imm(Cond::Ne, R1, 0xffff, not_ours);
}

fn ipv6_test(a: &mut Asm, not_ours: Label) {
    let ip = V6.hdr + 14;
    a.ldx(Size::B, R1, FP, ip);
    a.and_imm(R1, 0xf0);
    a.jump_imm(Cond::Ne, R1, 0x60, not_ours);
    // TCP right after the fixed header: no extension header (hop-by-hop options, fragments).
    a.ldx(Size::B, R1, FP, ip + 6);
    a.jump_imm(Cond::Ne, R1, i32::from(TCP), not_ours);
    a.ldx(Size::B, R1, FP, V6.hdr + V6.ttl);
    a.jump_imm(Cond::Le, R1, 1, not_ours);
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
    a.add_imm(R2, i32::from(f.key));
    a.call(MAP_LOOKUP_ELEM);
    a.jump_imm(Cond::Eq, R0, 0, not_ours);
    a.mov(R7, R0);
}

/// An offloaded flow's frame: kept from the socket, or forwarded.
fn ours(a: &mut Asm, side: Side, f: &Frame) {
    match side {
        Side::SocketFilter => {
            // Returning 0 keeps the frame from the socket.
            a.mov_imm(R0, 0);
            a.exit();
        }
        Side::Redirect => forward(a, f),
    }
}

/// The fast path's rewrite of a forwarded frame, then the redirect; r6 the skb, r7 the value.
fn forward(a: &mut Asm, f: &Frame) {
    // A super-packet counts as one, as PEARL's ports count it.
    a.mov_imm(R1, 1);
    a.atomic_add64(R7, VALUE_PACKETS as i16, R1);
    a.ldx(Size::W, R1, R6, SKB_LEN);
    a.atomic_add64(R7, VALUE_BYTES as i16, R1);
    a.call(KTIME_GET_COARSE_NS);
    a.stx(Size::Dw, R7, VALUE_LAST_NS as i16, R0);
    // Both MACs from the value into the header copy.
    for w in 0..6 {
        a.ldx(Size::H, R1, R7, VALUE_MACS as i16 + 2 * w);
        a.stx(Size::H, FP, f.hdr + 2 * w, R1);
    }
    a.ldx(Size::B, R1, FP, f.hdr + f.ttl);
    a.add_imm(R1, -1);
    a.stx(Size::B, FP, f.hdr + f.ttl, R1);
    if let Some(at) = f.checksum {
        // IPv4's checksum +0x0100 in network order, carried around (RFC 1141).
        let (checksum, no_carry) = (f.hdr + at, a.label());
        a.ldx(Size::H, R1, FP, checksum);
        a.add_imm(R1, 1);
        a.jump_imm(Cond::Lt, R1, 0xffff, no_carry);
        a.add_imm(R1, 1);
        a.bind(no_carry);
        a.stx(Size::H, FP, checksum, R1);
    }
    // bpf_skb_store_bytes(skb, 0, hdr, rewritten, 0): unclones a shared head first.
    let stored = a.label();
    a.mov(R1, R6);
    a.mov_imm(R2, 0);
    a.mov(R3, FP);
    a.add_imm(R3, i32::from(f.hdr));
    a.mov_imm(R4, f.rewritten);
    a.mov_imm(R5, 0);
    a.call(SKB_STORE_BYTES);
    a.jump_imm(Cond::Eq, R0, 0, stored);
    // Half-rewritten: neither path may take it any more (the socket filter refused it).
    a.mov_imm(R0, TCX_DROP);
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
    a.jump_imm(Cond::Ne, R1, 0, whole);
    segment_fits(a, f, drop);
    a.bind(whole);
    a.ldx(Size::W, R1, R7, 0);
    a.mov_imm(R2, 0);
    a.call(REDIRECT);
    a.exit();
    a.bind(drop);
    // A length that does not add up: dropped, as the fast path drops a malformed frame.
    a.mov_imm(R0, TCX_DROP);
    a.exit();
}

/// Whether the IP header's length leaves at least a TCP header and lies within the frame
/// (Ethernet padding may follow it); else to `drop`.
fn segment_fits(a: &mut Asm, f: &Frame, drop: Label) {
    a.ldx(Size::H, R8, FP, f.hdr + f.ip_length);
    a.swap_to_network(R8, 16);
    a.add_imm(R8, -f.ip_header_counted);
    a.jump_imm(Cond::Lt, R8, 20, drop);
    a.ldx(Size::W, R1, R6, SKB_LEN);
    a.add_imm(R1, -f.tcp);
    a.jump_reg(Cond::Gt, R8, R1, drop);
}

#[cfg(test)]
mod tests {
    //! The programs run by the kernel itself (BPF_PROG_TEST_RUN, as root): loaded through the
    //! verifier, then fed frames; checked against a plain Rust statement of which frames are an
    //! offloaded flow's and of what forwarding does to them.

    use super::super::entry::{Family, FlowAction, FlowKey, FlowTally, VALUE_LEN};
    use super::{build, Maps, Side};
    use crate::bpf_sys::{self, prog_test_run};
    use pearl_wire::checksum::{checksum, verifies};
    use proptest::prelude::*;
    use std::os::fd::OwnedFd;

    const VR_MAC: [u8; 6] = [0x02, 0, 0, 0, 1, 0];
    const NEXT_HOP: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];
    const OUT_MAC: [u8; 6] = [0x02, 0, 0, 0, 1, 1];
    /// What bpf_redirect returns (TC_ACT_REDIRECT), tcx's "next" and "drop", a socket filter's "keep".
    const REDIRECTED: u32 = 7;
    const DROPPED: u32 = 2;
    const NEXT: u32 = u32::MAX;
    const ACCEPTED: u32 = u32::MAX;

    struct Rig {
        flows: [OwnedFd; 2],
        armed: OwnedFd,
        filter: OwnedFd,
        redirect: OwnedFd,
    }

    impl Rig {
        fn new(port: u32) -> Rig {
            let flows = |f: Family| {
                bpf_sys::map_create(bpf_sys::MAP_TYPE_HASH, f.layout().len as u32, VALUE_LEN as u32, 64, b"test_flows")
                    .expect("hash map (run as root)")
            };
            let flows = [flows(Family::V4), flows(Family::V6)];
            let armed = bpf_sys::map_create(bpf_sys::MAP_TYPE_ARRAY, 4, 4, 4, b"test_armed").expect("array map");
            let maps = Maps { armed: bpf_sys::raw(&armed), flows_v4: bpf_sys::raw(&flows[0]), flows_v6: bpf_sys::raw(&flows[1]) };
            let prog = |side, t| bpf_sys::prog_load(t, 0, &build(side, port, maps), b"test").expect("the verifier takes it");
            let filter = prog(Side::SocketFilter, bpf_sys::PROG_TYPE_SOCKET_FILTER);
            let redirect = prog(Side::Redirect, bpf_sys::PROG_TYPE_SCHED_CLS);
            Rig { flows, armed, filter, redirect }
        }

        fn arm(&self, port: u32) {
            bpf_sys::map_update(&self.armed, &port.to_ne_bytes(), &1u32.to_ne_bytes(), bpf_sys::UPDATE_ANY).unwrap();
        }

        fn offload(&self, key: &FlowKey) {
            let action = FlowAction { out_ifindex: 1, dst_mac: NEXT_HOP, src_mac: OUT_MAC };
            let map = &self.flows[key.family as usize];
            key.with_bytes(|k| bpf_sys::map_update(map, k, &action.bytes(), bpf_sys::UPDATE_NOEXIST)).unwrap();
        }

        fn tally(&self, key: &FlowKey) -> FlowTally {
            let mut v = [0u8; VALUE_LEN];
            assert!(key.with_bytes(|k| bpf_sys::map_lookup(&self.flows[key.family as usize], k, &mut v)).unwrap());
            FlowTally::of(&v)
        }

        /// (the socket filter's verdict, the tc program's verdict, the frame as tc left it).
        fn run(&self, frame: &[u8]) -> (u32, u32, Vec<u8>) {
            let mut out = Vec::new();
            let tc = prog_test_run(&self.redirect, frame, &mut out).expect("tc run");
            // A socket filter's test run takes the first 14 bytes as the link header and starts
            // its data after them, where a packet socket's filter starts at the frame itself.
            let mut shifted = vec![0u8; 12];
            shifted.extend_from_slice(&[0x08, 0x00]);
            shifted.extend_from_slice(frame);
            let filter = prog_test_run(&self.filter, &shifted, &mut Vec::new()).expect("filter run");
            (filter, tc, out)
        }
    }

    fn key(port: u32, family: Family) -> FlowKey {
        let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
        match family {
            Family::V4 => {
                src[..4].copy_from_slice(&[10, 1, 0, 2]);
                dst[..4].copy_from_slice(&[10, 2, 0, 2]);
            }
            Family::V6 => {
                src = "2001:db8:1::2".parse::<std::net::Ipv6Addr>().unwrap().octets();
                dst = "2001:db8:2::2".parse::<std::net::Ipv6Addr>().unwrap().octets();
            }
        }
        FlowKey { port, family, src, dst, sport: 40000u16.to_be_bytes(), dport: 5201u16.to_be_bytes(), vr_mac: VR_MAC }
    }

    /// An Ethernet + IP + TCP frame of `key`'s flow with `payload` bytes.
    fn frame(key: &FlowKey, payload: usize) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&key.vr_mac);
        f.extend_from_slice(&[0x02, 0xaa, 0, 0, 0, 2]);
        match key.family {
            Family::V4 => {
                f.extend_from_slice(&[0x08, 0x00]);
                let total = (20 + 20 + payload) as u16;
                f.extend_from_slice(&[0x45, 0, (total >> 8) as u8, total as u8, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0]);
                f.extend_from_slice(&key.src[..4]);
                f.extend_from_slice(&key.dst[..4]);
                let c = checksum(&f[14..34]);
                f[24..26].copy_from_slice(&c.to_be_bytes());
            }
            Family::V6 => {
                f.extend_from_slice(&[0x86, 0xdd]);
                let len = (20 + payload) as u16;
                f.extend_from_slice(&[0x60, 0, 0, 0, (len >> 8) as u8, len as u8, 6, 64]);
                f.extend_from_slice(&key.src);
                f.extend_from_slice(&key.dst);
            }
        }
        f.extend_from_slice(&key.sport);
        f.extend_from_slice(&key.dport);
        f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
        f.extend((0..payload).map(|i| i as u8));
        f
    }

    /// Recomputes an IPv4 header's checksum.
    fn fix_checksum(f: &mut [u8]) {
        f[24..26].fill(0);
        let c = checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
    }

    /// The plain statement: an offloaded flow's frame is an armed port's untagged TCP frame over
    /// IPv4 without options or fragmentation and with a correct header checksum, or over IPv6
    /// with no extension header, TTL or hop limit above 1, whose key is in the table.
    fn offloaded(frame: &[u8], armed: bool, table: &[FlowKey], port: u32) -> bool {
        let v4 = frame.len() >= 38
            && frame[12..14] == [0x08, 0x00]
            && frame[14] == 0x45
            && u16::from_be_bytes([frame[20], frame[21]]) & 0x3fff == 0
            && frame[22] > 1
            && frame[23] == 6
            && verifies(0, &frame[14..34]);
        let v6 = frame.len() >= 58 && frame[12..14] == [0x86, 0xdd] && frame[14] >> 4 == 6 && frame[20] == 6 && frame[21] > 1;
        let (a, ports) = if v4 { (4, 34) } else { (16, 54) };
        let (src, dst) = (if v4 { 26 } else { 22 }, if v4 { 30 } else { 38 });
        armed
            && (v4 || v6)
            && table.iter().any(|k| {
                k.port == port
                    && (k.family == Family::V4) == v4
                    && k.vr_mac == frame[0..6]
                    && k.src[..a] == frame[src..src + a]
                    && k.dst[..a] == frame[dst..dst + a]
                    && k.sport == frame[ports..ports + 2]
                    && k.dport == frame[ports + 2..ports + 4]
            })
    }

    /// What the tcx program does with a frame that is no offloaded flow's: the host's stack gets
    /// it unless it is addressed to another host. A test run's device is the loopback, whose MAC
    /// is 00:00:00:00:00:00, so a unicast frame to any other MAC is another host's.
    fn passed(frame: &[u8]) -> u32 {
        let elsewhere = frame[0] & 1 == 0 && frame[..6] != [0; 6];
        if elsewhere {
            DROPPED
        } else {
            NEXT
        }
    }

    /// Where a frame's TCP segment lies by its IP header, if that adds up: at least a TCP
    /// header, within the frame.
    fn segment(f: &[u8]) -> Option<std::ops::Range<usize>> {
        let v4 = f[12..14] == [0x08, 0x00];
        let (start, len) = if v4 {
            (34, usize::from(u16::from_be_bytes([f[16], f[17]])).checked_sub(20)?)
        } else {
            (54, usize::from(u16::from_be_bytes([f[18], f[19]])))
        };
        (len >= 20 && start + len <= f.len()).then_some(start..start + len)
    }

    /// What forwarding does to a frame: next hop's MACs, TTL or hop limit −1, IPv4's checksum
    /// right; the TCP segment as it came.
    fn forwarded(frame: &[u8]) -> Vec<u8> {
        let mut f = frame.to_vec();
        f[0..6].copy_from_slice(&NEXT_HOP);
        f[6..12].copy_from_slice(&OUT_MAC);
        if f[12..14] == [0x08, 0x00] {
            f[22] -= 1;
            fix_checksum(&mut f);
        } else {
            f[21] -= 1;
        }
        f
    }

    #[test]
    fn an_offloaded_flows_frame_is_kept_from_the_socket_and_forwarded_by_tc_as_the_fast_path_would() {
        for family in [Family::V4, Family::V6] {
            let rig = Rig::new(0);
            let k = key(0, family);
            let f = frame(&k, 100);
            assert_eq!(rig.run(&f), (ACCEPTED, passed(&f), f.clone()), "{family:?}: an unarmed port forwards nothing itself");
            rig.arm(0);
            assert_eq!(rig.run(&f).0, ACCEPTED, "{family:?}: armed, but the flow is not in the table");
            assert_eq!(rig.run(&f).1, passed(&f));
            rig.offload(&k);
            let (filter, tc, out) = rig.run(&f);
            assert_eq!((filter, tc), (0, REDIRECTED), "{family:?}");
            assert_eq!(out, forwarded(&f), "{family:?}");
            if family == Family::V4 {
                assert!(verifies(0, &out[14..34]), "the incremental checksum is right");
            }
            let t = rig.tally(&k);
            assert_eq!((t.packets, t.bytes), (1, f.len() as u64));
            assert!(t.last_ns > 0);
        }
    }

    #[test]
    fn frames_a_router_must_look_at_take_pearls_path() {
        let rig = Rig::new(0);
        rig.arm(0);
        let (k4, k6) = (key(0, Family::V4), key(0, Family::V6));
        rig.offload(&k4);
        rig.offload(&k6);
        type Change = Box<dyn Fn(&mut Vec<u8>)>;
        let v4: Vec<(&str, Change)> = vec![
            ("TTL 1", Box::new(|f| f[22] = 1)),
            ("options (IHL 6)", Box::new(|f| f[14] = 0x46)),
            ("a first fragment", Box::new(|f| f[20] |= 0x20)),
            ("a later fragment", Box::new(|f| f[21] = 8)),
            ("UDP", Box::new(|f| f[23] = 17)),
            ("another VR's MAC", Box::new(|f| f[5] = 9)),
            ("another source port", Box::new(|f| f[35] ^= 1)),
            ("ARP", Box::new(|f| f[13] = 0x06)),
        ];
        for (what, change) in v4 {
            let mut f = frame(&k4, 10);
            change(&mut f);
            fix_checksum(&mut f);
            assert_eq!(rig.run(&f), (ACCEPTED, passed(&f), f.clone()), "IPv4, {what}");
        }
        let mut bad = frame(&k4, 10);
        bad[25] ^= 1;
        assert_eq!(rig.run(&bad), (ACCEPTED, passed(&bad), bad.clone()), "IPv4, a bad header checksum");
        let mut short = frame(&k4, 0);
        short.truncate(36);
        assert_eq!(rig.run(&short), (ACCEPTED, passed(&short), short.clone()), "IPv4, a frame too short for the ports");
        let v6: Vec<(&str, Change)> = vec![
            ("hop limit 1", Box::new(|f| f[21] = 1)),
            ("a hop-by-hop options header", Box::new(|f| f[20] = 0)),
            ("a fragment header", Box::new(|f| f[20] = 44)),
            ("version 4 in an IPv6 frame", Box::new(|f| f[14] = 0x40)),
            ("another destination", Box::new(|f| f[53] ^= 1)),
            ("another destination port", Box::new(|f| f[57] ^= 1)),
        ];
        for (what, change) in v6 {
            let mut f = frame(&k6, 10);
            change(&mut f);
            assert_eq!(rig.run(&f), (ACCEPTED, passed(&f), f.clone()), "IPv6, {what}");
        }
        assert_eq!(rig.run(&frame(&k4, 10)).1, REDIRECTED, "and the flows themselves are still offloaded");
        assert_eq!(rig.run(&frame(&k6, 10)).1, REDIRECTED);
        let other_port = Rig::new(1);
        other_port.arm(1);
        other_port.offload(&k4);
        assert_eq!(other_port.run(&frame(&k4, 10)).1, DROPPED, "a flow of port 0 on port 1's program: to a VR's MAC, not the host's");
    }

    #[test]
    fn the_host_gets_what_is_not_an_offloaded_flows_unless_it_is_addressed_to_another_host() {
        let rig = Rig::new(0);
        let k = key(0, Family::V4);
        let to_vr = frame(&k, 10);
        assert_eq!(rig.run(&to_vr), (ACCEPTED, DROPPED, to_vr.clone()), "to a VR's MAC: PEARL's socket has it, the stack drops it");
        let mut broadcast = to_vr.clone();
        broadcast[..6].fill(0xff);
        assert_eq!(rig.run(&broadcast), (ACCEPTED, NEXT, broadcast.clone()), "broadcast (ARP): the host sees it too");
        let mut multicast = to_vr.clone();
        multicast[..6].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 1]);
        assert_eq!(rig.run(&multicast), (ACCEPTED, NEXT, multicast.clone()), "multicast (IPv6 ND)");
        let mut to_host = to_vr;
        to_host[..6].fill(0);
        assert_eq!(rig.run(&to_host), (ACCEPTED, NEXT, to_host.clone()), "to the device's own MAC");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Whatever a frame's header holds, both programs agree with the plain statement, and
        /// what tc forwards is what forwarding makes of it.
        #[test]
        fn both_programs_follow_the_plain_statement(
            v6 in any::<bool>(),
            edits in proptest::collection::vec((0usize..60, any::<u8>()), 0..4),
            fix in any::<bool>(),
            armed in any::<bool>(),
            payload in prop_oneof![0usize..64, 64usize..1500, 1400usize..3400],
        ) {
            let rig = Rig::new(0);
            if armed {
                rig.arm(0);
            }
            let table = [key(0, Family::V4), key(0, Family::V6)];
            rig.offload(&table[0]);
            rig.offload(&table[1]);
            let mut f = frame(&table[usize::from(v6)], payload);
            for (at, byte) in edits {
                if at < f.len() {
                    f[at] = byte;
                }
            }
            if fix && f[12..14] == [0x08, 0x00] && f[14] == 0x45 {
                fix_checksum(&mut f);
            }
            let expected = offloaded(&f, armed, &table, 0);
            let (filter, tc, out) = rig.run(&f);
            if expected && segment(&f).is_none() {
                prop_assert_eq!((filter, tc), (0, DROPPED), "an IP length that does not add up");
            } else if expected {
                prop_assert_eq!((filter, tc), (0, REDIRECTED));
                prop_assert_eq!(out, forwarded(&f));
            } else {
                prop_assert_eq!((filter, tc), (ACCEPTED, passed(&f)));
                prop_assert_eq!(out, f);
            }
        }
    }
}
