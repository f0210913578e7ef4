//! `Decision::Forward`: out through a next hop, as RFC 1812 has a router forward (TTL or hop
//! limit −1, the next hop's MACs, the egress MTU held), or to the VR's kernel when it must
//! answer instead (expired, too big, a redirect, an unresolved or local next hop).

use super::action::Actions;
use super::nat::translate_out;
use super::offer::offer_flow;
use super::views::{next_hops_of, present};
use crate::counters::{Exception, VrDrop};
use crate::output::OutputSink;
use crate::packet::Packet;
use pearl_tables::nexthop::Adjacency;
use pearl_wire::{EthernetFrame, FlowKey, Gso, Ipv4Packet, Ipv6Packet, L3Info, L3Kind};

impl<O: OutputSink> Actions<'_, '_, O> {
    /// Out through next hop `nh` of VR `table`'s tables (its own, or those a leaked prefix
    /// comes from).
    #[inline(always)]
    pub(super) fn forward(&mut self, mut p: Packet, key: &FlowKey, x: &L3Info, (vr, queue): (u16, u16), table: u16, nh: u32) {
        let reason = match next_hops_of(self.vrs, self.guard, &mut self.next_hops, table).resolve(nh, key) {
            Some(&Adjacency::Forward { port, src, dst }) => {
                trim_to_ip_length(&mut p, x);
                if x.ttl <= 1 {
                    Exception::TtlExpired
                } else if port == p.in_port {
                    Exception::Redirect
                } else if l3_segment_len(&p, x) > present(self.vrs, table).mtu(port) as usize {
                    Exception::MtuExceeded
                } else if !self.nat.is_empty() && !translate_out(self.nat, vr, port, &mut p, x, self.now_s) {
                    return self.drop(p, vr, VrDrop::NatRefused);
                } else {
                    // An offloading VR imports no leaked prefix (`table` is its own);
                    // a running capture is refused by the offers themselves.
                    if let Some(offload) = &mut *self.offload {
                        let offered = offer_flow(offload, present(self.vrs, vr), &p, x, key, (vr, port), (src, dst));
                        if offered && !self.taps.is_empty() {
                            self.taps.note_offloaded(p.buffer_id());
                        }
                    }
                    decrement_ttl(&mut p, x);
                    let mut eth = EthernetFrame::new_unchecked(p.data_mut());
                    eth.set_dst_addr(dst);
                    eth.set_src_addr(src);
                    return self.leave(p, (port, vr, queue));
                }
            }
            Some(Adjacency::Local) => Exception::Local,
            // The kernel would drop it for its TTL before resolving anything.
            Some(Adjacency::Glean { .. }) if x.ttl <= 1 => Exception::TtlExpired,
            Some(&Adjacency::Glean { port }) if self.nat.iter().any(|(v, t)| *v == vr && t.port == port) => Exception::NatUnresolved,
            Some(&Adjacency::Glean { port }) => {
                if !self.unresolved_admits(vr, port, key) {
                    return self.drop(p, vr, VrDrop::UnresolvedPoliced);
                }
                Exception::UnresolvedNeighbor
            }
            None => Exception::NoRoute,
        };
        self.slow(p, key, vr, reason);
    }
}

/// Decrements the TTL or hop limit in place (incremental checksum); the caller has checked
/// that it does not expire.
#[inline(always)]
fn decrement_ttl(p: &mut Packet, x: &L3Info) {
    let l3 = &mut p.data_mut()[x.l3_offset..];
    match x.kind {
        L3Kind::Ipv4 => _ = Ipv4Packet::new_unchecked(l3).decrement_ttl(),
        L3Kind::Ipv6 => _ = Ipv6Packet::new_unchecked(l3).decrement_hop_limit(),
        _ => {}
    }
}

/// Cuts the frame to its IP packet: bytes past the IP length (a trailer, padding) are not
/// forwarded, as Linux's `pskb_trim_rcsum` cuts them; an IPv6 payload length of 0 without a
/// jumbo option (which goes to the slow path with its hop-by-hop header) leaves the header
/// alone. A super-packet's length fields are its own and stay.
#[inline(always)]
fn trim_to_ip_length(p: &mut Packet, x: &L3Info) {
    if p.offload.is_gso() {
        return;
    }
    let l3 = &p.data()[x.l3_offset..];
    let ip_len = match x.kind {
        L3Kind::Ipv4 => usize::from(u16::from_be_bytes([l3[2], l3[3]])),
        L3Kind::Ipv6 => 40 + usize::from(u16::from_be_bytes([l3[4], l3[5]])),
        _ => return,
    };
    if x.l3_offset + ip_len < p.len() {
        p.set_len(x.l3_offset + ip_len);
    }
}

/// The length the egress MTU is held against: the IP packet, or for a GSO super-packet the
/// largest IP packet it will be cut into (as Linux's `skb_gso_validate_network_len`).
#[inline(always)]
fn l3_segment_len(p: &Packet, x: &L3Info) -> usize {
    let o = &p.offload;
    if !o.is_gso() {
        return p.len() - x.l3_offset;
    }
    let l4 = usize::from(o.csum_start);
    let l4_header = match o.gso {
        Gso::UdpL4 => 8,
        // TCP's data offset, in 32-bit words.
        _ => p.data().get(l4 + 12).map_or(20, |b| usize::from(b >> 4) * 4),
    };
    l4.saturating_sub(x.l3_offset) + l4_header + usize::from(o.gso_size)
}
