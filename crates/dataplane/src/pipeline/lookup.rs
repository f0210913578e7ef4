//! The destinations the programs asked to route, looked up in batches per VR and family.

use super::views::present;
use super::Pipeline;
use crate::counters::Exception;
use crate::program::Decision;
use pearl_lookup::fib::{AddrBits, FibView, MISS};
use pearl_lookup::rcu::ReadGuard;
use pearl_wire::Field;

impl Pipeline {
    /// Longest-prefix match for the batch, one `lookup_batch` per VR and family.
    pub(super) fn lookup_stage(&mut self, guard: &ReadGuard<'_>) {
        let s = &mut self.scratch;
        group_by_vr(&mut s.lookups.dst4);
        s.addrs4.clear();
        s.addrs4.extend(s.lookups.dst4.iter().map(|&(_, i)| s.keys[i as usize].get(Field::IpDst) as u32));
        lookup_groups(guard, &s.lookups.dst4, &s.addrs4, &mut s.hops, |vr| &present(&self.vrs, vr).fib4);
        route_decisions(&s.lookups.dst4, &s.hops, &mut s.decisions);
        group_by_vr(&mut s.lookups.dst6);
        s.addrs6.clear();
        s.addrs6.extend(s.lookups.dst6.iter().map(|&(_, i)| s.keys[i as usize].get(Field::IpDst)));
        lookup_groups(guard, &s.lookups.dst6, &s.addrs6, &mut s.hops, |vr| &present(&self.vrs, vr).fib6);
        route_decisions(&s.lookups.dst6, &s.hops, &mut s.decisions);
    }
}

/// Brings each VR's lookup jobs together; a batch is mostly one VR's, already in order.
#[inline]
pub(super) fn group_by_vr(jobs: &mut [(u16, u16)]) {
    if !jobs.is_sorted_by_key(|j| j.0) {
        jobs.sort_unstable_by_key(|j| j.0);
    }
}

/// Looks up each VR's jobs in its table `fib(vr)` with one batch lookup per VR (`jobs` sorted by
/// VR), results into `hops` in job order. When the batch spans several VRs, every table is
/// prefetched first: their misses then overlap (with thousands of VRs every table is cold).
#[inline]
pub(super) fn lookup_groups<'v, A: AddrBits>(
    guard: &ReadGuard<'_>,
    jobs: &[(u16, u16)],
    addrs: &[A],
    hops: &mut Vec<u32>,
    fib: impl Fn(u16) -> &'v FibView<A>,
) {
    hops.clear();
    hops.resize(jobs.len(), MISS);
    if jobs.first().map(|j| j.0) != jobs.last().map(|j| j.0) {
        let mut last = None;
        for &(vr, _) in jobs {
            if last != Some(vr) {
                fib(vr).prefetch(guard);
                last = Some(vr);
            }
        }
    }
    let mut start = 0;
    while start < jobs.len() {
        let vr = jobs[start].0;
        let end = start + jobs[start..].iter().take_while(|j| j.0 == vr).count();
        fib(vr).lookup_batch(guard, &addrs[start..end], &mut hops[start..end]);
        start = end;
    }
}

/// A destination's route as the packet's decision.
pub(super) fn route_decisions(jobs: &[(u16, u16)], hops: &[u32], decisions: &mut [Decision]) {
    for (&(_, i), &nh) in jobs.iter().zip(hops.iter()) {
        decisions[i as usize] = if nh == MISS { Decision::Slow(Exception::NoRoute) } else { Decision::Forward { nh } };
    }
}
