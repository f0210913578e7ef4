//! One hash table of tuple space search: rules whose masks all cover the table's hash mask,
//! bucketed by the hash of their value under that mask.
//!
//! Slots are 8 bytes (a 32-bit hash tag and the index of the bucket's best rule), linearly
//! probed, so a table's slot array stays cache-resident and a probe costs one load there plus
//! one for the rule it leads to. A bucket is a chain through the table's rule slab, best rank
//! first, so verification stops at the first full match or once ranks fall to the best match
//! found in earlier tables.
//!
//! In front of the hash sits a pre-filter: a bitmap indexed by a one-multiply hash of two words
//! of the key, the words of the hash mask on which the table's rules differ most. Most
//! tables cannot match a given key, and this rejects them for a fraction of a full hash and
//! without touching the slots. Bits are only set between rehashes (a removed rule's bit may
//! linger, a harmless false positive); a rehash rebuilds the bitmap and re-picks the words.

use crate::key_hash::masked_hash;
use crate::rule::{RuleId, Verdict};
use pearl_wire::flow_key::FlowKey;
use std::collections::HashSet;

/// End of a chain / empty bucket.
pub(crate) const NONE: u32 = u32::MAX;

/// A rule as the lookup path sees it, in two cache lines. The first holds what rejects most
/// candidates: the rank and one word of the rule's mask beyond the table's hash mask (the one
/// with the most such bits); bucket-mates share the hash-mask bits, so they differ mostly there.
/// The mask itself lives in the table's short list of distinct masks, which stays cached.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub(crate) struct Entry {
    /// 0 marks a free slab entry.
    pub rank: u64,
    /// Next (lower-ranked) rule of the same bucket.
    next: u32,
    mask_id: u32,
    quick_mask: u64,
    quick_value: u64,
    pub verdict: Verdict,
    quick_word: u32,
    pub value: FlowKey,
}

impl Entry {
    pub fn id(&self) -> RuleId {
        RuleId(u32::MAX - self.rank as u32)
    }

    #[inline(always)]
    fn matches(&self, key: &FlowKey, masks: &[FlowKey]) -> bool {
        key.words[self.quick_word as usize] & self.quick_mask == self.quick_value && key.matches(&self.value, &masks[self.mask_id as usize])
    }
}

/// A table's pre-filter: for every rule's value, bit `(combined * multiplier) >> shift` of
/// `bits` is set, where `combined = (w0 & masks[0]) ^ (w1 & masks[1]).rotate_left(31)` over
/// the key words `words`. Multiplicative hashing: the top bits of the product depend on every
/// bit of `combined`.
pub(crate) struct FilterView<'a> {
    pub words: [usize; 2],
    pub masks: [u64; 2],
    pub multiplier: u64,
    pub shift: u32,
    pub bits: &'a [u64],
}

impl FilterView<'_> {
    #[inline(always)]
    pub fn bit(&self, w0: u64, w1: u64) -> usize {
        let combined = (w0 & self.masks[0]) ^ (w1 & self.masks[1]).rotate_left(31);
        (combined.wrapping_mul(self.multiplier) >> self.shift) as usize
    }

    #[inline(always)]
    pub fn passes(&self, w0: u64, w1: u64) -> bool {
        let bit = self.bit(w0, w1);
        self.bits[bit / 64] & (1 << (bit % 64)) != 0
    }

    fn key_bit(&self, key: &FlowKey) -> usize {
        self.bit(key.words[self.words[0]], key.words[self.words[1]])
    }
}

/// `tag == 0` marks a never-used slot; a used slot whose chain emptied stays as a tombstone
/// (probes walk past it) until the next rehash.
#[derive(Debug, Clone, Copy)]
struct Slot {
    tag: u32,
    head: u32,
}

const EMPTY: Slot = Slot { tag: 0, head: NONE };

#[derive(Debug, Clone)]
pub(crate) struct TupleTable {
    pub hash_mask: FlowKey,
    /// Best rank in the table; lookups skip the table once they hold a match at least as good.
    pub max_rank: u64,
    slots: Box<[Slot]>,
    used_slots: usize,
    entries: Vec<Entry>,
    free: Vec<u32>,
    /// Distinct masks of the table's rules; rebuilt (dropping unused ones) on rehash.
    masks: Vec<FlowKey>,
    filter_words: [usize; 2],
    /// The hash mask's bits in `filter_words`; the second is 0 when only one word is used.
    filter_masks: [u64; 2],
    /// `64 - log2(filter bits)`.
    filter_shift: u32,
    filter: Box<[u64]>,
}

const MIN_SLOTS: usize = 8;
/// Pre-filter bits per slot; with slots at most half full, at least 32 bits per bucket.
const FILTER_BITS_PER_SLOT: usize = 16;
const FILTER_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

