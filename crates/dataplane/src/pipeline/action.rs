//! The last stage before the output: each packet's decision carried out by the function of its
//! `Decision` variant, chosen by one exhaustive `match` (`forward` in forward.rs; handing runs to
//! the output in output.rs). What every forwarded packet runs is `#[inline(always)]`: it was one loop
//! body before the split, and the functions' files are other codegen units now.

use super::slow_path_tx::{punt_admits, to_slow_path, SlowPathTx};
use super::views::present;
use super::{Pipeline, Scratch};
use crate::capture::{CapturePoint, Taps};
use crate::counters::{Exception, VrDrop, WorkerCounters};
use crate::nat::NatTable;
use crate::offload::Offers;
use crate::output::OutputSink;
use crate::packet::{Packet, PacketPool};
use crate::program::Decision;
use crate::punt::{punt_class, punt_policy, PuntClass, PuntPolicer};
use crate::trace::Outcome;
use crate::unresolved::UnresolvedPolicer;
use crate::vr::VrView;
use pearl_classifier::Verdict;
use pearl_lookup::rcu::ReadGuard;
use pearl_tables::nexthop::NextHopTable;
use pearl_wire::{Field, FlowKey};
use std::time::Instant;

/// What a batch's decisions are carried out with: the pipeline's parts, borrowed apart, so that
/// the next hops of a run's VR stay at hand while counters, punt buckets and the output change.
pub(super) struct Actions<'a, 'g, O> {
    pub(super) vrs: &'a [Option<VrView>],
    pub(super) guard: &'a ReadGuard<'g>,
    /// Batches are mostly one VR's: its next hops are looked up once per run of its packets.
    pub(super) next_hops: Option<(u16, &'a NextHopTable)>,
    pub(super) counters: &'a WorkerCounters,
    pub(super) taps: &'a mut Taps,
    punt: &'a mut [PuntPolicer],
    unresolved: &'a mut UnresolvedPolicer,
    /// The clock is read once per batch, and only by a batch with frames for the slow path.
    punt_now: Option<u64>,
    epoch: &'a Instant,
    slow_path: &'a mut SlowPathTx,
    pub(super) nat: &'a mut [(u16, NatTable)],
    pub(super) now_s: u32,
    pub(super) offload: &'a mut Option<(Offers, Vec<bool>)>,
    /// The run of forwarded packets being gathered, for (port, VR, queue) `run_to`, and what
    /// the output refused of the last.
    pub(super) run: &'a mut Vec<Packet>,
    pub(super) refused: &'a mut Vec<Packet>,
    pub(super) run_to: (u16, u16, u16),
    pub(super) out: &'a mut O,
    pub(super) pool: &'a mut PacketPool,
}

impl Pipeline {
    /// Applies each decision: forward (TTL −1, MAC rewrite, enqueue), send as it stands (or
    /// copies of it), hand to the slow path, or drop.
    pub(super) fn action_stage(
        &mut self,
        guard: &ReadGuard<'_>,
        batch: &mut Vec<Packet>,
        pool: &mut PacketPool,
        out: &mut impl OutputSink,
    ) {
        let Scratch { keys, info, verdicts, decisions, tables, run, refused, .. } = &mut self.scratch;
        let mut act = Actions {
            vrs: &self.vrs,
            guard,
            next_hops: None,
            counters: &self.counters,
            taps: &mut self.taps,
            punt: &mut self.punt,
            unresolved: &mut self.unresolved,
            punt_now: None,
            epoch: &self.epoch,
            slow_path: &mut self.slow_path,
            nat: &mut self.nat,
            now_s: self.now_s,
            offload: &mut self.offload,
            run,
            refused,
            run_to: (0, 0, 0),
            out,
            pool,
        };
        for (i, p) in batch.drain(..).enumerate() {
            let Verdict { vr, action, .. } = verdicts[i].expect("claimed");
            let (vr, queue) = (vr.0, action as u16);
            act.received(vr, &p);
            let key = &keys[i];
            match decisions[i] {
                // A leaked prefix's packets take the source VR's next hop, interface and MTU
                // (`tables[i]`); they stay the importing VR's for counters, queues and
                // exceptions (its kernel, which has their frames' interface, answers them).
                Decision::Forward { nh } => act.forward(p, key, &info[i], (vr, queue), tables[i], nh),
                // Every lookup job gets a result; an unanswered one would be a route miss.
                Decision::Lookup => act.slow(p, key, vr, Exception::NoRoute),
                Decision::Send { port } => act.send(p, (vr, queue), port),
                Decision::Copies { interfaces, slow } => act.copies(p, key, (vr, queue), interfaces, slow),
                Decision::Slow(Exception::KernelVr) => act.kernel_vr(p, key, &info[i], vr),
                Decision::Slow(reason) => act.slow(p, key, vr, reason),
                Decision::Drop(reason) => act.drop(p, vr, reason),
            }
        }
        act.flush();
    }
}

impl<O: OutputSink> Actions<'_, '_, O> {
    /// Counts a packet its VR received, and shows it to the captures.
    #[inline(always)]
    fn received(&mut self, vr: u16, p: &Packet) {
        if !self.taps.is_empty() {
            self.taps.offer(CapturePoint::Rx, vr, p.in_port, p.data());
        }
        let c = &self.counters.vrs[vr as usize];
        c.rx_packets.add(1);
        c.rx_bytes.add(p.len() as u64);
    }

