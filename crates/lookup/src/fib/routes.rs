//! The writer's copy of a table's routes, the reference every node is rebuilt from.
//!
//! Routes that end in the root (length ≤ the root stride) are hashed, for the root's probes.
//! Longer routes are grouped by root slot in sorted vectors, so rebuilding a child node scans
//! contiguous memory, and "does this root slot need a child" is one hash lookup. A batch is
//! merged into each group it touches once, so a burst costs one pass per group, not one
//! insertion per route.

use super::addr::AddrBits;
use super::hash::BuildPrefixHasher;
use super::node;
use super::NextHopId;
use std::collections::HashMap;

/// A route longer than the root stride: address, length, next hop.
pub(super) type Route<A> = (A, u8, NextHopId);

/// One distinct prefix's change within a batch; `new: None` removes it.
pub(super) struct Change<A> {
    pub addr: A,
    pub len: u8,
    pub new: Option<NextHopId>,
}

pub(super) struct RouteStore<A> {
    short: HashMap<(A, u8), NextHopId, BuildPrefixHasher>,
    /// One bit per possible short prefix (heap order: `2^len + network bits`), so that the
    /// root's probes, nearly all for absent prefixes, are answered from 16 KiB of L1 instead of
    /// the hash map. Allocated with the first short route.
    short_bits: Vec<u64>,
    groups: HashMap<usize, Vec<Route<A>>, BuildPrefixHasher>,
    len: usize,
    merged: Vec<Route<A>>,
}

fn root_slot<A: AddrBits>(a: A) -> usize {
    a.slot(0, node::ROOT_STRIDE)
}

/// The presence bit of a short prefix (`1 <= len <= root stride`).
fn short_bit<A: AddrBits>(addr: A, len: u8) -> usize {
    let len = u32::from(len);
    (1 << len) + addr.slot(0, len)
}

