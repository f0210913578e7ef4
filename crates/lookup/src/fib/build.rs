//! Rebuilding the nodes a batch of route changes touched, from the ordered route map.
//!
//! A node's content depends only on the routes overlapping its address range: those covering
//! it arrive as the inherited value, the others are painted in or become children. So a node
//! whose range no changed prefix overlaps is kept as is. A touched node below the root is
//! repainted whole from a scan of its routes, reusing the children no change overlaps; the root
//! spans the whole table, so there only the touched slots are repainted.

use super::addr::AddrBits;
use super::changes::ChangedRanges;
use super::node::{self, CHILD, NO_ROUTE};
use super::{Fib, NextHopId};

/// Reusable buffers of one trie level, so rebuilding allocates nothing per node.
#[derive(Default)]
pub(super) struct LevelScratch {
    slots: Vec<u32>,
    previous: Vec<u32>,
    needs_child: Vec<bool>,
}

impl<A: AddrBits> Fib<A> {
    /// Builds the replacement of `old` (or a new node when `None`) covering the addresses that
    /// share `base`'s first `depth` bits, where `inherited` is the next hop of the longest route
    /// covering the whole node. Returns the new node's offset; `old` is retired.
    pub(super) fn rebuild(&mut self, old: Option<u32>, base: A, depth: u32, inherited: NextHopId, changed: &ChangedRanges<A>) -> u32 {
        let stride = A::stride_at(depth);
        let n = 1usize << stride;
        let level = depth.div_ceil(8) as usize;
        if self.scratch.len() <= level {
            self.scratch.resize_with(level + 1, LevelScratch::default);
        }
        let mut s = std::mem::take(&mut self.scratch[level]);
        s.slots.resize(n, NO_ROUTE);
        s.previous.resize(n, NO_ROUTE);
        s.needs_child.resize(n, false);
        match old {
            Some(o) => {
                let header = self.headers.from(o);
                let entries = &self.entries.from(header[0])[..node::entry_count(header, stride)];
                // Below the root the node is repainted whole; the old slots matter only for
                // the children they point to.
                if depth == 0 || entries.iter().any(|&e| e & CHILD != 0) {
                    node::decode(header, entries, &mut s.previous);
                } else {
                    s.previous.fill(NO_ROUTE);
                }
            }
            None => s.previous.fill(NO_ROUTE),
        }
        if depth == 0 && old.is_some() {
            s.slots.copy_from_slice(&s.previous);
            let mut dirty: Option<(usize, usize)> = None;
            for (lo, hi) in changed.within(A::ZERO, A::ZERO.last(0)) {
                let (lo, hi) = (lo.slot(0, stride), hi.slot(0, stride));
                // Several changes under one slot must rebuild its child once, not once each.
                dirty = match dirty {
                    Some((a, b)) if lo <= b + 1 => Some((a, b.max(hi))),
                    Some((a, b)) => {
                        self.repaint(&mut s, base, depth, a, b, inherited, changed);
                        Some((lo, hi))
                    }
                    None => Some((lo, hi)),
                };
            }
            if let Some((a, b)) = dirty {
                self.repaint(&mut s, base, depth, a, b, inherited, changed);
            }
        } else {
            self.repaint(&mut s, base, depth, 0, n - 1, inherited, changed);
        }
        let offset = self.store_node(&s.slots);
        if let Some(o) = old {
            self.retire_node(o, stride);
        }
        self.scratch[level] = s;
        offset
    }

