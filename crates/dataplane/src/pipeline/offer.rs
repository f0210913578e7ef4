//! Forwarded TCP flows offered to the kernel's flow offload (`offload/`).

use crate::offload::{Family, FlowKey as OffloadKey, Offer, Offers};
use crate::packet::Packet;
use crate::vr::VrView;
use pearl_wire::{ip_proto, Field, FlowKey, L3Info, L3Kind};

/// Offers packet `p`'s flow, which VR `vr` forwards out of `out_port` with new MACs `(src,
/// dst)`, to the kernel if it may take it: an established TCP flow of an offloading VR between
/// offloading ports, where no frame that came in can be too big to leave (the kernel cannot
/// answer "too big"). True if it offered it.
pub(super) fn offer_flow(
    (offers, ports): &mut (Offers, Vec<bool>),
    view: &VrView,
    p: &Packet,
    x: &L3Info,
    key: &FlowKey,
    (vr, out_port): (u16, u16),
    macs: ([u8; 6], [u8; 6]),
) -> bool {
    let offloads = |q: u16| ports.get(usize::from(q)).copied().unwrap_or(false);
    let mtu = |q: u16| view.mtu(q);
    if !view.offload || !offloads(p.in_port) || !offloads(out_port) || mtu(p.in_port) > mtu(out_port) {
        return false;
    }
    let Some(family) = established_tcp(p, x) else { return false };
    offers.offer(offer_of(vr, family, key, (p.in_port, out_port), macs));
    true
}

/// The family of a TCP segment (or super-packet) of an established connection, neither opening
/// nor closing it, with nothing between its IP and TCP headers: a SYN flood offers nothing,
/// and both directions of a transfer, its data and its acknowledgements, are offered.
fn established_tcp(p: &Packet, x: &L3Info) -> Option<Family> {
    const SYN_FIN_RST: u8 = 0x07;
    let (family, proto_at, header) = match x.kind {
        L3Kind::Ipv4 => (Family::V4, 9, 20),
        L3Kind::Ipv6 => (Family::V6, 6, 40),
        _ => return None,
    };
    let data = p.data();
    let l4 = x.l3_offset + header;
    let tcp = !x.fragment && x.l4_offset == Some(l4) && data.get(x.l3_offset + proto_at) == Some(&ip_proto::TCP);
    (tcp && data.get(l4 + 13).is_some_and(|flags| flags & SYN_FIN_RST == 0)).then_some(family)
}

/// The offer of a TCP flow routed out of `out_port` with new MACs `(src, dst)`.
fn offer_of(vr: u16, family: Family, key: &FlowKey, ports: (u16, u16), (src, dst): ([u8; 6], [u8; 6])) -> Offer {
    let address = |f: Field| {
        let mut a = [0u8; 16];
        match family {
            Family::V4 => a[..4].copy_from_slice(&(key.get(f) as u32).to_be_bytes()),
            Family::V6 => a = key.get(f).to_be_bytes(),
        }
        a
    };
    let flow = OffloadKey {
        port: u32::from(ports.0),
        family,
        src: address(Field::IpSrc),
        dst: address(Field::IpDst),
        sport: (key.get(Field::L4Src) as u16).to_be_bytes(),
        dport: (key.get(Field::L4Dst) as u16).to_be_bytes(),
        vr_mac: key.eth_dst(),
    };
    Offer { vr, key: flow, out_port: ports.1, dst_mac: dst, src_mac: src }
}
