//! `Repr` parse ↔ emit: literal frames re-emit byte for byte, and random reprs round-trip.

use crate::frames;

use std::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use pearl_wire::vlan::VlanRepr;
use pearl_wire::{
    ethertype, extract, ip_proto, ArpOperation, ArpPacket, ArpRepr, EthernetFrame, EthernetRepr, Icmpv4Packet, Icmpv4Repr, Icmpv6Packet,
    Icmpv6Repr, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, Layer, PseudoHeader, UdpPacket, UdpRepr, VlanTags, WireError,
};

#[test]
fn arp_request_reemits_identically() {
    let eth = EthernetRepr::parse(&EthernetFrame::new_checked(frames::ARP_REQUEST).unwrap()).unwrap();
    let arp = ArpRepr::parse(&ArpPacket::new_checked(&frames::ARP_REQUEST[14..]).unwrap());
    assert_eq!(arp.operation, ArpOperation::Request);
    assert_eq!(arp.target_protocol_addr, Ipv4Addr::new(192, 168, 1, 1));
    let mut out = vec![0u8; frames::ARP_REQUEST.len()];
    eth.emit(&mut EthernetFrame::new_unchecked(&mut out[..]));
    arp.emit(&mut ArpPacket::new_unchecked(&mut out[14..]));
    assert_eq!(out, frames::ARP_REQUEST);
}

#[test]
fn ipv4_icmp_echo_reemits_identically() {
    let frame = frames::IPV4_ICMP_ECHO;
    let ip_packet = Ipv4Packet::new_checked(&frame[14..]).unwrap();
    let ip = Ipv4Repr::parse(&ip_packet).unwrap();
    let icmp = Icmpv4Repr::parse(&Icmpv4Packet::new_checked(ip_packet.payload()).unwrap()).unwrap();
    let Icmpv4Repr::EchoRequest { ident: 0x1234, seq_no: 1, data } = icmp else { panic!("{icmp:?}") };
    assert_eq!(data.len(), 56);
    let mut out = frame.to_vec();
    out[14..].fill(0);
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut out[14..]));
    icmp.emit(&mut Icmpv4Packet::new_unchecked(&mut out[34..]));
    assert_eq!(out, frame);
}

#[test]
fn ipv4_with_options_reemits_identically() {
    let frame = frames::IPV4_OPTIONS_IGMP;
    let ip = Ipv4Repr::parse(&Ipv4Packet::new_checked(&frame[14..]).unwrap()).unwrap();
    assert_eq!((ip.options, ip.ttl, ip.payload_len), (&[0x94, 4, 0, 0][..], 1, 8));
    let mut out = frame.to_vec();
    out[14..38].fill(0);
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut out[14..]));
    assert_eq!(out, frame);
}

#[test]
fn ipv6_udp_and_icmpv6_echo_reemit_identically() {
    let frame = frames::IPV6_UDP_DNS;
    let ip_packet = Ipv6Packet::new_checked(&frame[14..]).unwrap();
    let ip = Ipv6Repr::parse(&ip_packet);
    let pseudo = PseudoHeader::V6 { src: ip.src_addr, dst: ip.dst_addr };
    let udp = UdpRepr::parse(&UdpPacket::new_checked(ip_packet.payload()).unwrap(), &pseudo).unwrap();
    assert_eq!((udp.src_port, udp.dst_port, udp.payload.len()), (40000, 53, 29));
    let mut out = frame.to_vec();
    out[14..].fill(0);
    ip.emit(&mut Ipv6Packet::new_unchecked(&mut out[14..]));
    udp.emit(&mut UdpPacket::new_unchecked(&mut out[54..]), &pseudo);
    assert_eq!(out, frame);

    let frame = frames::VLAN_IPV6_ICMPV6_ECHO;
    let eth = EthernetRepr::parse(&EthernetFrame::new_checked(frame).unwrap()).unwrap();
    assert_eq!(eth.tags, VlanTags::Single(VlanRepr { tpid: ethertype::VLAN, pcp: 0, dei: false, vid: 10 }));
    let ip_packet = Ipv6Packet::new_checked(&frame[18..]).unwrap();
    let ip = Ipv6Repr::parse(&ip_packet);
    let icmp = Icmpv6Packet::new_checked(ip_packet.payload()).unwrap();
    let icmp = Icmpv6Repr::parse(&icmp, ip.src_addr, ip.dst_addr).unwrap();
    assert_eq!(icmp, Icmpv6Repr::EchoRequest { ident: 0x42, seq_no: 7, data: b"pearl-ping" });
    let mut out = vec![0u8; frame.len()];
    eth.emit(&mut EthernetFrame::new_unchecked(&mut out[..]));
    ip.emit(&mut Ipv6Packet::new_unchecked(&mut out[18..]));
    icmp.emit(&mut Icmpv6Packet::new_unchecked(&mut out[58..]), ip.src_addr, ip.dst_addr);
    assert_eq!(out, frame);
}