    /// Out of `port` as the frame stands; a port the VR has no interface on drops it.
    #[inline(always)]
    fn send(&mut self, p: Packet, (vr, queue): (u16, u16), port: u16) {
        if present(self.vrs, vr).mtu(port) == 0 {
            return self.drop(p, vr, VrDrop::ProgramBadPort);
        }
        self.leave(p, (port, vr, queue));
    }

    /// The frame to the VR's kernel if `slow`, then out of each interface whose bit is set in
    /// `interfaces`, all but the last a new buffer from the pool.
    #[inline]
    fn copies(&mut self, p: Packet, key: &FlowKey, (vr, queue): (u16, u16), interfaces: u64, slow: bool) {
        let view = present(self.vrs, vr);
        let class = punt_class(key, Exception::Program);
        if slow && self.punt_admits(vr, class) {
            to_slow_path(self.counters, self.slow_path, self.taps, (vr, class), Exception::Program, &p);
        }
        // The last copy is the packet itself; the others are new buffers.
        let mut p = Some(p);
        let mut left = interfaces;
        while left != 0 {
            let k = left.trailing_zeros() as usize;
            left &= left - 1;
            let Some(&port) = view.facts.interface_ports.get(k) else {
                self.counters.vrs[vr as usize].drops[VrDrop::ProgramBadPort as usize].add(1);
                continue;
            };
            let copy = match (left, p.as_ref()) {
                (0, _) => p.take(),
                (_, Some(original)) => self.pool.copy_of(original),
                (_, None) => None,
            };
            let Some(copy) = copy else {
                self.counters.vrs[vr as usize].drops[VrDrop::CopyNoBuffer as usize].add(1);
                continue;
            };
            self.leave(copy, (port, vr, queue));
        }
        if let Some(p) = p {
            self.pool.give(p);
        }
    }

    /// To the VR's kernel, counted under `reason` and policed per VR and class.
    #[inline]
    pub(super) fn slow(&mut self, p: Packet, key: &FlowKey, vr: u16, reason: Exception) {
        let policy = punt_policy(key, reason, false);
        let class = policy.unwrap_or_else(|| punt_class(key, reason));
        if policy.is_none() || self.punt_admits(vr, class) {
            to_slow_path(self.counters, self.slow_path, self.taps, (vr, class), reason, &p);
        } else if !self.taps.is_empty() {
            self.taps.note(p.buffer_id(), Outcome::Dropped(VrDrop::PuntPoliced));
        }
        self.pool.give(p);
    }

    /// Dropped, counted to the VR under `reason`.
    #[inline(always)]
    pub(super) fn drop(&mut self, p: Packet, vr: u16, reason: VrDrop) {
        if !self.taps.is_empty() {
            self.taps.note(p.buffer_id(), Outcome::Dropped(reason));
        }
        self.counters.vrs[vr as usize].drops[reason as usize].add(1);
        self.pool.give(p);
    }

    /// Whether a packet for a neighbour VR `vr` has not resolved on `port` yet may go on to the
    /// VR's kernel (`unresolved.rs`): a bound before any copy, so a flood of such destinations
    /// cannot crowd the VR's resolved traffic out.
    #[inline]
    pub(super) fn unresolved_admits(&mut self, vr: u16, port: u16, key: &FlowKey) -> bool {
        let now = *self.punt_now.get_or_insert_with(|| self.epoch.elapsed().as_nanos() as u64);
        self.unresolved.admit(vr, port, key.get(Field::IpDst), now.max(1))
    }

    #[inline]
    fn punt_admits(&mut self, vr: u16, class: PuntClass) -> bool {
        punt_admits(self.punt, self.vrs, self.counters, self.epoch, &mut self.punt_now, (vr, class))
    }
}
