//! The per-packet header extractor: one pass from the Ethernet header to the L4 ports.
//!
//! It fills the OpenFlow-style 10-tuple the classifier matches on and records where each layer
//! starts, so later stages (lookup, TTL decrement, MAC rewrite) never parse the frame again.
//! Every length is validated by the views' `new_checked`, so malformed input is an `Err`, never a
//! panic or an out-of-bounds read. IP and L4 checksums are not verified here: a router forwards
//! packets with bad L4 checksums, and end hosts drop them.

use core::net::{Ipv4Addr, Ipv6Addr};

use crate::arp::ArpPacket;
use crate::error::WireError;
use crate::ethernet::{EthernetFrame, EthernetRepr};
use crate::flow_key::{vlan_tagged, Field, FlowKey};
use crate::icmpv4::Icmpv4Packet;
use crate::icmpv6::Icmpv6Packet;
use crate::ipv4::Ipv4Packet;
use crate::ipv6::Ipv6Packet;
use crate::numbers::{ethertype, ip_proto};
use crate::tcp::TcpPacket;
use crate::udp::UdpPacket;

/// What the network layer of a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum L3Kind {
    Ipv4,
    Ipv6,
    Arp,
    /// Any other EtherType: only the Ethernet fields of the key are set.
    Other,
}

/// The classification key of one frame plus what the next stages need without re-parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extracted {
    /// in_port, MACs, innermost EtherType, outermost VLAN (`vlan_tagged(vid)`, 0 untagged);
    /// for IP also addresses, protocol (IPv6: after extension headers) and ports (ICMP: type
    /// and code; zero for non-first fragments and protocols without ports).
    pub key: FlowKey,
    pub kind: L3Kind,
    /// Where the network-layer header starts (after any VLAN tags).
    pub l3_offset: usize,
    /// Where the upper-layer header starts; `None` for non-IP frames and non-first fragments.
    pub l4_offset: Option<usize>,
    /// IPv4 TTL or IPv6 hop limit; 0 for non-IP frames.
    pub ttl: u8,
    /// IPv4 header longer than 20 bytes (routers send these to the slow path).
    pub ipv4_options: bool,
    /// Any fragment, the first one included.
    pub fragment: bool,
}

/// What a frame's headers say besides its key: what the next stages need without re-parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L3Info {
    pub kind: L3Kind,
    pub l3_offset: usize,
    pub l4_offset: Option<usize>,
    pub ttl: u8,
    pub ipv4_options: bool,
    pub fragment: bool,
}

/// Extracts the key of one frame received on `in_port`.
#[inline]
pub fn extract(frame: &[u8], in_port: u16) -> Result<Extracted, WireError> {
    let mut key = FlowKey::default();
    let i = extract_into(frame, in_port, &mut key)?;
    Ok(Extracted {
        key,
        kind: i.kind,
        l3_offset: i.l3_offset,
        l4_offset: i.l4_offset,
        ttl: i.ttl,
        ipv4_options: i.ipv4_options,
        fragment: i.fragment,
    })
}

