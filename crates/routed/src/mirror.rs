//! Kernel state → the VR's FIBs and next-hop table. Each cycle recomputes the dirty prefixes'
//! entries, turns the differences into one batch per family and publishes them:
//!
//! 1. the next-hop table, if an entry was added or re-resolved (new ids exist before routes
//!    point at them);
//! 2. the IPv4 and IPv6 FIB batches;
//! 3. ids no route uses any more become free.
//!
//! A prefix's entry comes from its best kernel route (local table first, then lowest metric),
//! else, for a host prefix, from a resolved neighbour on the link its covering connected route
//! is on (not for IPv6 link-local neighbours: they serve as next hops, and a router forwards
//! nothing to them). Whatever the fast path cannot do itself goes to the VR's kernel ([`NhKey::Kernel`]).
//!
//! Under the hold-down a prefix the FIB forwards keeps its entry when the kernel takes the
//! route away or hands it to itself ([`Slot::deferred`]); everything else is applied. The
//! release marks the kept prefixes, and the next cycle removes what the kernel no longer has.

use crate::family::{show, Family};
use crate::kernel_route::{Hop, KernelRoute, Target};
use crate::next_hops::{NextHops, NhKey};
use crate::state::{KernelState, Mac, Routes, Slot, World, NOT_INSTALLED};
use crate::RoutedInterface;
use pearl_lookup::fib::{FibError, Prefix, RouteUpdate};
use pearl_tables::nexthop::NextHopTable;
use pearl_tables::VrTables;
use std::collections::BTreeMap;

/// Log lines a cycle may write about refused routes before it only counts them.
const LOG_LINES: usize = 16;
/// Most member slots of an ECMP group: weights beyond this resolution are scaled down.
const MAX_GROUP_SLOTS: u32 = 256;

/// Why a route is left to the kernel against its will.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its packets leave through a link that is not one of the VR's interfaces.
    NotVrInterface(u32),
    Unsupported(&'static str),
}

/// One cycle's changes, computed without the tables' lock.
#[derive(Debug, Default)]
pub struct Batch {
    pub v4: Vec<RouteUpdate<u32>>,
    pub v6: Vec<RouteUpdate<u128>>,
    pub next_hops: Option<NextHopTable>,
    /// The FIBs hold routes the mirror did not put there (or lost track of): remove them all.
    pub replace_all: bool,
}

impl Batch {
    pub fn updates(&self) -> usize {
        self.v4.len() + self.v6.len()
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// FIB entries the mirror holds, IPv4 and IPv6.
    pub installed: [usize; 2],
    pub refused: usize,
    pub over_quota: usize,
    pub fib_errors: u64,
    /// FIB entries kept only by the hold-down.
    pub deferred: usize,
}

pub struct Mirror {
    pub state: KernelState,
    hops: NextHops,
    counts: Counts,
    over_quota4: Vec<Prefix<u32>>,
    over_quota6: Vec<Prefix<u128>>,
    replace_all: bool,
    hold: bool,
    /// Every next hop is to be resolved again (after a resync, or the hold's release).
    recheck_hops: bool,
    log: Vec<String>,
}

impl Mirror {
    /// A mirror whose first batch replaces whatever `tables` hold; `current` is their
    /// next-hop table, kept valid until then.
    pub fn new(interfaces: Vec<RoutedInterface>, current: &NextHopTable) -> Mirror {
        Mirror {
            state: KernelState::new(interfaces),
            hops: NextHops::adopt(current),
            counts: Counts::default(),
            over_quota4: Vec::new(),
            over_quota6: Vec::new(),
            replace_all: true,
            hold: false,
            recheck_hops: false,
            log: Vec::new(),
        }
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }

    pub fn next_hops_live(&self) -> usize {
        self.hops.live()
    }

    /// Whether a cycle has work to do.
    pub fn pending(&self) -> bool {
        self.state.pending() || self.replace_all || self.recheck_hops
    }

    pub fn held(&self) -> bool {
        self.hold
    }