fn tag_of(hash: u64) -> u32 {
    ((hash >> 32) as u32).max(1)
}

impl TupleTable {
    pub fn new(hash_mask: FlowKey) -> TupleTable {
        let mut table = TupleTable {
            hash_mask,
            max_rank: 0,
            slots: Box::new([]),
            used_slots: 0,
            entries: Vec::new(),
            free: Vec::new(),
            masks: Vec::new(),
            filter_words: [0; 2],
            filter_masks: [0; 2],
            filter_shift: 0,
            filter: Box::new([]),
        };
        table.rebuild(MIN_SLOTS);
        table
    }

    pub fn rules(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    pub fn hash_of(&self, key: &FlowKey) -> u64 {
        masked_hash(key, &self.hash_mask)
    }

    #[inline(always)]
    pub fn filter_view(&self) -> FilterView<'_> {
        FilterView {
            words: self.filter_words,
            masks: self.filter_masks,
            multiplier: FILTER_SEED,
            shift: self.filter_shift,
            bits: &self.filter,
        }
    }

    /// False when no rule of the table can match `key`.
    #[inline(always)]
    pub fn may_match(&self, key: &FlowKey) -> bool {
        let f = self.filter_view();
        f.passes(key.words[f.words[0]], key.words[f.words[1]])
    }

    fn mark(&mut self, value: &FlowKey) {
        let bit = self.filter_view().key_bit(value);
        self.filter[bit / 64] |= 1 << (bit % 64);
    }

    /// Index of the slot holding `hash`'s tag, or of the empty slot where it would go.
    #[inline(always)]
    fn find_slot(&self, hash: u64) -> usize {
        let wrap = self.slots.len() - 1;
        let tag = tag_of(hash);
        let mut i = hash as usize & wrap;
        loop {
            let t = self.slots[i].tag;
            if t == tag || t == 0 {
                return i;
            }
            i = (i + 1) & wrap;
        }
    }

    fn chain(&self, head: u32) -> impl Iterator<Item = (u32, &Entry)> {
        let mut at = head;
        core::iter::from_fn(move || {
            let i = at;
            let e = self.entries.get(i as usize)?;
            at = e.next;
            Some((i, e))
        })
    }

    /// Number of rules sharing the bucket `value` falls in.
    pub fn bucket_len(&self, value: &FlowKey) -> usize {
        self.chain(self.slots[self.find_slot(self.hash_of(value))].head).count()
    }

    /// Adds a rule (whose mask must cover the hash mask).
    pub fn insert(&mut self, rank: u64, value: FlowKey, mask: &FlowKey, verdict: Verdict) {
        if 2 * (self.used_slots + 1) > self.slots.len() {
            self.rebuild(4 * (self.rules() + 1));
        }
        let beyond = |w: usize| (mask.words[w] & !self.hash_mask.words[w]).count_ones();
        let quick = (0..FlowKey::WORDS).max_by_key(|&w| (beyond(w), core::cmp::Reverse(w))).unwrap_or(0);
        let mask_id = match self.masks.iter().position(|m| m == mask) {
            Some(i) => i,
            None => {
                self.masks.push(*mask);
                self.masks.len() - 1
            }
        };
        let entry = Entry {
            rank,
            next: NONE,
            mask_id: mask_id as u32,
            quick_mask: mask.words[quick],
            quick_value: value.words[quick],
            verdict,
            quick_word: quick as u32,
            value,
        };
        let hash = self.hash_of(&entry.value);
        self.mark(&entry.value);
        self.max_rank = self.max_rank.max(entry.rank);
        let rank = entry.rank;
        let at = match self.free.pop() {
            Some(at) => {
                self.entries[at as usize] = entry;
                at
            }
            None => {
                self.entries.push(entry);
                (self.entries.len() - 1) as u32
            }
        };
        let s = self.find_slot(hash);
        if self.slots[s].tag == 0 {
            self.slots[s].tag = tag_of(hash);
            self.used_slots += 1;
        }
        let before = self.chain(self.slots[s].head).take_while(|(_, e)| e.rank > rank).last().map(|(i, _)| i);
        match before {
            None => {
                self.entries[at as usize].next = self.slots[s].head;
                self.slots[s].head = at;
            }
            Some(prev) => {
                self.entries[at as usize].next = self.entries[prev as usize].next;
                self.entries[prev as usize].next = at;
            }
        }
    }

    /// Removes the rule with `rank` whose value is `value`; false when it is not here.
    pub fn remove(&mut self, value: &FlowKey, rank: u64) -> bool {
        let s = self.find_slot(self.hash_of(value));
        let mut prev = None;
        let mut found = None;
        for (i, e) in self.chain(self.slots[s].head) {
            if e.rank == rank {
                found = Some(i);
                break;
            }
            prev = Some(i);
        }
        let Some(at) = found else { return false };
        let next = self.entries[at as usize].next;
        match prev {
            None => self.slots[s].head = next,
            Some(p) => self.entries[p as usize].next = next,
        }
        self.entries[at as usize].rank = 0;
        self.free.push(at);
        if rank == self.max_rank {
            self.max_rank = self.entries.iter().map(|e| e.rank).max().unwrap_or(0);
        }
        true
    }

