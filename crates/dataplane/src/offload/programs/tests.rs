//! The programs run by the kernel itself (BPF_PROG_TEST_RUN, as root): loaded through the
//! verifier, then fed frames; checked against a plain Rust statement of which frames are an
//! offloaded flow's and of what forwarding does to them.

use super::super::entry::{Family, FlowAction, FlowKey, FlowTally, VALUE_LEN};
use super::{build, Maps, Side};
use crate::bpf_sys::{self, prog_test_run};
use crate::port::RxClass;
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
        Rig::on_socket_of(port, RxClass::All)
    }

    /// With the socket filter of a receive socket that takes `class`'s frames.
    fn on_socket_of(port: u32, class: RxClass) -> Rig {
        let flows = |f: Family| {
            bpf_sys::map_create(bpf_sys::MAP_TYPE_HASH, f.layout().len as u32, VALUE_LEN as u32, 64, b"test_flows")
                .expect("hash map (run as root)")
        };
        let flows = [flows(Family::V4), flows(Family::V6)];
        let armed = bpf_sys::map_create(bpf_sys::MAP_TYPE_ARRAY, 4, 4, 4, b"test_armed").expect("array map");
        let maps = Maps { armed: bpf_sys::raw(&armed), flows_v4: bpf_sys::raw(&flows[0]), flows_v6: bpf_sys::raw(&flows[1]) };
        let prog = |side, t| bpf_sys::prog_load(t, 0, &build(side, port, maps), b"test").expect("the verifier takes it");
        let filter = prog(Side::SocketFilter(class), bpf_sys::PROG_TYPE_SOCKET_FILTER);
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

#[test]
fn a_sockets_filter_keeps_it_to_its_class_of_frames_armed_or_not() {
    let k = key(0, Family::V4);
    let (short, long) = (frame(&k, 20), frame(&k, 1000));
    for armed in [false, true] {
        let (at_most, above) = (Rig::on_socket_of(0, RxClass::AtMost(500)), Rig::on_socket_of(0, RxClass::Above(500)));
        if armed {
            at_most.arm(0);
            above.arm(0);
        }
        let kept = |rig: &Rig, f: &[u8]| rig.run(f).0 != 0;
        assert!(kept(&at_most, &short) && !kept(&at_most, &long), "armed {armed}: at most 500 bytes");
        assert!(!kept(&above, &short) && kept(&above, &long), "armed {armed}: above 500 bytes");
        // An offloaded flow's frame stays out of the socket that takes its length too.
        above.offload(&k);
        assert!(!kept(&above, &long) || !armed, "armed {armed}: an offloaded flow's long frame");
    }
}
