//! The cache lines the next stage will read, loaded while the current one runs: what a batch
//! spread over many VRs reads of each is cold, and in a chain of pointers (view → cell → table →
//! next hop), so each load is started once the one before it has arrived.

use super::views::{next_hops_of, present};
use super::Pipeline;
use crate::output::OutputSink;
use crate::prefetch::prefetch;
use crate::program::Decision;
use pearl_classifier::Verdict;
use pearl_lookup::rcu::ReadGuard;
use pearl_tables::nexthop::Adjacency;
use pearl_wire::L3Kind;

impl Pipeline {
    /// Whether the batch holds several VRs' packets (then each may touch another VR's cold
    /// state); a batch is mostly one VR's.
    pub(super) fn spread_over_vrs(&self) -> bool {
        let v = &self.scratch.verdicts[..self.scratch.count];
        v.first().map(|v| v.map(|v| v.vr)) != v.last().map(|v| v.map(|v| v.vr))
    }

    /// The VRs of the batch's claimed packets, each once per run of its packets, with the
    /// position of the run's first packet.
    fn batch_vrs(&self) -> impl Iterator<Item = (usize, u16)> + '_ {
        let v = &self.scratch.verdicts[..self.scratch.count];
        v.iter()
            .enumerate()
            .filter(|&(i, x)| i == 0 || v[i - 1].map(|v| v.vr) != x.map(|v| v.vr))
            .filter_map(|(i, x)| x.map(|v| (i, v.vr.0)))
    }

    /// Starts loading what every stage reads of each VR of the batch: its view (which
    /// `vr_stage` reads first), counters, share account, program state and the cells of its
    /// tables. The prefetches are staged like the pointers they follow: here the VR's own
    /// lines; its tables once their cells have arrived, in `prefetch_vr_tables`; and so on down
    /// to the next hops the lookups named, in `prefetch_next_hops`.
    pub(super) fn prefetch_vr_state(&self) {
        for (i, vr) in self.batch_vrs() {
            self.cells.prefetch(vr, self.scratch.info[i].kind);
            if let Some(Some(view)) = self.vrs.get(vr as usize) {
                prefetch(view);
            }
            if let Some(counters) = self.counters.vrs.get(vr as usize) {
                counters.prefetch_hot();
            }
            self.share.prefetch(vr);
        }
    }

    /// Starts loading each VR's routes of the family its packets are, their cell having
    /// arrived.
    pub(super) fn prefetch_vr_tables(&self, guard: &ReadGuard<'_>) {
        for (i, vr) in self.batch_vrs() {
            let view = present(&self.vrs, vr);
            match self.scratch.info[i].kind {
                L3Kind::Ipv4 => view.fib4.prefetch(guard),
                L3Kind::Ipv6 => view.fib6.prefetch(guard),
                L3Kind::Arp | L3Kind::Other => {}
            }
        }
    }

    /// Starts loading each VR's next-hop table, its cell having arrived.
    pub(super) fn prefetch_next_hop_tables(&self, guard: &ReadGuard<'_>) {
        for (_, vr) in self.batch_vrs() {
            prefetch(present(&self.vrs, vr).adjacencies.load(guard));
        }
    }

    /// Starts loading the next-hop entries the batch's destinations were routed to.
    pub(super) fn prefetch_next_hops(&self, guard: &ReadGuard<'_>) {
        let s = &self.scratch;
        let mut next_hops = None;
        for (d, &table) in s.decisions.iter().zip(&s.tables) {
            if let Decision::Forward { nh } = *d {
                next_hops_of(&self.vrs, guard, &mut next_hops, table).prefetch(nh);
            }
        }
    }

    /// Starts loading the output queues the batch's packets are bound for: each queue's state,
    /// then, in a second pass (that state having arrived), the slot each packet will take. The
    /// action stage resolves each next hop again, from entries this pass brought into cache.
    pub(super) fn prefetch_output(&mut self, guard: &ReadGuard<'_>, out: &impl OutputSink) {
        let s = &mut self.scratch;
        s.bound.clear();
        let mut next_hops = None;
        for (i, decision) in s.decisions.iter().enumerate() {
            let port = match *decision {
                Decision::Send { port } => port,
                Decision::Forward { nh } => match next_hops_of(&self.vrs, guard, &mut next_hops, s.tables[i]).resolve(nh, &s.keys[i]) {
                    Some(&Adjacency::Forward { port, .. }) => port,
                    _ => continue,
                },
                _ => continue,
            };
            let Some(Verdict { vr, action, .. }) = s.verdicts[i] else { continue };
            out.prefetch_queue(port, vr.0, action as u16);
            s.bound.push((port, vr.0, action as u16));
        }
        for &(port, vr, queue) in &s.bound {
            out.prefetch_tail(port, vr, queue);
        }
    }
}
