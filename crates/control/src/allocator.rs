//! Online allocation of VRs to the two data planes by bandwidth, after the FPGA substrate's
//! heuristic (Yin et al., "Customizing virtual networks with partial FPGA reconfiguration",
//! VISA 2010 / CCR 2011, §3.2.3; `../shared/seeds/002`), paraphrased:
//!
//! - **Addition.** A new VR goes to the preferred engine if its bandwidth (and, on the fast
//!   path, a slot) is free there, otherwise to the other; if neither can take it, it is refused.
//!   (The paper prefers software, keeping the scarce hardware for those that need it; PEARL's
//!   `placement: auto` prefers the fast path.)
//! - **Removal.** The VR leaves; nobody else moves.
//! - **Bandwidth revision.** A decrease is applied in place. An increase that fits where the VR
//!   is, is applied there. Otherwise the allocation is rebalanced greedily: the VR moves to the
//!   other engine if it fits there; if not, room is made on an engine by moving VRs off it one
//!   at a time, on the fast path the one of lowest bandwidth first, in the kernel the one of
//!   highest bandwidth first (the paper's "the lowest bandwidth hardware virtual network is
//!   migrated from hardware to software or the highest bandwidth software virtual network is
//!   migrated from software to hardware to make room in the target resource"), the VR's own
//!   engine tried before the other. An increase nothing makes room for is refused and the VR
//!   keeps its bandwidth. Without migration, only the first two steps are tried.
//!
//! The same code places `auto` VRs in pearld and runs `pearl-bench placement-sim`.

use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Engine {
    Fast,
    Kernel,
}

