//! After the classifier: whose each frame is, and what becomes of the frames no VR claimed.

use super::slow_path_tx::{punt_admits, to_slow_path};
use super::views::present;
use super::Pipeline;
use crate::counters::Exception;
use crate::packet::{Packet, PacketPool};
use crate::punt::{is_neighbor_discovery, punt_class, punt_policy};
use crate::vr::SHARED_VR;
use pearl_classifier::VrId;
use pearl_wire::{FlowKey, L3Info, L3Kind};

impl Pipeline {
    /// Frames claimed by the shared-VR rule belong to the VR their destination MAC names; a
    /// verdict for a VR this plan does not have (none, by construction) counts as no verdict.
    /// Returns how many frames are claimed.
    pub(super) fn vr_stage(&mut self) -> usize {
        let s = &mut self.scratch;
        let shared = &self.slow_path.shared;
        let mut claimed = 0;
        for (v, key) in s.verdicts[..s.count].iter_mut().zip(&s.keys) {
            let Some(verdict) = v.as_mut() else { continue };
            if verdict.vr == SHARED_VR {
                let dst = key.eth_dst();
                let vr = usize::from(u16::from_le_bytes([dst[1], dst[2]]));
                match shared.get(vr) {
                    Some(true) => verdict.vr = VrId(vr as u16),
                    _ => *v = None,
                }
            } else if !matches!(self.vrs.get(verdict.vr.0 as usize), Some(Some(_))) {
                *v = None;
            }
            claimed += usize::from(v.is_some());
        }
        claimed
    }

    /// Frames no rule claimed: multicast and broadcast go to every VR on the port (as copies),
    /// unicast to an unknown MAC is dropped.
    pub(super) fn unclaimed_stage(&mut self, in_port: u16, batch: &mut Vec<Packet>, pool: &mut PacketPool) {
        let s = &mut self.scratch;
        let mut punt_now = None;
        let mut i = 0;
        while i < batch.len() {
            if s.verdicts[i].is_some() {
                i += 1;
                continue;
            }
            let p = batch.swap_remove(i);
            let (key, info) = (s.keys[i], s.info[i]);
            s.count -= 1;
            s.keys.swap(i, s.count);
            s.info.swap(i, s.count);
            s.verdicts.swap_remove(i);
            if key.eth_dst()[0] & 1 == 0 {
                self.counters.ports[in_port as usize].unclaimed.add(1);
                pool.give(p);
                continue;
            }
            let reason = multicast_exception(&key, &info);
            let class = punt_class(&key, reason);
            for &vr in &self.port_vrs[in_port as usize] {
                let policed = punt_policy(&key, reason, present(&self.vrs, vr).program.is_kernel_path()).is_some();
                if policed && !punt_admits(&mut self.punt, &self.vrs, &self.counters, &self.epoch, &mut punt_now, (vr, class)) {
                    continue;
                }
                to_slow_path(&self.counters, &mut self.slow_path, &mut self.taps, (vr, class), reason, &p);
            }
            pool.give(p);
        }
    }
}

fn multicast_exception(key: &FlowKey, x: &L3Info) -> Exception {
    match x.kind {
        L3Kind::Arp => Exception::Arp,
        L3Kind::Ipv6 if is_neighbor_discovery(key) => Exception::NeighborDiscovery,
        L3Kind::Ipv4 | L3Kind::Ipv6 => Exception::Multicast,
        L3Kind::Other => Exception::NonIp,
    }
}
