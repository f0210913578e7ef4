//! `extract` on captured-looking frames: every key field and offset, checked by hand.

use crate::frames;

use std::net::IpAddr;

use pearl_wire::flow_key::vlan_tagged;
use pearl_wire::{extract, extract_batch, Extracted, L3Kind, WireError};

const PORT: u16 = 7;
const A: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
const B: [u8; 6] = [0x52, 0x54, 0x00, 0xab, 0xcd, 0xef];

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The fields every IP test asserts, in key order.
#[track_caller]
fn assert_ip(ex: &Extracted, src: &str, dst: &str, proto: u8, ports: (u16, u16)) {
    assert_eq!(ex.key.ip_src(), ip(src));
    assert_eq!(ex.key.ip_dst(), ip(dst));
    assert_eq!(ex.key.ip_proto(), proto);
    assert_eq!((ex.key.l4_src(), ex.key.l4_dst()), ports);
}

#[test]
fn arp_request_sets_only_ethernet_fields() {
    let ex = extract(frames::ARP_REQUEST, PORT).unwrap();
    assert_eq!(ex.info.kind, L3Kind::Arp);
    assert_eq!(ex.key.in_port(), PORT);
    assert_eq!(ex.key.eth_dst(), [0xff; 6]);
    assert_eq!(ex.key.eth_src(), A);
    assert_eq!(ex.key.ethertype(), 0x0806);
    assert_eq!(ex.key.vlan(), 0);
    assert_eq!((ex.key.ip_proto(), ex.key.l4_src(), ex.key.l4_dst()), (0, 0, 0));
    assert_eq!(ex.key.get(pearl_wire::Field::IpSrc), 0);
    assert_eq!((ex.info.l3_offset, ex.info.l4_offset, ex.info.ttl), (14, None, 0));
}

#[test]
fn ipv4_udp() {
    let ex = extract(frames::IPV4_UDP_DNS, PORT).unwrap();
    assert_eq!(ex.info.kind, L3Kind::Ipv4);
    assert_eq!((ex.key.eth_dst(), ex.key.eth_src(), ex.key.ethertype()), (B, A, 0x0800));
    assert_ip(&ex, "192.168.1.10", "8.8.8.8", 17, (54321, 53));
    assert_eq!((ex.info.l3_offset, ex.info.l4_offset, ex.info.ttl), (14, Some(34), 64));
    assert!(!ex.info.ipv4_options && !ex.info.fragment);
}

#[test]
fn ipv4_with_router_alert_option() {
    let ex = extract(frames::IPV4_OPTIONS_IGMP, PORT).unwrap();
    assert_ip(&ex, "192.168.1.10", "239.1.2.3", 2, (0, 0));
    assert_eq!(ex.key.eth_dst(), [0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]);
    assert_eq!((ex.info.l4_offset, ex.info.ttl), (Some(38), 1));
    assert!(ex.info.ipv4_options);
}

#[test]
fn icmpv4_echo_puts_type_and_code_in_ports() {
    let ex = extract(frames::IPV4_ICMP_ECHO, PORT).unwrap();
    assert_ip(&ex, "10.0.0.1", "10.0.0.2", 1, (8, 0));
    assert_eq!(ex.info.l4_offset, Some(34));
}

#[test]
fn ipv4_tcp_with_options() {
    let ex = extract(frames::IPV4_TCP_SYN, PORT).unwrap();
    assert_ip(&ex, "10.0.0.1", "10.0.0.2", 6, (49152, 80));
}

#[test]
fn ipv4_later_fragment_has_no_ports() {
    let ex = extract(frames::IPV4_FRAGMENT_LATER, PORT).unwrap();
    assert_ip(&ex, "10.0.0.1", "10.0.0.2", 17, (0, 0));
    assert!(ex.info.fragment);
    assert_eq!(ex.info.l4_offset, None);
}

#[test]
fn ipv6_udp() {
    let ex = extract(frames::IPV6_UDP_DNS, PORT).unwrap();
    assert_eq!((ex.info.kind, ex.key.ethertype()), (L3Kind::Ipv6, 0x86dd));
    assert_ip(&ex, "2001:db8::1", "2001:db8::53", 17, (40000, 53));
    assert_eq!((ex.info.l3_offset, ex.info.l4_offset, ex.info.ttl), (14, Some(54), 64));
    assert!(!ex.info.fragment && !ex.info.ipv4_options);
}

#[test]
fn ipv6_extension_chain_reaches_tcp() {
    let ex = extract(frames::IPV6_EXT_CHAIN_TCP, PORT).unwrap();
    assert_ip(&ex, "2001:db8:1::10", "2001:db8:2::20", 6, (49153, 443));
    assert_eq!(ex.info.l4_offset, Some(14 + 40 + 24));
    assert!(ex.info.fragment, "first fragment (offset 0, M=1) is still a fragment");
}

#[test]
fn ipv6_later_fragment_reports_fragment_protocol_without_ports() {
    let ex = extract(frames::IPV6_FRAGMENT_LATER, PORT).unwrap();
    assert_ip(&ex, "2001:db8::1", "2001:db8::53", 17, (0, 0));
    assert!(ex.info.fragment);
    assert_eq!(ex.info.l4_offset, None);
}