#[test]
fn every_test_frame_has_valid_ip_checksums() {
    for (name, frame) in frames::ALL {
        let ex = extract(frame, 0).unwrap();
        if ex.info.kind == pearl_wire::L3Kind::Ipv4 {
            let ip = Ipv4Packet::new_checked(&frame[ex.info.l3_offset..]).unwrap();
            assert!(Ipv4Repr::parse(&ip).is_ok(), "{name}");
        }
    }
}

#[test]
fn corrupted_checksums_are_rejected_by_parse() {
    let mut frame = frames::IPV4_UDP_DNS.to_vec();
    frame[14 + 10] ^= 1;
    let err = Ipv4Repr::parse(&Ipv4Packet::new_checked(&frame[14..]).unwrap()).unwrap_err();
    assert_eq!(err, WireError::BadChecksum { layer: Layer::Ipv4, offset: 10 });
    assert_eq!(err.reason(), "bad_checksum");

    let mut frame = frames::IPV4_UDP_DNS.to_vec();
    frame[50] ^= 0x80; // a payload byte
    let pseudo = PseudoHeader::V4 { src: Ipv4Addr::new(192, 168, 1, 10), dst: Ipv4Addr::new(8, 8, 8, 8) };
    let udp = UdpPacket::new_checked(&frame[34..]).unwrap();
    assert_eq!(UdpRepr::parse(&udp, &pseudo), Err(WireError::BadChecksum { layer: Layer::Udp, offset: 6 }));

    let frame = frames::VLAN_IPV6_ICMPV6_ECHO;
    let icmp = Icmpv6Packet::new_checked(&frame[58..]).unwrap();
    assert!(Icmpv6Repr::parse(&icmp, Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST).is_err(), "wrong pseudo-header");
}

/// Builds Ethernet + IPv4 (+ options) + UDP from reprs.
fn ipv4_udp_frame(eth: &EthernetRepr, ip: &Ipv4Repr, udp: &UdpRepr) -> Vec<u8> {
    let mut frame = vec![0u8; eth.header_len() + ip.buffer_len()];
    eth.emit(&mut EthernetFrame::new_unchecked(&mut frame[..]));
    let l3 = eth.header_len();
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut frame[l3..]));
    let pseudo = PseudoHeader::V4 { src: ip.src_addr, dst: ip.dst_addr };
    let l4 = l3 + ip.header_len();
    udp.emit(&mut UdpPacket::new_unchecked(&mut frame[l4..]), &pseudo);
    frame
}

fn vlan() -> impl Strategy<Value = VlanRepr> {
    (prop_oneof![Just(ethertype::VLAN), Just(ethertype::QINQ)], 0u8..8, any::<bool>(), 0u16..4096)
        .prop_map(|(tpid, pcp, dei, vid)| VlanRepr { tpid, pcp, dei, vid })
}

