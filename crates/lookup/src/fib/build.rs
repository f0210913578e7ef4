//! Rebuilding the nodes a batch of route changes touched, from the ordered route map.
//!
//! A node's content depends only on the routes overlapping its address range (those covering it
//! arrive as the inherited value, the rest are painted in or become children). So a node whose
//! range no changed prefix overlaps is kept as is, and in a node that is rebuilt only the slots
//! overlapping a change are repainted; the rest are copied from the old node.

use super::addr::AddrBits;
use super::changes::ChangedRanges;
use super::node::{self, CHILD};
use super::{Fib, NextHopId};

impl<A: AddrBits> Fib<A> {
    /// Builds the replacement of `old` (or a new node when `None`) covering the addresses that
    /// share `base`'s first `depth` bits, where `inherited` is the next hop of the longest route
    /// covering the whole node. Returns the new node's offset; `old` is retired.
    pub(super) fn rebuild(
        &mut self,
        old: Option<u32>,
        base: A,
        depth: u32,
        inherited: NextHopId,
        changed: &ChangedRanges<A>,
    ) -> u32 {
        let stride = node::stride_at(depth);
        let level = depth.div_ceil(8) as usize;
        let mut slots = self.take_scratch(level, 1 << stride);
        let dirty = match old {
            Some(o) => {
                node::decode(self.arena.node(o), &mut slots);
                let first = base.network(depth);
                let mut dirty: Vec<(usize, usize)> = Vec::new();
                for (lo, hi) in changed.within(first, first.last(depth)) {
                    let (lo, hi) = (lo.slot(depth, stride), hi.slot(depth, stride));
                    // Several changes under one slot must rebuild its child once, not once each.
                    match dirty.last_mut() {
                        Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
                        _ => dirty.push((lo, hi)),
                    }
                }
                dirty
            }
            None => {
                slots.fill(inherited);
                vec![(0, (1 << stride) - 1)]
            }
        };
        for (lo, hi) in dirty {
            self.repaint(&mut slots, base, depth, stride, lo, hi, inherited, changed);
        }
        let offset = self.arena.insert(node::encoded_len(&slots), |w| node::encode(&slots, w));
        if let Some(o) = old {
            self.arena.retire(o, node::len(self.arena.node(o), stride));
        }
        self.scratch[level] = slots;
        offset
    }

    /// Recomputes slots `lo..=hi` of a node: paints the routes that end inside the node, and
    /// rebuilds (or creates, or drops) the children under slots that hold longer routes.
    #[allow(clippy::too_many_arguments)]
    fn repaint(
        &mut self,
        slots: &mut [u32],
        base: A,
        depth: u32,
        stride: u32,
        lo: usize,
        hi: usize,
        inherited: NextHopId,
        changed: &ChangedRanges<A>,
    ) {
        let previous: Vec<u32> = slots[lo..=hi].to_vec();
        slots[lo..=hi].fill(inherited);
        let end = depth + stride;
        let first = base.with_slot(depth, stride, lo);
        let last = base.with_slot(depth, stride, hi).last(end);
        let paint = |slots: &mut [u32], p: A, len: u32, nh: NextHopId| {
            let a = p.slot(depth, stride).max(lo);
            let b = p.last(len).slot(depth, stride).min(hi);
            slots[a..=b].fill(nh);
        };
        // Routes covering slot `lo` but starting before it do not show up in the range scan.
        for len in depth + 1..=end {
            let p = first.network(len);
            if p < first {
                if let Some(&nh) = self.routes.get(&(p, len as u8)) {
                    paint(slots, p, len, nh);
                }
            }
        }
        // Address-then-length order puts every route before the routes it covers, so painting
        // in scan order leaves the longest match in each slot.
        let mut needs_child = vec![false; hi - lo + 1];
        for (&(p, len), &nh) in self.routes.range((first, 0)..=(last, u8::MAX)) {
            let len = u32::from(len);
            if len <= depth {
                continue;
            }
            if len <= end {
                paint(slots, p, len, nh);
            } else {
                needs_child[p.slot(depth, stride) - lo] = true;
            }
        }
        for (k, (&child_needed, &was)) in needs_child.iter().zip(&previous).enumerate() {
            let i = lo + k;
            let old_child = (was & CHILD != 0).then_some(was & !CHILD);
            if child_needed {
                let child = self.rebuild(old_child, base.with_slot(depth, stride, i), end, slots[i], changed);
                slots[i] = CHILD | child;
            } else if let Some(c) = old_child {
                self.retire_subtree(c, end);
            }
        }
    }

    fn retire_subtree(&mut self, offset: u32, depth: u32) {
        let stride = node::stride_at(depth);
        let words = self.arena.node(offset);
        let len = node::len(words, stride);
        let children: Vec<u32> = words[node::header_words(stride)..len]
            .iter()
            .filter(|&&e| e & CHILD != 0)
            .map(|&e| e & !CHILD)
            .collect();
        self.arena.retire(offset, len);
        for c in children {
            self.retire_subtree(c, depth + stride);
        }
    }

    fn take_scratch(&mut self, level: usize, len: usize) -> Vec<u32> {
        if self.scratch.len() <= level {
            self.scratch.resize_with(level + 1, Vec::new);
        }
        let mut v = std::mem::take(&mut self.scratch[level]);
        v.resize(len, 0);
        v
    }
}
