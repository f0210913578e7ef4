//! One hash table of tuple space search: rules whose masks all cover the table's hash mask,
//! bucketed by the hash of their value under that mask.
//!
//! Open addressing with linear probing over 24-byte slots (hash + boxed bucket) keeps a miss,
//! the common case when probing many tables, to about one cache line. A bucket lists its rules
//! best-first so verification stops at the first full match or once ranks fall below the best
//! match found in earlier tables.

use crate::key_hash::masked_hash;
use crate::rule::{RuleId, Verdict};
use pearl_wire::flow_key::FlowKey;

/// A rule as the lookup path sees it.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub rank: u64,
    pub value: FlowKey,
    pub mask: FlowKey,
    pub verdict: Verdict,
}

impl Entry {
    pub fn id(&self) -> RuleId {
        RuleId(u32::MAX - self.rank as u32)
    }
}

/// `hash == 0` marks a never-used slot; a used slot whose bucket emptied stays as a tombstone
/// (probes walk past it) until the next rehash.
#[derive(Debug, Clone, Default)]
struct Slot {
    hash: u64,
    bucket: Box<[Entry]>,
}

#[derive(Debug, Clone)]
pub(crate) struct TupleTable {
    pub hash_mask: FlowKey,
    /// Best rank in the table; lookups skip the table once they hold a match at least as good.
    pub max_rank: u64,
    slots: Box<[Slot]>,
    used_slots: usize,
    rules: usize,
}

const MIN_SLOTS: usize = 8;

impl TupleTable {
    pub fn new(hash_mask: FlowKey) -> TupleTable {
        TupleTable {
            hash_mask,
            max_rank: 0,
            slots: (0..MIN_SLOTS).map(|_| Slot::default()).collect(),
            used_slots: 0,
            rules: 0,
        }
    }

    pub fn rules(&self) -> usize {
        self.rules
    }

    pub fn hash_of(&self, key: &FlowKey) -> u64 {
        masked_hash(key, &self.hash_mask)
    }

    /// Index of the slot holding `hash`, or of the empty slot where it would go.
    #[inline(always)]
    fn find_slot(&self, hash: u64) -> usize {
        let wrap = self.slots.len() - 1;
        let mut i = hash as usize & wrap;
        loop {
            let h = self.slots[i].hash;
            if h == hash || h == 0 {
                return i;
            }
            i = (i + 1) & wrap;
        }
    }

    /// Number of rules sharing the bucket `value` falls in.
    pub fn bucket_len(&self, value: &FlowKey) -> usize {
        self.slots[self.find_slot(self.hash_of(value))].bucket.len()
    }

    pub fn insert(&mut self, entry: Entry) {
        if 2 * (self.used_slots + 1) > self.slots.len() {
            self.rehash();
        }
        let hash = self.hash_of(&entry.value);
        let i = self.find_slot(hash);
        let slot = &mut self.slots[i];
        if slot.hash == 0 {
            slot.hash = hash;
            self.used_slots += 1;
        }
        let mut bucket = std::mem::take(&mut slot.bucket).into_vec();
        let at = bucket.partition_point(|e| e.rank > entry.rank);
        self.max_rank = self.max_rank.max(entry.rank);
        bucket.insert(at, entry);
        slot.bucket = bucket.into_boxed_slice();
        self.rules += 1;
    }

    /// Removes the rule with `rank` whose value is `value`; false when it is not here.
    pub fn remove(&mut self, value: &FlowKey, rank: u64) -> bool {
        let i = self.find_slot(self.hash_of(value));
        let slot = &mut self.slots[i];
        let Some(at) = slot.bucket.iter().position(|e| e.rank == rank) else {
            return false;
        };
        let mut bucket = std::mem::take(&mut slot.bucket).into_vec();
        bucket.remove(at);
        slot.bucket = bucket.into_boxed_slice();
        self.rules -= 1;
        if rank == self.max_rank {
            self.max_rank = self.slots.iter().filter_map(|s| s.bucket.first()).map(|e| e.rank).max().unwrap_or(0);
        }
        true
    }

    /// Grows when live buckets fill half the slots, and drops tombstones either way.
    fn rehash(&mut self) {
        let live = self.slots.iter().filter(|s| !s.bucket.is_empty()).count();
        let size = (4 * (live + 1)).next_power_of_two().max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, (0..size).map(|_| Slot::default()).collect());
        self.used_slots = 0;
        for slot in old.into_vec().into_iter().filter(|s| !s.bucket.is_empty()) {
            let i = self.find_slot(slot.hash);
            self.slots[i] = slot;
            self.used_slots += 1;
        }
    }

    /// Start of the slot run `hash` probes, for prefetching ahead of [`TupleTable::probe`].
    #[inline(always)]
    pub fn slot_address(&self, hash: u64) -> *const u8 {
        let i = hash as usize & (self.slots.len() - 1);
        (&self.slots[i] as *const Slot).cast()
    }

    /// The best rule in this table matching `key` that ranks above `floor`.
    #[inline(always)]
    pub fn probe(&self, hash: u64, key: &FlowKey, floor: u64) -> Option<&Entry> {
        let slot = &self.slots[self.find_slot(hash)];
        for e in slot.bucket.iter() {
            if e.rank <= floor {
                break;
            }
            if key.matches(&e.value, &e.mask) {
                return Some(e);
            }
        }
        None
    }

    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<Self>()
            + self.slots.len() * core::mem::size_of::<Slot>()
            + self.rules * core::mem::size_of::<Entry>()
    }
}
impl TupleTable {
    pub fn tmp_probe(&self, hash: u64, key: &FlowKey, floor: u64) -> (Option<&Entry>, usize) {
        let slot = &self.slots[self.find_slot(hash)];
        let mut c = 0;
        for e in slot.bucket.iter() {
            if e.rank <= floor { break; }
            c += 1;
            if key.matches(&e.value, &e.mask) { return (Some(e), c); }
        }
        (None, c)
    }
}
