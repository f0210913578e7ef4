//! The bytes a fast VR emits and the answer each frame gets, checked frame by frame without
//! root: frames go in through a pcap file on one port and what the VR forwards comes out in a
//! pcap file on the other. Forwarded frames are compared with a reference written here from
//! RFC 1812 / RFC 8200 (new MACs, TTL or hop limit one lower, the IPv4 header checksum summed
//! anew rather than updated); every other frame must be counted under its exception or drop.

use crate::pcap_rig::PcapRig;
use pearl_control::parse_config;
use pearl_wire::checksum::checksum;
use std::collections::HashMap;
use std::time::{Duration, Instant};

const VR_IN: [u8; 6] = [2, 0, 0, 0, 1, 0];
const VR_OUT: [u8; 6] = [2, 0, 0, 0, 1, 1];
const NEXT_HOP: [u8; 6] = [2, 0xaa, 0, 0, 0, 2];
const HOST: [u8; 6] = [2, 0xee, 0, 0, 0, 1];
const VR: u16 = 1;

const CONFIG: &str = "workers: 1
ports:
  - {name: in, interface: in, driver: pcap}
  - {name: out, interface: out, driver: pcap}
vrs:
  - name: red
    id: 1
    code: ip
    interfaces:
      - {name: eth0, port: in, mac: '02:00:00:00:01:00', addresses: [10.0.0.1/24, '2001:db8:1::1/64']}
      - {name: eth1, port: out, mac: '02:00:00:00:01:01', addresses: [10.1.0.1/24, '2001:db8:2::1/64']}
    routes: [{prefix: 198.51.100.0/24, via: 10.1.0.2}, {prefix: '2001:db8:100::/48', via: '2001:db8:2::2'}]
    neighbors: [{ip: 10.1.0.2, mac: '02:aa:00:00:00:02', interface: eth1},
                {ip: '2001:db8:2::2', mac: '02:aa:00:00:00:02', interface: eth1}]
";

fn ethernet(dst: [u8; 6], ethertype: u16, l3: &[u8]) -> Vec<u8> {
    let mut f = [dst.as_slice(), &HOST, &ethertype.to_be_bytes(), l3].concat();
    f.resize(f.len().max(60), 0);
    f
}

/// IPv4 with a UDP datagram of 18 bytes; `options` (a multiple of 4 bytes) after the header.
fn ipv4(dst: [u8; 4], ttl: u8, options: &[u8]) -> Vec<u8> {
    let ihl = (20 + options.len()) / 4;
    let total = (ihl * 4 + 26) as u16;
    let mut h = vec![0x40 | ihl as u8, 0];
    h.extend(total.to_be_bytes());
    h.extend([0x12, 0x34, 0, 0, ttl, 17, 0, 0, 10, 0, 0, 2]);
    h.extend(dst);
    h.extend(options);
    let c = checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend([0x04, 0x00, 0x0f, 0xa0, 0, 26, 0, 0]);
    h.extend([0xab; 18]);
    h
}