    /// Recomputes slots `lo..=hi` of a node: paints the routes that end inside the node and
    /// rebuilds (or creates, keeps, or drops) the children under slots that hold longer routes.
    #[expect(
        clippy::too_many_arguments,
        reason = "the recursion carries a node's whole context; a struct per level would be rebuilt per call"
    )]
    fn repaint(
        &mut self,
        s: &mut LevelScratch,
        base: A,
        depth: u32,
        lo: usize,
        hi: usize,
        inherited: NextHopId,
        changed: &ChangedRanges<A>,
    ) {
        let stride = A::stride_at(depth);
        let end = depth + stride;
        s.slots[lo..=hi].fill(inherited);
        s.needs_child[lo..=hi].fill(false);
        if depth == 0 {
            self.paint_root(s, lo, hi);
        } else {
            self.paint_node(s, base, depth, lo, hi);
        }
        for i in lo..=hi {
            let was = s.previous[i];
            let old_child = (was & CHILD != 0).then_some(was & !CHILD);
            if s.needs_child[i] {
                let child_base = base.with_slot(depth, stride, i);
                let touched = changed.within(child_base, child_base.last(end)).next().is_some();
                s.slots[i] = match old_child {
                    Some(_) if !touched => was,
                    _ => CHILD | self.rebuild(old_child, child_base, end, s.slots[i], changed),
                };
            } else if let Some(c) = old_child {
                self.retire_subtree(c, end);
            }
        }
    }

    /// Paints a whole node below the root from one scan of its routes (contiguous in the
    /// store). Address-then-length order puts every route before the routes it covers, so
    /// painting in scan order leaves the longest match in each slot.
    fn paint_node(&self, s: &mut LevelScratch, base: A, depth: u32, lo: usize, hi: usize) {
        let stride = A::stride_at(depth);
        let end = depth + stride;
        let first = base.with_slot(depth, stride, lo);
        let last = base.with_slot(depth, stride, hi).last(end);
        for &(p, len, nh) in self.routes.longer_within(first, last) {
            let len = u32::from(len);
            if len <= depth {
                continue;
            }
            let a = p.slot(depth, stride);
            if len <= end {
                s.slots[a..=p.last(len).slot(depth, stride)].fill(nh);
            } else {
                s.needs_child[a] = true;
            }
        }
    }

    /// Repaints root slots `lo..=hi` without scanning the routes below them (a root slot may
    /// hold thousands): the short routes come from their hash map, visiting each aligned block
    /// of each length once, shortest first; whether a slot needs a child is one hash lookup.
    fn paint_root(&self, s: &mut LevelScratch, lo: usize, hi: usize) {
        let stride = node::ROOT_STRIDE;
        if self.routes.has_short() {
            for len in 1..=stride {
                let block = 1usize << (stride - len);
                let mut start = lo & !(block - 1);
                while start <= hi {
                    let p = A::ZERO.with_slot(0, stride, start);
                    if let Some(nh) = self.routes.short(p, len as u8) {
                        s.slots[start.max(lo)..=(start + block - 1).min(hi)].fill(nh);
                    }
                    start += block;
                }
            }
        }
        for i in lo..=hi {
            s.needs_child[i] = self.routes.has_longer(i);
        }
    }

    /// Stores a node encoding `slots`; returns its header offset.
    pub(super) fn store_node(&mut self, slots: &[u32]) -> u32 {
        let stride = slots.len().trailing_zeros();
        let (mut header, mut entries) = std::mem::take(&mut self.encoding);
        header.resize(node::header_words(stride), 0);
        entries.resize(node::runs(slots), 0);
        node::encode(slots, 0, &mut header, &mut entries);
        header[0] = self.entries.insert(entries.len(), |w| w.copy_from_slice(&entries));
        let offset = self.headers.insert(header.len(), |w| w.copy_from_slice(&header));
        self.encoding = (header, entries);
        offset
    }

    fn retire_node(&mut self, offset: u32, stride: u32) {
        let header = self.headers.from(offset);
        let (base, count) = (header[0], node::entry_count(header, stride));
        self.entries.retire(base, count);
        self.headers.retire(offset, node::header_words(stride));
    }

    pub(super) fn retire_subtree(&mut self, offset: u32, depth: u32) {
        let stride = A::stride_at(depth);
        let header = self.headers.from(offset);
        let (base, count) = (header[0], node::entry_count(header, stride));
        let children: Vec<u32> = self.entries.from(base)[..count].iter().filter(|&&e| e & CHILD != 0).map(|&e| e & !CHILD).collect();
        self.retire_node(offset, stride);
        for c in children {
            self.retire_subtree(c, depth + stride);
        }
    }
}
