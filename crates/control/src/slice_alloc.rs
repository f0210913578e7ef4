//! Which workers run a VR's traffic: PdP's SliceAlloc (Algorithm 1 of "PdP", seed 004 §3.3),
//! an online best-fit bin packing of the VRs' processing needs over the workers' capacities.
//!
//! A VR that needs R frames a second, with C the frames a second one worker forwards, gets
//! ⌊R / C⌋ whole workers (idle ones) and, for the remainder r = R mod C, a slice of r on the
//! worker whose free capacity exceeds r by the least (best fit), so that its traffic spreads
//! over as few workers as its need allows: fewer workers, less reordering, and whole workers
//! left free for the VRs that need them. Allocation is online, as in the paper: a VR keeps its
//! slices while it stays and asks for the same; only VRs that are new or changed are placed,
//! in the configuration's order, into what the others leave free.
//!
//! What a VR needs: `resources.workers: k` is k whole workers; otherwise `resources.pps`. A VR
//! that asks for neither, or for all the node's workers, or that rotates its frames over every
//! worker (`distribution: round_robin`), runs on every worker, as it did before slicing.

use crate::model::{Config, Distribution, VrConfig};
use std::collections::BTreeMap;

/// Frames a second one worker forwards when `node.capacity.pps` does not say: its CPU cost per
/// 64-byte frame on veth in `docs/benchmarks/e2e.md` (~1,040 ns, one fast VR, AF_PACKET rx),
/// rounded down.
pub const WORKER_PPS: u64 = 950_000;

/// A VR's share of one worker (PdP's "FE guest machine").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    pub worker: usize,
    pub pps: u64,
}

/// The slices every VR that needs fewer than all workers holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Slices {
    workers: usize,
    /// C: what one worker forwards.
    capacity: u64,
    /// VR id → (what it needs, its slices).
    by_vr: BTreeMap<u16, (u64, Vec<Slice>)>,
}

impl Slices {
    /// `config`'s VRs placed online after `previous`: those that stay with the same need keep
    /// their slices, the others are placed in the configuration's order.
    pub fn allocate(previous: &Slices, config: &Config) -> Slices {
        let capacity = worker_capacity(config);
        let mut next = Slices { workers: config.workers, capacity, by_vr: BTreeMap::new() };
        let needs: Vec<(u16, Option<u64>)> = config.vrs.iter().map(|v| (v.id, need(v, config.workers, capacity))).collect();
        let comparable = previous.workers == next.workers && previous.capacity == capacity;
        // What each worker has not given to any slice (nothing, if it is given more than it has).
        let mut available = vec![capacity; config.workers];
        for &(id, need) in &needs {
            if let (Some(need), Some(kept)) = (need, previous.by_vr.get(&id).filter(|_| comparable)) {
                if kept.0 == need {
                    kept.1.iter().for_each(|s| available[s.worker] = available[s.worker].saturating_sub(s.pps));
                    next.by_vr.insert(id, kept.clone());
                }
            }
        }
        for (id, need) in needs {
            if let Some(need) = need.filter(|_| !next.by_vr.contains_key(&id)) {
                let slices = slice_alloc(&mut available, capacity, need);
                next.by_vr.insert(id, (need, slices));
            }
        }
        next
    }

    /// The slices VR `vr` holds; `None`: it runs on every worker.
    pub fn of(&self, vr: u16) -> Option<&[Slice]> {
        self.by_vr.get(&vr).map(|(_, s)| s.as_slice())
    }

    /// The workers VR `vr` runs on.
    pub fn workers_of(&self, vr: u16) -> Vec<usize> {
        self.of(vr).map_or_else(|| (0..self.workers).collect(), |held| held.iter().map(|s| s.worker).collect())
    }
}

/// Algorithm 1, taking the slices out of `available`. Where no worker has room (the node is
/// oversubscribed; admission bounds `pps` by the node's capacity, but bins fragment), the
/// worker with the most room left takes the slice, so that a VR always runs somewhere.
fn slice_alloc(available: &mut [u64], capacity: u64, need: u64) -> Vec<Slice> {
    let workers = available.len();
    let mut slices = Vec::new();
    for _ in 0..need / capacity {
        let idle = (0..workers).find(|&w| available[w] == capacity && !holds(&slices, w));
        let w = idle.unwrap_or_else(|| roomiest(available, &slices));
        take(available, &mut slices, w, capacity);
    }
    let r = need % capacity;
    if r > 0 {
        let best = (0..workers).filter(|&w| available[w] >= r && !holds(&slices, w)).min_by_key(|&w| available[w] - r);
        let w = best.unwrap_or_else(|| roomiest(available, &slices));
        take(available, &mut slices, w, r);
    }
    slices
}

fn take(available: &mut [u64], slices: &mut Vec<Slice>, w: usize, pps: u64) {
    available[w] = available[w].saturating_sub(pps);
    slices.push(Slice { worker: w, pps });
}

fn holds(slices: &[Slice], w: usize) -> bool {
    slices.iter().any(|s| s.worker == w)
}