fn ipv6(dst_last: u16, hop_limit: u8) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0, 0, 26, 17, hop_limit];
    h.extend([0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    h.extend([0x20, 0x01, 0x0d, 0xb8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    h.extend(dst_last.to_be_bytes());
    h.extend([0x04, 0x00, 0x0f, 0xa0, 0, 26, 0, 0]);
    h.extend([0xcd; 18]);
    h
}

fn arp_request() -> Vec<u8> {
    let mut a = vec![0, 1, 8, 0, 6, 4, 0, 1];
    a.extend(HOST);
    a.extend([10, 0, 0, 2, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1]);
    ethernet([0xff; 6], 0x0806, &a)
}

/// What a router sends for `frame` forwarded out of eth1: the reference the pipeline's bytes
/// are held to.
fn forwarded(frame: &[u8]) -> Vec<u8> {
    let mut f = frame.to_vec();
    f[0..6].copy_from_slice(&NEXT_HOP);
    f[6..12].copy_from_slice(&VR_OUT);
    match u16::from_be_bytes([f[12], f[13]]) {
        0x0800 => {
            f[22] -= 1;
            let ihl = usize::from(f[14] & 0xf) * 4;
            f[24..26].fill(0);
            let c = checksum(&f[14..14 + ihl]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
        }
        _ => f[21] -= 1,
    }
    f
}

enum Answer {
    Forward,
    Exception(&'static str),
    Drop(&'static str),
}

fn cases() -> Vec<(&'static str, Vec<u8>, Answer)> {
    let mut bad_sum = ethernet(VR_IN, 0x0800, &ipv4([198, 51, 100, 9], 64, &[]));
    bad_sum[25] ^= 0x01;
    vec![
        ("IPv4 to a route", ethernet(VR_IN, 0x0800, &ipv4([198, 51, 100, 7], 64, &[])), Answer::Forward),
        ("IPv4 with TTL 2", ethernet(VR_IN, 0x0800, &ipv4([198, 51, 100, 8], 2, &[])), Answer::Forward),
        ("IPv6 to a route", ethernet(VR_IN, 0x86dd, &ipv6(7, 64)), Answer::Forward),
        ("IPv4 with TTL 1", ethernet(VR_IN, 0x0800, &ipv4([198, 51, 100, 7], 1, &[])), Answer::Exception("ttl_expired")),
        ("IPv6 with hop limit 1", ethernet(VR_IN, 0x86dd, &ipv6(7, 1)), Answer::Exception("ttl_expired")),
        ("IPv4 without a route", ethernet(VR_IN, 0x0800, &ipv4([203, 0, 113, 1], 64, &[])), Answer::Exception("no_route")),
        ("IPv4 to the VR", ethernet(VR_IN, 0x0800, &ipv4([10, 0, 0, 1], 64, &[])), Answer::Exception("local")),
        ("IPv4 with options", ethernet(VR_IN, 0x0800, &ipv4([198, 51, 100, 7], 64, &[1, 1, 1, 0])), Answer::Exception("ipv4_options")),
        ("ARP request", arp_request(), Answer::Exception("arp")),
        ("IPv4 with a bad header checksum", bad_sum, Answer::Drop("bad_checksum")),
    ]
}

#[test]
fn each_frame_is_forwarded_as_a_router_must_or_counted_under_its_reason() {
    let cases = cases();
    let rig = PcapRig::new("pipeline-bytes", &cases.iter().map(|(_, f, _)| f.clone()).collect::<Vec<_>>());
    let config = parse_config(CONFIG).unwrap();
    let (d, _slow) = rig.start(&config, HashMap::new());
    // Every frame is answered: forwarded, handed to the slow path or dropped (the broadcast
    // ARP request reaches the VR as a copy, not through its receive counter).
    let answered = || {
        let total = |list: Vec<(&str, u64)>| list.iter().map(|(_, n)| n).sum::<u64>();
        d.sum(|c| c.vrs[VR as usize].forwarded_packets.get()) + total(d.exceptions(VR)) + total(d.drops(VR))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while answered() < cases.len() as u64 {
        assert!(Instant::now() < deadline, "{} of {} frames answered", answered(), cases.len());
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50)); // the last batch's transmit
    let (exceptions, drops) = (d.exceptions(VR), d.drops(VR));
    d.stop();

    let emitted = rig.emitted();
    let expected: Vec<Vec<u8>> = cases.iter().filter(|(_, _, a)| matches!(a, Answer::Forward)).map(|(_, f, _)| forwarded(f)).collect();
    assert_eq!(emitted.len(), expected.len(), "frames forwarded");
    for ((what, ..), (got, want)) in cases.iter().filter(|(_, _, a)| matches!(a, Answer::Forward)).zip(emitted.iter().zip(&expected)) {
        assert_eq!(got, want, "{what}: the bytes forwarded");
    }
    let count = |list: &[(&str, u64)], reason: &str| list.iter().find(|(r, _)| *r == reason).map_or(0, |(_, n)| *n);
    for (what, _, answer) in &cases {
        match answer {
            Answer::Forward => {}
            Answer::Exception(reason) => assert!(count(&exceptions, reason) >= 1, "{what}: counted as {reason}: {exceptions:?}"),
            Answer::Drop(reason) => assert!(count(&drops, reason) >= 1, "{what}: dropped as {reason}: {drops:?}"),
        }
    }
    let expected_exceptions = cases.iter().filter(|(_, _, a)| matches!(a, Answer::Exception(_))).count() as u64;
    assert_eq!(exceptions.iter().map(|(_, n)| n).sum::<u64>(), expected_exceptions, "{exceptions:?}");
    assert_eq!(drops.iter().map(|(_, n)| n).sum::<u64>(), 1, "{drops:?}");
}
