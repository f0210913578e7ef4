//! The NAT stages: inbound traffic given its private destination back before the program
//! routes it, outbound traffic source-NATed as it leaves (`nat.rs` holds the mappings).

use super::Pipeline;
use crate::nat::{NatTable, Translation};
use crate::packet::Packet;
use pearl_classifier::{Verdict, VrId};
use pearl_wire::{ip_proto, Field, L3Info, L3Kind};

impl Pipeline {
    /// Traffic back to a VR's reserved NAT ports gets its private destination back before the
    /// VR routes it. The classifier's NAT rules brought TCP and UDP to the VR; an ICMP echo
    /// reply has no port for a rule to see and comes to whichever VR's MAC the outside host
    /// resolved the shared address to, so the mapping it answers names its VR here.
    pub(super) fn nat_inbound_stage(&mut self, batch: &mut [Packet]) {
        let s = &mut self.scratch;
        for (i, p) in batch.iter_mut().enumerate().take(s.count) {
            let x = &s.info[i];
            if x.kind != L3Kind::Ipv4 || x.l4_offset.is_none() {
                continue;
            }
            let l4 = x.l4_offset.map(|o| o - x.l3_offset);
            let l3 = &p.data()[x.l3_offset..];
            let dst = u32::from_be_bytes([l3[16], l3[17], l3[18], l3[19]]);
            let Some((owner, table)) =
                self.nat.iter_mut().find(|(_, t)| t.port == p.in_port && t.address() == dst && t.claims(l3, l4, x.fragment, self.now_s))
            else {
                continue;
            };
            if let Some(v) = s.verdicts[i].as_mut() {
                if v.vr.0 != *owner {
                    *v = Verdict { vr: VrId(*owner), rule: None, action: 0 };
                }
            }
            let partial = p.offload.needs_csum();
            let l3 = &mut p.data_mut()[x.l3_offset..];
            if table.inbound(l3, l4, x.fragment, partial, self.now_s) == Translation::Done {
                let (dst, dport) =
                    (u32::from_be_bytes([l3[16], l3[17], l3[18], l3[19]]), l4.map_or(0, |o| u16::from_be_bytes([l3[o + 2], l3[o + 3]])));
                s.keys[i].set(Field::IpDst, dst.into());
                if l3[9] != ip_proto::ICMP {
                    s.keys[i].set(Field::L4Dst, dport.into());
                }
            }
        }
    }
}

/// Source-NATs a packet of VR `vr` leaving by `port` if that is the VR's outside interface;
/// false if it must be dropped (it cannot be translated).
#[inline]
pub(super) fn translate_out(nat: &mut [(u16, NatTable)], vr: u16, port: u16, p: &mut Packet, x: &L3Info, now_s: u32) -> bool {
    let Some((_, table)) = nat.iter_mut().find(|(v, t)| *v == vr && t.port == port) else { return true };
    if x.kind != L3Kind::Ipv4 {
        return true;
    }
    let partial = p.offload.needs_csum();
    let l4 = x.l4_offset.map(|o| o - x.l3_offset);
    table.outbound(&mut p.data_mut()[x.l3_offset..], l4, x.fragment, partial, now_s) != Translation::Refused
}
