//! Fuzzes `extract`: it must never panic, and whatever it accepts must re-parse through the
//! views to the same offsets and key fields (the two paths share checks but not bookkeeping).

#![no_main]

use libfuzzer_sys::fuzz_target;
use pearl_wire::flow_key::vlan_tagged;
use pearl_wire::{
    ethertype, extract, ip_proto, ArpPacket, EthernetFrame, EthernetRepr, Extracted, Field,
    Ipv4Packet, Ipv6Packet, L3Kind, TcpPacket, UdpPacket,
};

const IN_PORT: u16 = 0xbeef;

fuzz_target!(|frame: &[u8]| {
    if let Ok(ex) = extract(frame, IN_PORT) {
        check_consistent(frame, &ex);
    }
});

fn check_consistent(frame: &[u8], ex: &Extracted) {
    let eth = EthernetRepr::parse(&EthernetFrame::new_checked(frame).unwrap()).unwrap();
    let key = &ex.key;
    assert_eq!(key.in_port(), IN_PORT);
    assert_eq!((key.eth_dst(), key.eth_src()), (eth.dst_addr, eth.src_addr));
    assert_eq!(key.ethertype(), eth.ethertype);
    assert_eq!(
        key.vlan(),
        eth.tags.outermost().map_or(0, |t| vlan_tagged(t.vid))
    );
    assert_eq!(ex.info.l3_offset, eth.header_len());
    assert!(ex.info.l3_offset <= frame.len());
    let l3 = &frame[ex.info.l3_offset..];

    let (ip_end, protocol) = match ex.info.kind {
        L3Kind::Ipv4 => {
            let ip = Ipv4Packet::new_checked(l3).unwrap();
            assert_eq!(key.ip_src(), ip.src_addr());
            assert_eq!(key.ip_dst(), ip.dst_addr());
            assert_eq!((key.ip_proto(), ex.info.ttl), (ip.protocol(), ip.ttl()));
            assert_eq!(
                (ex.info.ipv4_options, ex.info.fragment),
                (ip.has_options(), ip.is_fragment())
            );
            if let Some(l4) = ex.info.l4_offset {
                assert_eq!(l4, ex.info.l3_offset + ip.header_len());
            } else {
                assert_ne!(ip.frag_offset(), 0);
            }
            (ex.info.l3_offset + usize::from(ip.total_len()), ip.protocol())
        }
        L3Kind::Ipv6 => {
            let ip = Ipv6Packet::new_checked(l3).unwrap();
            // Raw bits: `FlowKey::ip_src()` shows an IPv4-mapped IPv6 address as IPv4.
            assert_eq!(key.get(Field::IpSrc), u128::from(ip.src_addr()));
            assert_eq!(key.get(Field::IpDst), u128::from(ip.dst_addr()));
            assert_eq!(ex.info.ttl, ip.hop_limit());
            assert!(!ex.info.ipv4_options);
            assert_eq!(ex.info.ipv6_hop_by_hop, ip.next_header() == ip_proto::HOP_BY_HOP);
            // A chain the walker cannot follow is forwarded: protocol is the first header.
            let Ok(headers) = ip.ext_headers().collect::<Result<Vec<_>, _>>() else {
                assert_eq!((key.ip_proto(), ex.info.l4_offset, ex.info.fragment), (ip.next_header(), None, false));
                assert_eq!((key.l4_src(), key.l4_dst()), (0, 0));
                return;
            };
            assert_eq!(ex.info.fragment, headers.iter().any(|h| h.fragment().is_some()));
            let last = headers.last().map_or(ip.next_header(), |h| h.next_header());
            assert_eq!(key.ip_proto(), last);
            if let Some(l4) = ex.info.l4_offset {
                let after = headers.last().map_or(40, |h| h.offset + h.bytes.len());
                assert_eq!(l4, ex.info.l3_offset + after);
            }
            (ex.info.l3_offset + ip.packet_len(), last)
        }
        L3Kind::Arp | L3Kind::Other => {
            assert_eq!(ex.info.kind == L3Kind::Arp, eth.ethertype == ethertype::ARP);
            assert!(eth.ethertype != ethertype::IPV4 && eth.ethertype != ethertype::IPV6);
            if ex.info.kind == L3Kind::Arp {
                ArpPacket::new_checked(l3).unwrap();
            }
            assert_eq!(
                (
                    ex.info.l4_offset,
                    ex.info.ttl,
                    key.ip_proto(),
                    key.l4_src(),
                    key.l4_dst()
                ),
                (None, 0, 0, 0, 0)
            );
            assert_eq!(key.words[3..7], [0; 4]);
            return;
        }
    };
    assert!(ip_end <= frame.len());
    let Some(l4) = ex.info.l4_offset else {
        assert_eq!((key.l4_src(), key.l4_dst()), (0, 0));
        return;
    };
    assert!(l4 <= ip_end);
    let segment = &frame[l4..ip_end];
    let word = |at: usize| segment.get(at..at + 2).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    let icmp = |p: u8| (p == ip_proto::ICMP && ex.info.kind == L3Kind::Ipv4) || (p == ip_proto::ICMPV6 && ex.info.kind == L3Kind::Ipv6);
    // Ports are read as far as the segment holds them, whatever its lengths say (a router
    // forwards on the IP header); where the transport view accepts the segment, the same.
    let ports = match protocol {
        ip_proto::TCP | ip_proto::UDP => (word(0), word(2)),
        p if icmp(p) => match segment {
            [t, c, ..] => (u16::from(*t), u16::from(*c)),
            _ => (0, 0),
        },
        _ => (0, 0),
    };
    let viewed = match protocol {
        ip_proto::TCP => TcpPacket::new_checked(segment).ok().map(|t| (t.src_port(), t.dst_port())),
        ip_proto::UDP => UdpPacket::new_checked(segment).ok().map(|u| (u.src_port(), u.dst_port())),
        _ => None,
    };
    assert!(viewed.is_none_or(|v| v == ports));
    assert_eq!((key.l4_src(), key.l4_dst()), ports);
}