/// The worker with the most room that the VR does not hold yet (any, once it holds them all).
fn roomiest(available: &[u64], slices: &[Slice]) -> usize {
    let free = (0..available.len()).filter(|&w| !holds(slices, w)).max_by_key(|&w| (available[w], std::cmp::Reverse(w)));
    free.unwrap_or_else(|| (0..available.len()).max_by_key(|&w| (available[w], std::cmp::Reverse(w))).unwrap_or(0))
}

/// C: `node.capacity.pps` over the workers, or what one worker measured forwards.
fn worker_capacity(config: &Config) -> u64 {
    config.node.capacity.get("pps").map_or(WORKER_PPS, |pps| (pps / config.workers.max(1) as u64).max(1))
}

/// R, in frames a second; `None`: every worker.
fn need(vr: &VrConfig, workers: usize, capacity: u64) -> Option<u64> {
    if workers < 2 || vr.distribution == Distribution::RoundRobin {
        return None;
    }
    let need = match (vr.resources.get("workers"), vr.resources.get("pps")) {
        (Some(k), _) => k.saturating_mul(capacity),
        (None, Some(pps)) => pps,
        (None, None) => return None,
    };
    (need < workers as u64 * capacity).then_some(need)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_config;
    use proptest::prelude::*;

    fn config(workers: usize, asks: &[&str]) -> Config {
        let mut s = format!("workers: {workers}\nnode: {{capacity: {{pps: {}}}}}\nports:\n", workers * 100);
        for i in 0..asks.len() {
            s += &format!("  - {{name: p{i}, interface: veth{i}}}\n");
        }
        s += "vrs:\n";
        for (i, ask) in asks.iter().enumerate() {
            s += &format!(
                "  - {{name: v{i}, resources: {{{ask}}}, interfaces: [{{name: e0, port: p{i}, mac: \"02:00:00:00:{i:02x}:00\"}}]}}\n"
            );
        }
        parse_config(&s).unwrap()
    }

    fn workers_of(s: &Slices, vr: u16) -> Vec<usize> {
        s.of(vr).unwrap().iter().map(|s| s.worker).collect()
    }

    #[test]
    fn whole_workers_go_to_idle_ones_and_remainders_to_the_best_fit() {
        // C = 100. v0 takes 60 on worker 0; v1 a whole idle worker (1) and its 30 where it
        // leaves the least (worker 0's 40); v2's 40 no longer fits there: the first idle worker.
        let c = config(4, &["pps: 60", "pps: 130", "pps: 40"]);
        let s = Slices::allocate(&Slices::default(), &c);
        assert_eq!(s.of(0).unwrap(), &[Slice { worker: 0, pps: 60 }]);
        assert_eq!(s.of(1).unwrap(), &[Slice { worker: 1, pps: 100 }, Slice { worker: 0, pps: 30 }]);
        assert_eq!(s.of(2).unwrap(), &[Slice { worker: 2, pps: 40 }]);
        let c = config(4, &["workers: 2", "workers: 4", ""]);
        let s = Slices::allocate(&Slices::default(), &c);
        assert_eq!(workers_of(&s, 0), [0, 1]);
        assert_eq!((s.of(1), s.of(2)), (None, None), "all workers, or no ask, is every worker");
    }

    #[test]
    fn vrs_that_stay_keep_their_slices_when_others_come_and_go() {
        let before = Slices::allocate(&Slices::default(), &config(2, &["pps: 50", "pps: 120"]));
        let mut c = config(2, &["pps: 50", "pps: 120", "pps: 40"]);
        let after = Slices::allocate(&before, &c);
        assert_eq!((after.of(0), after.of(1)), (before.of(0), before.of(1)));
        c.vrs.remove(0);
        let gone = Slices::allocate(&after, &c);
        assert_eq!((gone.of(0), gone.of(1), gone.of(2)), (None, after.of(1), after.of(2)));
    }

    proptest! {
        /// Against what SliceAlloc promises: each VR gets exactly what it needs, on as few
        /// workers as that takes, never twice the same worker; no worker is given more than it
        /// has while some worker could have taken the slice; allocating again changes nothing.
        #[test]
        fn slices_meet_needs_on_the_fewest_workers(workers in 2usize..6, needs in proptest::collection::vec(1u64..400, 1..10)) {
            let asks: Vec<String> = needs.iter().map(|n| format!("pps: {n}")).collect();
            let c = config(workers, &asks.iter().map(String::as_str).collect::<Vec<_>>());
            let s = Slices::allocate(&Slices::default(), &c);
            let mut given = vec![0u64; workers];
            for (id, &need) in needs.iter().enumerate() {
                let Some(slices) = s.of(id as u16) else {
                    prop_assert!(need >= workers as u64 * 100);
                    continue;
                };
                prop_assert_eq!(slices.iter().map(|s| s.pps).sum::<u64>(), need);
                prop_assert_eq!(slices.len() as u64, need.div_ceil(100));
                let mut ws = workers_of(&s, id as u16);
                ws.sort_unstable();
                ws.dedup();
                prop_assert_eq!(ws.len(), slices.len());
                for sl in slices {
                    given[sl.worker] += sl.pps;
                }
            }
            if needs.iter().sum::<u64>() <= 100 {
                prop_assert!(given.iter().all(|&g| g <= 100), "{:?}", given);
            }
            prop_assert_eq!(Slices::allocate(&s, &c), s);
        }
    }
}