#[test]
fn single_tag_icmpv6_echo() {
    let ex = extract(frames::VLAN_IPV6_ICMPV6_ECHO, PORT).unwrap();
    assert_eq!((ex.key.vlan(), ex.key.ethertype()), (vlan_tagged(10), 0x86dd));
    assert_ip(&ex, "fe80::5054:ff:fe12:3456", "fe80::1", 58, (128, 0));
    assert_eq!((ex.info.l3_offset, ex.info.l4_offset, ex.info.ttl), (18, Some(58), 255));
}

#[test]
fn double_tag_keys_on_outer_vid_and_inner_ethertype() {
    let ex = extract(frames::QINQ_IPV4_UDP, PORT).unwrap();
    assert_eq!((ex.key.vlan(), ex.key.ethertype()), (vlan_tagged(100), 0x0800));
    assert_ip(&ex, "172.16.0.1", "172.16.0.2", 17, (5000, 6000));
    assert_eq!((ex.info.l3_offset, ex.info.l4_offset, ex.info.ttl), (22, Some(42), 63));
}

#[test]
fn non_ip_ethertype() {
    let ex = extract(frames::LOCAL_EXPERIMENTAL_88B5, PORT).unwrap();
    assert_eq!((ex.info.kind, ex.key.ethertype(), ex.info.l3_offset), (L3Kind::Other, 0x88b5, 14));
    assert_eq!(ex.key.eth_src(), [2, 0, 0, 0, 0, 1]);
    assert_eq!(ex.key.words[3..7], [0; 4], "no IP fields");
    assert_eq!((ex.key.ip_proto(), ex.key.l4_src(), ex.key.l4_dst()), (0, 0, 0));
}

#[test]
fn batch_matches_single_calls() {
    let batch: Vec<&[u8]> = frames::ALL.iter().map(|(_, f)| *f).collect();
    let mut out = vec![Err(WireError::BadIhl { offset: 0, ihl: 0 }); batch.len()];
    extract_batch(&batch, PORT, &mut out);
    for ((name, frame), got) in frames::ALL.iter().zip(&out) {
        assert_eq!(*got, extract(frame, PORT), "{name}");
        assert!(got.is_ok(), "{name}: {got:?}");
    }
}

#[test]
fn seed_corpus_holds_every_test_frame() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/extract");
    for (name, frame) in frames::ALL {
        let seed = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(seed, frame, "{name}");
    }
}

#[test]
fn walker_visits_each_extension_header_in_order() {
    let ip = pearl_wire::Ipv6Packet::new_checked(&frames::IPV6_EXT_CHAIN_TCP[14..]).unwrap();
    let chain: Vec<_> = ip.ext_headers().map(|h| h.unwrap()).collect();
    let kinds: Vec<_> = chain.iter().map(|h| (h.kind, h.offset, h.bytes.len())).collect();
    assert_eq!(kinds, [(0, 40, 8), (44, 48, 8), (60, 56, 8)]);
    let fragment = chain[1].fragment().unwrap();
    assert_eq!((fragment.offset, fragment.more, fragment.ident), (0, true, 0xdead_beef));
    let upper = ip.ext_headers().upper_layer().unwrap();
    assert_eq!((upper.protocol, upper.offset, upper.ext_headers), (6, 64, 3));
}

#[test]
fn icmp_of_the_other_ip_version_has_no_ports() {
    let mut frame = frames::IPV4_ICMP_ECHO.to_vec();
    frame[14 + 9] = 58;
    let ex = extract(&frame, PORT).unwrap();
    assert_ip(&ex, "10.0.0.1", "10.0.0.2", 58, (0, 0));
    assert_eq!(ex.info.l4_offset, Some(34));
}

/// The first fragment of a fragmented UDP datagram: its UDP length (3000) covers the whole
/// datagram, far beyond this fragment's 24 bytes of payload. A router forwards it as it came.
#[test]
fn ipv4_first_fragment_is_keyed_by_its_ports_not_judged_by_its_udp_length() {
    let mut f = frames::IPV4_FRAGMENT_LATER.to_vec();
    f[14 + 6] = 0x20; // MF set, offset 0
    f[14 + 7] = 0x00;
    f[34..42].copy_from_slice(&[0x9c, 0x40, 0x00, 0x35, 0x0b, 0xb8, 0x00, 0x00]); // 40000 → 53, length 3000
    let ex = extract(&f, PORT).unwrap();
    assert_ip(&ex, "10.0.0.1", "10.0.0.2", 17, (40000, 53));
    assert!(ex.info.fragment);
    assert_eq!(ex.info.l4_offset, Some(34));
}

/// RFC 1858's tiny fragment: a first fragment carrying only 4 bytes of a TCP header.
#[test]
fn a_tiny_first_fragment_that_splits_the_tcp_header_is_not_malformed() {
    let mut f = frames::IPV4_FRAGMENT_LATER[..38].to_vec();
    f[14 + 2..14 + 4].copy_from_slice(&24u16.to_be_bytes());
    f[14 + 6] = 0x20;
    f[14 + 7] = 0x00;
    f[14 + 9] = 6;
    f[34..38].copy_from_slice(&[0xc0, 0x01, 0x00, 0x50]);
    let ex = extract(&f, PORT).unwrap();
    assert_ip(&ex, "10.0.0.1", "10.0.0.2", 6, (49153, 80));
}