impl Engine {
    pub fn other(self) -> Engine {
        match self {
            Engine::Fast => Engine::Kernel,
            Engine::Kernel => Engine::Fast,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What an engine offers: aggregate bandwidth, and VR slots (the fast path's, like an FPGA's
/// reconfigurable regions; `None`: unbounded).
#[derive(Debug, Clone, Copy)]
pub struct Pool {
    pub mbps: f64,
    pub slots: Option<usize>,
}

/// What a revision did: whether it was granted, and the VRs it moved (VR, to).
#[derive(Debug, Clone, PartialEq)]
pub struct Revision {
    pub granted: bool,
    pub moves: Vec<(u32, Engine)>,
}

#[derive(Debug, Clone)]
pub struct Allocator {
    pools: [Pool; 2],
    prefer: Engine,
    migrate: bool,
    /// VR → (engine, bandwidth in Mb/s).
    placed: BTreeMap<u32, (Engine, f64)>,
    /// VRs placed by their owner, which rebalancing never moves.
    pinned: BTreeSet<u32>,
}

impl Allocator {
    /// `fast` and `kernel` pools; new VRs go to `prefer` first; `migrate`: whether revisions
    /// may move VRs.
    pub fn new(fast: Pool, kernel: Pool, prefer: Engine, migrate: bool) -> Allocator {
        Allocator { pools: [fast, kernel], prefer, migrate, placed: BTreeMap::new(), pinned: BTreeSet::new() }
    }

    pub fn engine_of(&self, vr: u32) -> Option<Engine> {
        self.placed.get(&vr).map(|p| p.0)
    }

    pub fn bandwidth_of(&self, vr: u32) -> Option<f64> {
        self.placed.get(&vr).map(|p| p.1)
    }

    /// Mb/s and VRs on `engine`.
    pub fn used(&self, engine: Engine) -> (f64, usize) {
        self.placed.values().filter(|p| p.0 == engine).fold((0.0, 0), |(m, n), p| (m + p.1, n + 1))
    }

    /// Whether `engine` takes `mbps` more (and one more VR if `new_vr`).
    fn room(&self, engine: Engine, mbps: f64, new_vr: bool) -> bool {
        let pool = self.pools[engine.index()];
        let (used, count) = self.used(engine);
        used + mbps <= pool.mbps + 1e-9 && (!new_vr || pool.slots.is_none_or(|s| count < s))
    }

    /// Places a new VR (or one placed already, anew); `None`: refused.
    pub fn add(&mut self, vr: u32, mbps: f64) -> Option<Engine> {
        self.placed.remove(&vr);
        let engine = [self.prefer, self.prefer.other()].into_iter().find(|&e| self.room(e, mbps, true))?;
        self.placed.insert(vr, (engine, mbps));
        Some(engine)
    }

    /// Places a VR where it already is (a node's running VRs, as they are), whatever room.
    pub fn keep(&mut self, vr: u32, engine: Engine, mbps: f64) {
        self.placed.insert(vr, (engine, mbps));
    }

    /// Places a VR its owner placed: it takes room, and is never moved to make room.
    pub fn pin(&mut self, vr: u32, engine: Engine, mbps: f64) {
        self.placed.insert(vr, (engine, mbps));
        self.pinned.insert(vr);
    }

    /// Moves a VR to `to` if there is room for it there.
    pub fn move_if_room(&mut self, vr: u32, to: Engine) -> bool {
        let Some(&(from, mbps)) = self.placed.get(&vr) else { return false };
        if from == to || !self.room(to, mbps, true) {
            return false;
        }
        self.placed.insert(vr, (to, mbps));
        true
    }

    pub fn remove(&mut self, vr: u32) {
        self.placed.remove(&vr);
        self.pinned.remove(&vr);
    }

    /// Changes a VR's bandwidth to `mbps`, rebalancing as the module's comment says.
    pub fn revise(&mut self, vr: u32, mbps: f64) -> Revision {
        let refused = Revision { granted: false, moves: Vec::new() };
        let Some(&(here, had)) = self.placed.get(&vr) else { return refused };
        if mbps <= had || self.room(here, mbps - had, false) {
            self.placed.insert(vr, (here, mbps));
            return Revision { granted: true, moves: Vec::new() };
        }
        if !self.migrate {
            return refused;
        }
        let before = self.placed.clone();
        self.placed.remove(&vr);
        if self.room(here.other(), mbps, true) {
            self.placed.insert(vr, (here.other(), mbps));
            return Revision { granted: true, moves: vec![(vr, here.other())] };
        }
        for target in [here, here.other()] {
            let mut moves = Vec::new();
            if self.make_room(target, mbps, target != here, &mut moves) {
                self.placed.insert(vr, (target, mbps));
                if target != here {
                    moves.push((vr, target));
                }
                return Revision { granted: true, moves };
            }
            self.placed = before.clone();
            self.placed.remove(&vr);
        }
        self.placed = before;
        refused
    }

    /// Moves VRs off `target` to the other engine, in the paper's order, until `mbps` (and a
    /// slot, if `new_vr`) is free on it; false if it cannot be.
    fn make_room(&mut self, target: Engine, mbps: f64, new_vr: bool, moves: &mut Vec<(u32, Engine)>) -> bool {
        while !self.room(target, mbps, new_vr) {
            let mut candidates: Vec<(u32, f64)> =
                self.placed.iter().filter(|(v, p)| p.0 == target && !self.pinned.contains(v)).map(|(&v, p)| (v, p.1)).collect();
            // Lowest bandwidth first off the fast path, highest first out of the kernel.
            candidates.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            if target == Engine::Kernel {
                candidates.reverse();
            }
            let Some(&(victim, bw)) = candidates.iter().find(|(_, bw)| self.room(target.other(), *bw, true)) else { return false };
            self.placed.insert(victim, (target.other(), bw));
            moves.push((victim, target.other()));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn paper(migrate: bool) -> Allocator {
        Allocator::new(Pool { mbps: 1000.0, slots: Some(2) }, Pool { mbps: 100.0, slots: None }, Engine::Kernel, migrate)
    }

    #[test]
    fn additions_fill_the_preferred_engine_then_the_other_then_are_refused() {
        let mut a = paper(true);
        assert_eq!(a.add(1, 60.0), Some(Engine::Kernel));
        assert_eq!(a.add(2, 60.0), Some(Engine::Fast), "the kernel has 40 Mb/s left");
        assert_eq!(a.add(3, 30.0), Some(Engine::Kernel));
        assert_eq!(a.add(4, 500.0), Some(Engine::Fast));
        assert_eq!(a.add(5, 20.0), None, "no slot on the fast path, 10 Mb/s in the kernel");
        a.remove(4);
        assert_eq!(a.add(5, 20.0), Some(Engine::Fast));
    }

    #[test]
    fn an_increase_moves_the_vr_or_makes_room_by_the_papers_order_or_is_refused_as_it_was() {
        let mut a = paper(true);
        a.add(1, 50.0); // kernel
        a.add(2, 40.0); // kernel
                        // 1 grows to 70: the kernel cannot hold it with 2, the fast path can: 1 moves there.
        assert_eq!(a.revise(1, 70.0), Revision { granted: true, moves: vec![(1, Engine::Fast)] });
        // The fast path's last slot taken (4), and 3 in the kernel.
        a.add(3, 5.0); // kernel (55 left)
        assert_eq!(a.engine_of(3), Some(Engine::Kernel));
        a.keep(4, Engine::Fast, 10.0);
        // 2 grows to 150: neither in place nor moved (no slot); the kernel cannot make room
        // (3 has no slot to go to); the fast path can: its lowest VR (4) goes to the kernel.
        assert_eq!(a.revise(2, 150.0), Revision { granted: true, moves: vec![(4, Engine::Kernel), (2, Engine::Fast)] });
        assert_eq!((a.used(Engine::Fast), a.used(Engine::Kernel)), ((220.0, 2), (15.0, 2)));
        // Beyond everything: refused, nothing moved.
        assert_eq!(a.revise(3, 2000.0), Revision { granted: false, moves: vec![] });
        assert_eq!(a.bandwidth_of(3), Some(5.0));
    }

    #[test]
    fn without_migration_an_increase_that_does_not_fit_in_place_is_refused() {
        let mut a = paper(false);
        a.add(1, 50.0);
        a.add(2, 40.0);
        assert_eq!(a.revise(1, 70.0), Revision { granted: false, moves: vec![] });
        assert_eq!((a.engine_of(1), a.bandwidth_of(1)), (Some(Engine::Kernel), Some(50.0)));
        assert!(a.revise(1, 20.0).granted, "decreases always");
    }

    proptest! {
        /// Whatever the events, no engine holds more than its bandwidth or slots, every VR
        /// the allocator holds is on one engine, and a refused revision changes nothing.
        #[test]
        fn pools_are_never_overcommitted(events in proptest::collection::vec((0u32..12, 0u8..3, 1.0f64..400.0), 1..200), migrate: bool) {
            let mut a = Allocator::new(Pool { mbps: 1000.0, slots: Some(4) }, Pool { mbps: 100.0, slots: None }, Engine::Kernel, migrate);
            for (vr, what, mbps) in events {
                match what {
                    0 => { a.add(vr, mbps); }
                    1 => a.remove(vr),
                    _ => {
                        let before = a.placed.clone();
                        if !a.revise(vr, mbps).granted {
                            prop_assert_eq!(&before, &a.placed);
                        } else {
                            prop_assert_eq!(a.bandwidth_of(vr), Some(mbps));
                        }
                    }
                }
                let (fast, n) = a.used(Engine::Fast);
                let (kernel, _) = a.used(Engine::Kernel);
                prop_assert!(fast <= 1000.0 + 1e-6 && n <= 4 && kernel <= 100.0 + 1e-6, "{} {} {}", fast, n, kernel);
            }
        }
    }
}