fn tags() -> impl Strategy<Value = VlanTags> {
    prop_oneof![
        Just(VlanTags::Untagged),
        vlan().prop_map(VlanTags::Single),
        (vlan(), vlan()).prop_map(|(outer, inner)| VlanTags::Double(outer, VlanRepr { tpid: ethertype::VLAN, ..inner })),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn ethernet_ipv4_udp_round_trip(
        macs in any::<([u8; 6], [u8; 6])>(),
        tags in tags(),
        addrs in any::<(u32, u32)>(),
        header in (any::<u8>(), any::<u8>(), any::<u16>(), any::<bool>()),
        option_words in proptest::collection::vec(any::<[u8; 4]>(), 0..=10),
        ports in any::<(u16, u16)>(),
        payload in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let eth = EthernetRepr { dst_addr: macs.0, src_addr: macs.1, tags, ethertype: ethertype::IPV4 };
        let options = option_words.concat();
        let udp = UdpRepr { src_port: ports.0, dst_port: ports.1, payload: &payload };
        let ip = Ipv4Repr {
            ttl: header.0,
            dscp_ecn: header.1,
            ident: header.2,
            dont_frag: header.3,
            options: &options,
            ..Ipv4Repr::new(Ipv4Addr::from(addrs.0), Ipv4Addr::from(addrs.1), ip_proto::UDP, udp.buffer_len())
        };
        let frame = ipv4_udp_frame(&eth, &ip, &udp);

        let eth_back = EthernetRepr::parse(&EthernetFrame::new_checked(&frame[..]).unwrap()).unwrap();
        prop_assert_eq!(eth_back, eth);
        let l3 = eth.header_len();
        let ip_packet = Ipv4Packet::new_checked(&frame[l3..]).unwrap();
        prop_assert_eq!(Ipv4Repr::parse(&ip_packet).unwrap(), ip);
        let pseudo = PseudoHeader::V4 { src: ip.src_addr, dst: ip.dst_addr };
        let udp_packet = UdpPacket::new_checked(ip_packet.payload()).unwrap();
        prop_assert_eq!(UdpRepr::parse(&udp_packet, &pseudo).unwrap(), udp);

        let ex = extract(&frame, 0).unwrap();
        prop_assert_eq!((ex.key.l4_src(), ex.key.l4_dst()), ports);
        prop_assert_eq!(ex.info.l4_offset, Some(l3 + ip.header_len()));
        prop_assert_eq!(ex.info.ipv4_options, !options.is_empty());
    }

    #[test]
    fn ipv6_icmpv6_echo_round_trip(
        addrs in any::<(u128, u128)>(),
        hop_limit in any::<u8>(),
        traffic_class in any::<u8>(),
        flow_label in 0u32..(1 << 20),
        echo in (any::<bool>(), any::<u16>(), any::<u16>()),
        data in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let (src, dst) = (Ipv6Addr::from(addrs.0), Ipv6Addr::from(addrs.1));
        let icmp = if echo.0 {
            Icmpv6Repr::EchoRequest { ident: echo.1, seq_no: echo.2, data: &data }
        } else {
            Icmpv6Repr::EchoReply { ident: echo.1, seq_no: echo.2, data: &data }
        };
        let ip = Ipv6Repr { hop_limit, traffic_class, flow_label, ..Ipv6Repr::new(src, dst, ip_proto::ICMPV6, icmp.buffer_len()) };
        let mut packet = vec![0u8; ip.buffer_len()];
        ip.emit(&mut Ipv6Packet::new_unchecked(&mut packet[..]));
        icmp.emit(&mut Icmpv6Packet::new_unchecked(&mut packet[40..]), src, dst);

        let ip_packet = Ipv6Packet::new_checked(&packet[..]).unwrap();
        prop_assert_eq!(Ipv6Repr::parse(&ip_packet), ip);
        let icmp_packet = Icmpv6Packet::new_checked(ip_packet.payload()).unwrap();
        prop_assert_eq!(Icmpv6Repr::parse(&icmp_packet, src, dst).unwrap(), icmp);
    }

    #[test]
    fn icmpv4_echo_and_arp_round_trip(
        ident in any::<u16>(), seq_no in any::<u16>(),
        data in proptest::collection::vec(any::<u8>(), 0..64),
        hw in any::<([u8; 6], [u8; 6])>(), ips in any::<(u32, u32)>(), op in 1u16..4,
    ) {
        let icmp = Icmpv4Repr::EchoReply { ident, seq_no, data: &data };
        let mut buf = vec![0u8; icmp.buffer_len()];
        icmp.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]));
        prop_assert_eq!(Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&buf[..]).unwrap()).unwrap(), icmp);

        let arp = ArpRepr {
            operation: ArpOperation::from(op),
            sender_hardware_addr: hw.0,
            sender_protocol_addr: Ipv4Addr::from(ips.0),
            target_hardware_addr: hw.1,
            target_protocol_addr: Ipv4Addr::from(ips.1),
        };
        let mut buf = vec![0u8; arp.buffer_len()];
        arp.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
        prop_assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&buf[..]).unwrap()), arp);
    }
}
