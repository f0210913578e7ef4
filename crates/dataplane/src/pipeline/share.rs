//! The worker's time shared among its VRs (`worker_share`): charged per batch and round, and
//! enforced here, before the costly stages, while the worker falls behind.

use super::Pipeline;
use crate::counters::{Exception, VrDrop};
use crate::packet::{Packet, PacketPool};
use crate::punt::{is_neighbor_discovery, punt_class, PuntClass};
use pearl_wire::L3Kind;

impl Pipeline {
    /// Charges the worker's time to the VRs whose packets take it (`end_batch`, `end_round`),
    /// and while it cannot keep up, drops what a VR sends beyond its share here, before the
    /// stages that cost the most. Keeps the order of what stays.
    pub(super) fn share_stage(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) {
        let s = &mut self.scratch;
        let cells = &self.cells;
        if !self.share.engaged() {
            for v in &s.verdicts[..s.count] {
                self.share.admit(v.expect("claimed").vr.0, || 0);
            }
            return;
        }
        let mut kept = 0;
        for i in 0..s.count {
            let vr = s.verdicts[i].expect("claimed").vr.0;
            // Routing protocols and neighbour discovery go on to the punt path's own policing,
            // which puts them first: a VR flooding itself must keep its sessions. Asked only of
            // a frame past its VR's allowance (which then counts it as refused: a few frames of
            // a flooding VR's demand).
            let key = &s.keys[i];
            let admitted = self.share.admit(vr, || cells.share(vr))
                || s.info[i].kind == L3Kind::Arp
                || is_neighbor_discovery(key)
                || punt_class(key, Exception::Local) != PuntClass::Other;
            if admitted {
                batch.swap(kept, i);
                s.keys.swap(kept, i);
                s.info.swap(kept, i);
                s.verdicts.swap(kept, i);
                kept += 1;
                continue;
            }
            let c = &self.counters.vrs[vr as usize];
            c.rx_packets.add(1);
            c.rx_bytes.add(batch[i].len() as u64);
            c.drops[VrDrop::WorkerShare as usize].add(1);
        }
        for p in batch.drain(kept..) {
            pool.give(p);
        }
        s.count = kept;
        s.verdicts.truncate(kept);
    }

    /// Whether the worker did not keep up lately (VRs held to their shares, or a ring lost
    /// frames).
    pub fn falling_behind(&self) -> bool {
        self.share.falling_behind()
    }

    /// A receive ring lost frames: the worker counts as unable to keep up until `until_ns`.
    pub fn rings_overflowed(&mut self, until_ns: u64) {
        self.share.rings_overflowed(until_ns);
    }

    /// Charges a batch's worker time (`ns`, from the previous batch's end or the round's start)
    /// to the VRs whose packets it took.
    pub fn end_batch(&mut self, ns: u64) {
        self.share.end_batch(ns);
    }

    /// Charges the rest of a round (sending, the slow path) and renews the VRs' allowances of
    /// worker time when a window ends (`cpu_ns`: the worker thread's CPU time, read then).
    pub fn end_round(&mut self, start_ns: u64, end_ns: u64, cpu_ns: impl FnOnce() -> u64) {
        let cells = &self.cells;
        self.share.end_round(start_ns, end_ns, |vr| cells.share(vr), cpu_ns);
    }
}