    /// Turns the hold-down on or off. Off, the prefixes and next hops it kept are recomputed
    /// by the next cycle, against the kernel's state then.
    pub fn set_hold(&mut self, on: bool) {
        self.hold = on;
        self.hops.set_hold(on);
        if !on {
            self.state.v4.mark_deferred();
            self.state.v6.mark_deferred();
            self.recheck_hops = true;
        }
    }

    /// Log lines written since last taken.
    pub fn take_log(&mut self) -> Vec<String> {
        std::mem::take(&mut self.log)
    }

    /// After a resync: links may have changed under every next hop.
    pub fn refresh_all(&mut self) {
        self.recheck_hops = true;
    }

    /// Computes the cycle's batch; `limit` is the FIB room (both families).
    pub fn prepare(&mut self, limit: usize) -> Batch {
        let KernelState { v4: routes4, v6: routes6, world, dirty_hops, .. } = &mut self.state;
        // Here rather than when the news came: whether a hold keeps an entry is decided by the
        // hold in force when the change is published.
        if std::mem::take(&mut self.recheck_hops) {
            dirty_hops.clear();
            self.hops.refresh_all(world);
        }
        for (ifindex, ip) in dirty_hops.drain(..) {
            self.hops.refresh(&NhKey::Via(ifindex, ip), world);
        }
        let mut cx = Cycle {
            hops: &mut self.hops,
            world,
            counts: &mut self.counts,
            limit,
            replace_all: self.replace_all,
            hold: self.hold,
            log: &mut self.log,
            unlogged: 0,
        };
        let v4 = cx.family(routes4, &world.neigh4, &mut self.over_quota4);
        let v6 = cx.family(routes6, &world.neigh6, &mut self.over_quota6);
        // Room this cycle made (removals after the retries above) goes to waiting routes next
        // cycle, which their marks make pending.
        let room = limit.saturating_sub(cx.counts.installed[0] + cx.counts.installed[1]);
        let retry4 = room.min(self.over_quota4.len());
        for p in self.over_quota4.drain(..retry4) {
            routes4.mark(p);
        }
        let retry6 = (room - retry4).min(self.over_quota6.len());
        for p in self.over_quota6.drain(..retry6) {
            routes6.mark(p);
        }
        if cx.unlogged > 0 {
            let n = cx.unlogged;
            cx.log.push(format!("{n} more routes refused (not logged one by one); their packets go to the VR's kernel"));
        }
        Batch { v4, v6, next_hops: self.hops.take_table(), replace_all: self.replace_all }
    }

    /// Publishes a batch into the VR's tables (the caller holds their lock). A FIB that refuses
    /// a batch is counted and logged, and the next cycle rewrites both tables whole.
    pub fn commit(&mut self, tables: &mut VrTables, batch: Batch) {
        if let Some(t) = batch.next_hops {
            tables.publish_next_hops(t);
        }
        let (mut v4, mut v6) = (batch.v4, batch.v6);
        if batch.replace_all {
            v4.splice(0..0, tables.fib4().routes().into_iter().map(|(p, _)| RouteUpdate::Remove(p)));
            v6.splice(0..0, tables.fib6.routes().into_iter().map(|(p, _)| RouteUpdate::Remove(p)));
        }
        let r4 = if v4.is_empty() { Ok(()) } else { tables.apply4(&v4).map(drop) };
        let r6 = if v6.is_empty() { Ok(()) } else { tables.fib6.apply(&v6).map(drop) };
        tables.published();
        match (r4, r6) {
            (Ok(()), Ok(())) => {
                self.replace_all = false;
                self.hops.reclaim();
            }
            (r4, r6) => {
                for (family, e) in [("IPv4", r4.err()), ("IPv6", r6.err())] {
                    if let Some(e) = e {
                        self.fib_refused(family, e);
                    }
                }
            }
        }
    }

    fn fib_refused(&mut self, family: &str, e: FibError) {
        self.counts.fib_errors += 1;
        self.log.push(format!("the {family} FIB refused a batch ({e}); rewriting both FIBs whole next cycle"));
        // Freed ids may still be in the FIB that kept its old routes: free nothing until a
        // whole rewrite succeeded.
        self.replace_all = true;
        self.state.v4.mark_all();
        self.state.v6.mark_all();
    }
}

/// One cycle's shared state.
struct Cycle<'a> {
    hops: &'a mut NextHops,
    world: &'a World,
    counts: &'a mut Counts,
    limit: usize,
    replace_all: bool,
    hold: bool,
    log: &'a mut Vec<String>,
    unlogged: usize,
}