/// Like [`extract`], but writes the key into `key` (overwriting all of it), so a pipeline can
/// build its batch of keys in place instead of copying each one. On error `key` is unspecified.
#[inline]
pub fn extract_into(frame: &[u8], in_port: u16, key: &mut FlowKey) -> Result<L3Info, WireError> {
    let eth = EthernetRepr::parse(&EthernetFrame::new_checked(frame)?)?;
    *key = FlowKey::default();
    key.set(Field::InPort, u128::from(in_port));
    key.set(Field::EthDst, mac_bits(eth.dst_addr));
    key.set(Field::EthSrc, mac_bits(eth.src_addr));
    key.set(Field::EtherType, u128::from(eth.ethertype));
    key.set(
        Field::VlanId,
        u128::from(eth.tags.outermost().map_or(0, |t| vlan_tagged(t.vid))),
    );
    let mut out = L3Info {
        kind: L3Kind::Other,
        l3_offset: eth.header_len(),
        l4_offset: None,
        ttl: 0,
        ipv4_options: false,
        fragment: false,
    };
    let l3 = &frame[out.l3_offset..];
    let at = out.l3_offset;
    match eth.ethertype {
        ethertype::IPV4 => {
            let ip = Ipv4Packet::new_checked(l3).map_err(|e| e.shifted(at))?;
            out.kind = L3Kind::Ipv4;
            out.ttl = ip.ttl();
            out.ipv4_options = ip.has_options();
            out.fragment = ip.is_fragment();
            key.set(Field::IpSrc, ipv4_bits(ip.src_addr()));
            key.set(Field::IpDst, ipv4_bits(ip.dst_addr()));
            key.set(Field::IpProto, u128::from(ip.protocol()));
            if ip.frag_offset() == 0 {
                let l4 = at + ip.header_len();
                out.l4_offset = Some(l4);
                set_ports(key, ip.protocol(), ip.payload(), l4, ip_proto::ICMP)?;
            }
        }
        ethertype::IPV6 => {
            let ip = Ipv6Packet::new_checked(l3).map_err(|e| e.shifted(at))?;
            let upper = ip.ext_headers().upper_layer().map_err(|e| e.shifted(at))?;
            out.kind = L3Kind::Ipv6;
            out.ttl = ip.hop_limit();
            out.fragment = upper.fragment.is_some();
            key.set(Field::IpSrc, ipv6_bits(ip.src_addr()));
            key.set(Field::IpDst, ipv6_bits(ip.dst_addr()));
            key.set(Field::IpProto, u128::from(upper.protocol));
            if upper.fragment.is_none_or(|f| f.is_first()) {
                let l4 = at + upper.offset;
                out.l4_offset = Some(l4);
                let segment = &l3[upper.offset..ip.packet_len()];
                set_ports(key, upper.protocol, segment, l4, ip_proto::ICMPV6)?;
            }
        }
        ethertype::ARP => {
            ArpPacket::new_checked(l3).map_err(|e| e.shifted(at))?;
            out.kind = L3Kind::Arp;
        }
        _ => {}
    }
    Ok(out)
}

/// Extracts every frame of a receive batch; `out[i]` answers `frames[i]` (extra slots untouched).
pub fn extract_batch(frames: &[&[u8]], in_port: u16, out: &mut [Result<Extracted, WireError>]) {
    for (frame, slot) in frames.iter().zip(out) {
        *slot = extract(frame, in_port);
    }
}

/// L4 source/destination into the key; `segment` (starting at frame offset `at`) is bounded by
/// the IP payload. `icmp_proto` is the ICMP of this IP version; the other one has no ports.
#[inline]
fn set_ports(
    key: &mut FlowKey,
    protocol: u8,
    segment: &[u8],
    at: usize,
    icmp_proto: u8,
) -> Result<(), WireError> {
    let shift = |e: WireError| e.shifted(at);
    let (src, dst) = match protocol {
        ip_proto::TCP => {
            let tcp = TcpPacket::new_checked(segment).map_err(shift)?;
            (tcp.src_port(), tcp.dst_port())
        }
        ip_proto::UDP => {
            let udp = UdpPacket::new_checked(segment).map_err(shift)?;
            (udp.src_port(), udp.dst_port())
        }
        ip_proto::ICMP if icmp_proto == ip_proto::ICMP => {
            let icmp = Icmpv4Packet::new_checked(segment).map_err(shift)?;
            (u16::from(icmp.msg_type()), u16::from(icmp.code()))
        }
        ip_proto::ICMPV6 if icmp_proto == ip_proto::ICMPV6 => {
            let icmp = Icmpv6Packet::new_checked(segment).map_err(shift)?;
            (u16::from(icmp.msg_type()), u16::from(icmp.code()))
        }
        _ => return Ok(()),
    };
    key.set(Field::L4Src, u128::from(src));
    key.set(Field::L4Dst, u128::from(dst));
    Ok(())
}

#[inline(always)]
fn mac_bits(mac: [u8; 6]) -> u128 {
    let [a, b, c, d, e, f] = mac;
    u128::from(u64::from_be_bytes([0, 0, a, b, c, d, e, f]))
}

/// IPv4 stored v4-mapped, the key's convention.
#[inline(always)]
fn ipv4_bits(addr: Ipv4Addr) -> u128 {
    (0xffff_u128 << 32) | u128::from(addr.to_bits())
}

#[inline(always)]
fn ipv6_bits(addr: Ipv6Addr) -> u128 {
    addr.to_bits()
}
