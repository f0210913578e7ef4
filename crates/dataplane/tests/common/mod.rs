//! Frames the data-plane tests send through in-memory ports.

use pearl_wire::{EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, PseudoHeader, UdpPacket, UdpRepr, VlanTags};
use std::net::Ipv4Addr;

/// A 64-byte IPv4 UDP frame from 10.0.0.2 to `dst` with TTL `ttl`, for `dst_mac`.
pub fn udp_frame(dst_mac: [u8; 6], dst: Ipv4Addr, ttl: u8) -> Vec<u8> {
    let payload = [0u8; 18];
    let mut f = vec![0u8; 14 + 20 + 8 + payload.len()];
    let eth = EthernetRepr { dst_addr: dst_mac, src_addr: [2, 0xee, 0, 0, 0, 1], tags: VlanTags::Untagged, ethertype: 0x0800 };
    eth.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    let src = Ipv4Addr::new(10, 0, 0, 2);
    let udp = UdpRepr { src_port: 1024, dst_port: 4000, payload: &payload };
    let mut ip = Ipv4Repr::new(src, dst, 17, udp.buffer_len());
    ip.ttl = ttl;
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut f[14..]));
    udp.emit(&mut UdpPacket::new_unchecked(&mut f[34..]), &PseudoHeader::V4 { src, dst });
    f
}