    /// Rebuilds slots (dropping tombstones) and the pre-filter for `min_slots` slots.
    fn rebuild(&mut self, min_slots: usize) {
        let size = min_slots.next_power_of_two().max(MIN_SLOTS);
        self.slots = vec![EMPTY; size].into_boxed_slice();
        self.used_slots = 0;
        self.choose_filter_words();
        self.filter = vec![0; size * FILTER_BITS_PER_SLOT / 64].into_boxed_slice();
        self.filter_shift = 64 - (size * FILTER_BITS_PER_SLOT).trailing_zeros();
        let mut live: Vec<u32> = (0..self.entries.len() as u32).filter(|&i| self.entries[i as usize].rank != 0).collect();
        let mut masks = Vec::new();
        for &i in &live {
            let e = &mut self.entries[i as usize];
            let mask = self.masks[e.mask_id as usize];
            e.mask_id = match masks.iter().position(|m| *m == mask) {
                Some(at) => at,
                None => {
                    masks.push(mask);
                    masks.len() - 1
                }
            } as u32;
        }
        self.masks = masks;
        // Pushing each chain's rules worst first leaves them best first.
        live.sort_by_key(|&i| self.entries[i as usize].rank);
        for i in live {
            let value = self.entries[i as usize].value;
            let hash = self.hash_of(&value);
            self.mark(&value);
            let s = self.find_slot(hash);
            if self.slots[s].tag == 0 {
                self.slots[s].tag = tag_of(hash);
                self.used_slots += 1;
            }
            self.entries[i as usize].next = self.slots[s].head;
            self.slots[s].head = i;
        }
    }

    /// Picks the two words of the hash mask on which the rules take the most distinct values.
    fn choose_filter_words(&mut self) {
        let mut ranked: Vec<(usize, usize)> = (0..FlowKey::WORDS)
            .filter(|&w| self.hash_mask.words[w] != 0)
            .map(|w| {
                let distinct: HashSet<u64> =
                    self.entries.iter().filter(|e| e.rank != 0).map(|e| e.value.words[w] & self.hash_mask.words[w]).collect();
                (distinct.len(), w)
            })
            .collect();
        ranked.sort_by_key(|&(distinct, w)| (core::cmp::Reverse(distinct), w));
        let first = ranked.first().map_or(0, |&(_, w)| w);
        let second = ranked.get(1).map_or(first, |&(_, w)| w);
        self.filter_words = [first, second];
        let second_mask = if second == first { 0 } else { self.hash_mask.words[second] };
        self.filter_masks = [self.hash_mask.words[first], second_mask];
    }

    /// Slot where the probe for `hash` starts, for prefetching ahead of [`TupleTable::head`].
    #[inline(always)]
    pub fn slot_address(&self, hash: u64) -> *const u8 {
        (&self.slots[hash as usize & (self.slots.len() - 1)] as *const Slot).cast()
    }

    /// The best rule of the bucket `hash` selects, or [`NONE`].
    #[inline(always)]
    pub fn head(&self, hash: u64) -> u32 {
        self.slots[self.find_slot(hash)].head
    }

    /// Address of a chain's rule, for prefetching ahead of [`TupleTable::best_from`].
    #[inline(always)]
    pub fn entry_address(&self, at: u32) -> *const u8 {
        self.entries.as_ptr().wrapping_add(at as usize).cast()
    }

    /// The first (best) rule of the chain from `head` matching `key` above `floor`.
    #[inline(always)]
    pub fn best_from(&self, head: u32, key: &FlowKey, floor: u64) -> Option<&Entry> {
        let mut at = head;
        while let Some(e) = self.entries.get(at as usize) {
            if e.rank <= floor {
                return None;
            }
            if e.matches(key, &self.masks) {
                return Some(e);
            }
            at = e.next;
        }
        None
    }

    /// The best rule in this table matching `key` that ranks above `floor`.
    #[inline(always)]
    pub fn probe(&self, hash: u64, key: &FlowKey, floor: u64) -> Option<&Entry> {
        self.best_from(self.head(hash), key, floor)
    }

    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<Self>()
            + self.slots.len() * core::mem::size_of::<Slot>()
            + self.entries.capacity() * core::mem::size_of::<Entry>()
            + self.free.capacity() * 4
            + self.masks.capacity() * core::mem::size_of::<FlowKey>()
            + self.filter.len() * 8
    }
}
