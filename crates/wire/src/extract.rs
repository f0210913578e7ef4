//! The per-packet header extractor: one pass from the Ethernet header to the L4 ports.
//!
//! It fills the OpenFlow-style 10-tuple the classifier matches on and records where each layer
//! starts, so later stages (lookup, TTL decrement, MAC rewrite) never parse the frame again.
//! Every Ethernet, ARP and IP length is validated by the views' `new_checked`, so malformed
//! input is an `Err`, never a panic or an out-of-bounds read. The transport header is read only
//! for its ports, as far as it is there, and never makes a frame an error: a router forwards on
//! the IP header, as Linux does with a UDP length or TCP data offset that does not fit, and end
//! hosts drop what they cannot take. Checksums are not verified here.

use core::net::{Ipv4Addr, Ipv6Addr};

use crate::arp::ArpPacket;
use crate::error::WireError;
use crate::ethernet::{EthernetFrame, EthernetRepr};
use crate::flow_key::{vlan_tagged, FlowFields, FlowKey};
use crate::ipv4::Ipv4Packet;
use crate::ipv6::Ipv6Packet;
use crate::numbers::{ethertype, ip_proto};

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
    pub info: L3Info,
}

/// What a frame's headers say besides its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L3Info {
    pub kind: L3Kind,
    /// Where the network-layer header starts (after any VLAN tags).
    pub l3_offset: usize,
    /// Where the upper-layer header starts; `None` for non-IP frames and non-first fragments.
    pub l4_offset: Option<usize>,
    /// IPv4 TTL or IPv6 hop limit; 0 for non-IP frames.
    pub ttl: u8,
    /// IPv4 header longer than 20 bytes (routers send these to the slow path).
    pub ipv4_options: bool,
    /// An IPv6 hop-by-hop options header, which every router on the path processes (RFC 8200
    /// §4.3): a slow path's job, as IPv4 options are.
    pub ipv6_hop_by_hop: bool,
    /// Any fragment, the first one included.
    pub fragment: bool,
}

impl Default for L3Info {
    fn default() -> L3Info {
        L3Info { kind: L3Kind::Other, l3_offset: 0, l4_offset: None, ttl: 0, ipv4_options: false, ipv6_hop_by_hop: false, fragment: false }
    }
}

/// Extracts the key of one frame received on `in_port`.
#[inline]
pub fn extract(frame: &[u8], in_port: u16) -> Result<Extracted, WireError> {
    let mut ex = Extracted { key: FlowKey::default(), info: L3Info::default() };
    extract_into(frame, in_port, &mut ex.key, &mut ex.info)?;
    Ok(ex)
}

/// Like [`extract`], but writes the key and the rest into the caller's slots (a pipeline's batch
/// arrays), field by field: building them aside and copying them in costs store-forwarding
/// stalls on every frame. On error both are unspecified.
#[inline]
pub fn extract_into(frame: &[u8], in_port: u16, key: &mut FlowKey, info: &mut L3Info) -> Result<(), WireError> {
    let eth = EthernetRepr::parse(&EthernetFrame::new_checked(frame)?)?;
    let mut f = FlowFields {
        in_port,
        eth_dst: mac_bits(eth.dst_addr),
        eth_src: mac_bits(eth.src_addr),
        ethertype: eth.ethertype,
        vlan: eth.tags.outermost().map_or(0, |t| vlan_tagged(t.vid)),
        ..FlowFields::default()
    };
    let at = eth.header_len();
    *info = L3Info { l3_offset: at, ..L3Info::default() };
    let l3 = &frame[at..];
    match eth.ethertype {
        ethertype::IPV4 => {
            let ip = Ipv4Packet::new_checked(l3).map_err(|e| e.shifted(at))?;
            info.kind = L3Kind::Ipv4;
            info.ttl = ip.ttl();
            info.ipv4_options = ip.has_options();
            info.fragment = ip.is_fragment();
            f.ip_src = ipv4_bits(ip.src_addr());
            f.ip_dst = ipv4_bits(ip.dst_addr());
            f.ip_proto = ip.protocol();
            if ip.frag_offset() == 0 {
                info.l4_offset = Some(at + ip.header_len());
                (f.l4_src, f.l4_dst) = ports(ip.protocol(), ip.payload(), ip_proto::ICMP);
            }
        }
        ethertype::IPV6 => {
            let ip = Ipv6Packet::new_checked(l3).map_err(|e| e.shifted(at))?;
            info.kind = L3Kind::Ipv6;
            info.ttl = ip.hop_limit();
            f.ip_src = ipv6_bits(ip.src_addr());
            f.ip_dst = ipv6_bits(ip.dst_addr());
            // A chain the walker cannot follow is still forwarded, as a router that reads only
            // the hop-by-hop header does: protocol is the first header, and no ports.
            f.ip_proto = ip.next_header();
            info.ipv6_hop_by_hop = ip.next_header() == ip_proto::HOP_BY_HOP;
            if let Ok(upper) = ip.ext_headers().upper_layer() {
                info.fragment = upper.fragment.is_some();
                f.ip_proto = upper.protocol;
                if upper.fragment.is_none_or(|f| f.is_first()) {
                    info.l4_offset = Some(at + upper.offset);
                    (f.l4_src, f.l4_dst) = ports(upper.protocol, &l3[upper.offset..ip.packet_len()], ip_proto::ICMPV6);
                }
            }
        }
        ethertype::ARP => {
            ArpPacket::new_checked(l3).map_err(|e| e.shifted(at))?;
            info.kind = L3Kind::Arp;
        }
        _ => {}
    }
    *key = FlowKey::pack(&f);
    Ok(())
}

/// Extracts every frame of a receive batch; `out[i]` answers `frames[i]` (extra slots untouched).
pub fn extract_batch(frames: &[&[u8]], in_port: u16, out: &mut [Result<Extracted, WireError>]) {
    for (frame, slot) in frames.iter().zip(out) {
        *slot = extract(frame, in_port);
    }
}

/// The ports (ICMP: type and code) as far as `segment`, the IP payload, holds them; what is
/// missing reads as zero. Nothing here is an error: a router forwards on the IP header, and a
/// transport header that is short, or whose lengths disagree with the packet (as a first
/// fragment's always do: they describe the whole datagram; RFC 1858 tiny fragments even split
/// the header), is the end hosts' business. `icmp_proto` is the ICMP of this IP version.
#[inline]
fn ports(protocol: u8, segment: &[u8], icmp_proto: u8) -> (u16, u16) {
    let word = |at: usize| segment.get(at..at + 2).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    match protocol {
        ip_proto::TCP | ip_proto::UDP => (word(0), word(2)),
        p if p == icmp_proto => match segment {
            [msg_type, code, ..] => (u16::from(*msg_type), u16::from(*code)),
            _ => (0, 0),
        },
        _ => (0, 0),
    }
}

#[inline(always)]
fn mac_bits(mac: [u8; 6]) -> u64 {
    let [a, b, c, d, e, f] = mac;
    u64::from_be_bytes([0, 0, a, b, c, d, e, f])
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