impl<A: AddrBits> RouteStore<A> {
    pub fn new() -> RouteStore<A> {
        RouteStore { short: HashMap::default(), short_bits: Vec::new(), groups: HashMap::default(), len: 0, merged: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn get(&self, addr: A, len: u8) -> Option<NextHopId> {
        if u32::from(len) <= node::ROOT_STRIDE {
            return self.short.get(&(addr, len)).copied();
        }
        let group = self.groups.get(&root_slot(addr))?;
        group.binary_search_by(|r| (r.0, r.1).cmp(&(addr, len))).ok().map(|i| group[i].2)
    }

    /// A route ending in the root.
    #[inline]
    pub fn short(&self, addr: A, len: u8) -> Option<NextHopId> {
        let bit = short_bit(addr, len);
        let present = self.short_bits.get(bit / 64).is_some_and(|w| w & (1 << (bit % 64)) != 0);
        if present {
            self.short.get(&(addr, len)).copied()
        } else {
            None
        }
    }

    pub fn has_short(&self) -> bool {
        !self.short.is_empty()
    }

    /// Whether any route longer than the root stride lies under root slot `slot`.
    pub fn has_longer(&self, slot: usize) -> bool {
        self.groups.contains_key(&slot)
    }

    /// The longer routes in `[first, last]`, which must lie under one root slot, in
    /// address-then-length order.
    pub fn longer_within(&self, first: A, last: A) -> &[Route<A>] {
        let Some(group) = self.groups.get(&root_slot(first)) else { return &[] };
        let lo = group.partition_point(|r| r.0 < first);
        let hi = group.partition_point(|r| r.0 <= last);
        &group[lo..hi]
    }

    /// Applies `changes` (sorted by address then length, one per prefix, no default route)
    /// and writes each prefix's previous next hop to `previous`.
    pub fn apply(&mut self, changes: &[Change<A>], previous: &mut Vec<Option<NextHopId>>) {
        previous.clear();
        let mut i = 0;
        while i < changes.len() {
            let c = &changes[i];
            if u32::from(c.len) <= node::ROOT_STRIDE {
                let old = match c.new {
                    Some(nh) => self.short.insert((c.addr, c.len), nh),
                    None => self.short.remove(&(c.addr, c.len)),
                };
                if self.short_bits.is_empty() {
                    self.short_bits = vec![0; (2 << node::ROOT_STRIDE) / 64];
                }
                let bit = short_bit(c.addr, c.len);
                let mask = 1u64 << (bit % 64);
                if c.new.is_some() {
                    self.short_bits[bit / 64] |= mask;
                } else {
                    self.short_bits[bit / 64] &= !mask;
                }
                self.len = self.len + usize::from(c.new.is_some()) - usize::from(old.is_some());
                previous.push(old);
                i += 1;
                continue;
            }
            // The longer changes of one root slot are contiguous (sorted by address); short
            // ones between them are handled by the branch above on later iterations.
            let slot = root_slot(c.addr);
            let mut end = i;
            while end < changes.len() && root_slot(changes[end].addr) == slot && u32::from(changes[end].len) > node::ROOT_STRIDE {
                end += 1;
            }
            self.merge(slot, &changes[i..end], previous);
            i = end;
        }
    }

    fn merge(&mut self, slot: usize, changes: &[Change<A>], previous: &mut Vec<Option<NextHopId>>) {
        let old = self.groups.remove(&slot).unwrap_or_default();
        let merged = &mut self.merged;
        merged.clear();
        merged.reserve(old.len() + changes.len());
        let mut routes = old.iter().peekable();
        for c in changes {
            let key = (c.addr, c.len);
            while let Some(r) = routes.next_if(|r| (r.0, r.1) < key) {
                merged.push(*r);
            }
            let was = routes.next_if(|r| (r.0, r.1) == key).map(|r| r.2);
            if let Some(nh) = c.new {
                merged.push((c.addr, c.len, nh));
            }
            self.len = self.len + usize::from(c.new.is_some()) - usize::from(was.is_some());
            previous.push(was);
        }
        merged.extend(routes);
        if !merged.is_empty() {
            // Keep the group's allocation when it can hold the result, else take the scratch.
            let group = if old.capacity() >= merged.len() {
                let mut g = old;
                g.clear();
                g.extend_from_slice(merged);
                g
            } else {
                std::mem::take(merged)
            };
            self.groups.insert(slot, group);
        }
    }

    /// Every route, in address-then-length order.
    pub fn sorted(&self) -> Vec<Route<A>> {
        let mut all: Vec<Route<A>> = self.short.iter().map(|(&(a, l), &nh)| (a, l, nh)).collect();
        all.extend(self.groups.values().flatten().copied());
        all.sort_unstable_by_key(|r| (r.0, r.1));
        all
    }

    /// At most `limit` routes past `after` with an address in `[first, last]` and a length of
    /// at least `min_len`, in address-then-length order. Costs one pass over the short routes
    /// (those ending in the root: a few thousand in a full table), at most one probe per root
    /// slot, and `limit` longer routes: a bounded page of any table, whatever its size.
    pub fn page(&self, after: Option<(A, u8)>, first: A, last: A, min_len: u8, limit: usize) -> Vec<Route<A>> {
        let wanted = |a: A, l: u8| a >= first && a <= last && l >= min_len && after.is_none_or(|k| (a, l) > k);
        let mut short: Vec<Route<A>> = self.short.iter().filter(|(&(a, l), _)| wanted(a, l)).map(|(&(a, l), &nh)| (a, l, nh)).collect();
        short.sort_unstable_by_key(|r| (r.0, r.1));
        short.truncate(limit);
        let start = after.map_or(first, |(a, _)| a.max(first));
        let mut longer: Vec<Route<A>> = Vec::new();
        for slot in root_slot(start)..=root_slot(last) {
            if longer.len() >= limit {
                break;
            }
            let Some(group) = self.groups.get(&slot) else { continue };
            let from = group.partition_point(|r| r.0 < first || after.is_some_and(|k| (r.0, r.1) <= k));
            let take = limit - longer.len();
            longer.extend(group[from..].iter().take_while(|r| r.0 <= last).filter(|r| wanted(r.0, r.1)).take(take).copied());
        }
        let mut merged: Vec<Route<A>> = short.into_iter().chain(longer).collect();
        merged.sort_unstable_by_key(|r| (r.0, r.1));
        merged.truncate(limit);
        merged
    }

    /// Bytes held, estimated from element sizes and capacities.
    pub fn bytes(&self) -> usize {
        let route = std::mem::size_of::<Route<A>>();
        let short = self.short.capacity() * (std::mem::size_of::<(A, u8)>() + 4 + 1) + self.short_bits.len() * 8;
        let groups: usize = self.groups.values().map(|g| g.capacity() * route + 48).sum();
        short + groups + self.merged.capacity() * route
    }
}