impl Cycle<'_> {
    fn family<A: Family>(
        &mut self,
        routes: &mut Routes<A>,
        neighbours: &BTreeMap<(A, u32), Mac>,
        over_quota: &mut Vec<Prefix<A>>,
    ) -> Vec<RouteUpdate<A>> {
        let fam = usize::from(A::WIDTH == 128);
        let room = self.limit.saturating_sub(self.counts.installed[0] + self.counts.installed[1]);
        let retry = room.min(over_quota.len());
        for p in over_quota.drain(..retry) {
            routes.mark(p);
        }
        let mut out = Vec::new();
        for p in routes.take_dirty() {
            let want = desired(routes, neighbours, self.world, p);
            let Some(slot) = routes.slots.get_mut(&p) else { continue };
            if std::mem::take(&mut slot.over_quota) {
                self.counts.over_quota -= 1;
            }
            let want = match want {
                Ok(key) => {
                    if std::mem::take(&mut slot.refused) {
                        self.counts.refused -= 1;
                    }
                    key
                }
                Err(why) => {
                    if !slot.refused {
                        slot.refused = true;
                        self.counts.refused += 1;
                        self.log_refusal(show(p), why);
                    }
                    Some(NhKey::Kernel)
                }
            };
            if self.hold && self.loses(slot, want.as_ref()) {
                if !std::mem::replace(&mut slot.deferred, true) {
                    self.counts.deferred += 1;
                }
                if self.replace_all {
                    out.push(RouteUpdate::Insert(p, slot.installed));
                }
                continue;
            }
            if std::mem::take(&mut slot.deferred) {
                self.counts.deferred -= 1;
            }
            match (slot.installed, want) {
                (NOT_INSTALLED, None) => {}
                (NOT_INSTALLED, Some(key)) => {
                    if self.counts.installed[0] + self.counts.installed[1] >= self.limit {
                        slot.over_quota = true;
                        if self.counts.over_quota == 0 {
                            self.log.push(format!(
                                "the FIB is full ({} routes, limits.fib_entries): further routes are not installed and their packets follow less specific ones",
                                self.limit
                            ));
                        }
                        self.counts.over_quota += 1;
                        over_quota.push(p);
                    } else {
                        let id = self.hops.acquire(&key, self.world);
                        slot.installed = id;
                        self.counts.installed[fam] += 1;
                        out.push(RouteUpdate::Insert(p, id));
                    }
                }
                (old, Some(key)) => {
                    if self.hops.key(old) != Some(&key) {
                        let id = self.hops.acquire(&key, self.world);
                        self.hops.release(old);
                        slot.installed = id;
                        out.push(RouteUpdate::Insert(p, id));
                    } else if self.replace_all {
                        out.push(RouteUpdate::Insert(p, old));
                    }
                }
                (old, None) => {
                    self.hops.release(old);
                    slot.installed = NOT_INSTALLED;
                    self.counts.installed[fam] -= 1;
                    out.push(RouteUpdate::Remove(p));
                }
            }
            if slot.is_vacant() {
                routes.slots.remove(&p);
            }
        }
        // A flushed table should not keep a full table's memory.
        if routes.slots.capacity() > 4 * routes.slots.len() + 4096 {
            routes.slots.shrink_to_fit();
        }
        out
    }

    /// Whether giving `slot` the entry `want` would stop the fast path forwarding its prefix
    /// (an entry that sends to the kernel is no loss).
    fn loses(&self, slot: &Slot, want: Option<&NhKey>) -> bool {
        slot.installed != NOT_INSTALLED
            && self.hops.key(slot.installed) != Some(&NhKey::Kernel)
            && matches!(want, None | Some(NhKey::Kernel))
    }

    fn log_refusal(&mut self, prefix: String, why: Refusal) {
        if self.log.len() >= LOG_LINES {
            self.unlogged += 1;
            return;
        }
        let line = match why {
            Refusal::NotVrInterface(ifindex) => {
                let names: Vec<&str> = self.world.interfaces.iter().map(|i| i.name.as_str()).collect();
                let link = self.world.link_name(ifindex).map_or(format!("ifindex {ifindex}"), |n| format!("{n:?}"));
                format!("refused {prefix}: it leaves through {link}, which is not one of the VR's interfaces ({}); its packets go to the VR's kernel", names.join(", "))
            }
            Refusal::Unsupported(why) => format!("refused {prefix}: {why}; its packets go to the VR's kernel"),
        };
        self.log.push(line);
    }
}

/// The entry `p` should have: from its best kernel route, else (host prefixes but link-local
/// ones) from a resolved neighbour on the link of its covering connected route.
pub fn desired<A: Family>(
    routes: &Routes<A>,
    neighbours: &BTreeMap<(A, u32), Mac>,
    world: &World,
    p: Prefix<A>,
) -> Result<Option<NhKey>, Refusal> {
    if let Some(r) = routes.slots.get(&p).and_then(|s| s.routes.winner()) {
        return route_key(r, world).map(Some);
    }
    if p.len() != A::WIDTH || p.addr().link_local() {
        return Ok(None);
    }
    let x = p.addr();
    for (&(_, ifindex), _) in neighbours.range((x, 0)..=(x, u32::MAX)) {
        if world.interface(ifindex).is_some() && connected_on(routes, x, ifindex) {
            return Ok(Some(NhKey::Via(ifindex, x.to_ip())));
        }
    }
    Ok(None)
}

/// Whether the kernel's longest route covering `x` (shorter than a host route) reaches it
/// directly on `ifindex`. If some other route covers it, the neighbour entry is stale or
/// incidental and routing, not the neighbour table, decides.
fn connected_on<A: Family>(routes: &Routes<A>, x: A, ifindex: u32) -> bool {
    for len in (0..A::WIDTH).rev() {
        if let Some(r) = routes.slots.get(&Prefix::containing(x, len)).and_then(|s| s.routes.winner()) {
            return r.hops().iter().any(|h| h.ifindex == ifindex && h.gateway.is_none());
        }
    }
    false
}

fn route_key(r: &KernelRoute, world: &World) -> Result<NhKey, Refusal> {
    match &r.target {
        Target::Local => Ok(NhKey::Local),
        Target::Kernel => Ok(NhKey::Kernel),
        Target::Unsupported(why) => Err(Refusal::Unsupported(why)),
        Target::One(h) => hop_key(h, world),
        Target::Multi(hops) => {
            let members = hops.iter().map(|h| Ok((hop_key(h, world)?, h.weight))).collect::<Result<Vec<_>, Refusal>>()?;
            Ok(group(members))
        }
    }
}

fn hop_key(h: &Hop, world: &World) -> Result<NhKey, Refusal> {
    if world.interface(h.ifindex).is_none() {
        return Err(Refusal::NotVrInterface(h.ifindex));
    }
    Ok(match h.gateway {
        Some(g) => NhKey::Via(h.ifindex, g),
        None => NhKey::Attached(h.ifindex),
    })
}

/// A group in canonical form: members sorted, duplicates merged, weights divided by their
/// greatest common divisor and scaled to at most [`MAX_GROUP_SLOTS`] slots.
pub fn group(mut members: Vec<(NhKey, u16)>) -> NhKey {
    members.sort();
    let mut merged: Vec<(NhKey, u32)> = Vec::with_capacity(members.len());
    for (k, w) in members {
        match merged.last_mut() {
            Some((last, lw)) if *last == k => *lw += u32::from(w),
            _ => merged.push((k, u32::from(w))),
        }
    }
    if merged.len() == 1 {
        return merged.pop().expect("one member").0;
    }
    let divisor = merged.iter().fold(0, |g, &(_, w)| gcd(g, w));
    let total: u32 = merged.iter().map(|&(_, w)| w / divisor).sum();
    let scaled = merged.into_iter().map(|(k, w)| {
        let w = w / divisor;
        let w = if total > MAX_GROUP_SLOTS { (w * MAX_GROUP_SLOTS / total).max(1) } else { w };
        (k, w as u16)
    });
    NhKey::Group(scaled.collect())
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
