//! The tuple tables of one traffic class, and lookup over them.
//!
//! Lookup probes tuple tables in decreasing order of their best rank and stops as soon as the
//! match in hand outranks every rule of the remaining tables, so high-priority matches cost
//! few probes. Tables are merged TupleMerge-style (see `hash_mask`): a rule joins the most
//! specific existing table whose hash mask its own mask covers, unless its bucket there is
//! already at [`BUCKET_BOUND`]; only then is a new table made. Each table has a pre-filter in
//! front of its hash, so most tables cost a key one bit test.
//!
//! Merging is unbounded within a traffic class: once IPv4 and IPv6 rules no longer share
//! tables, a coarse table rarely gathers near misses, and every extra table costs every key
//! of the class a pre-filter test (bounding how much coarser than a rule its table may be
//! measured slower at 16K and 64K rules).

use crate::filter_pass::{FilterPass, KeyColumns};
use crate::hash_mask::{covered_by, relaxed, unrelaxed};
use crate::rule::{Rule, Verdict};
use crate::traffic_class;
use crate::tuple_table::{Entry, TupleTable, NONE};
use pearl_wire::flow_key::{Field, FlowKey};

/// Most rules a bucket collects before a rule is sent to a more specific table: bounds the
/// full compares one probe can cost.
pub const BUCKET_BOUND: usize = 8;

#[derive(Debug, Clone)]
pub(crate) struct TableSet {
    /// Sorted by decreasing `max_rank`.
    tables: Vec<TupleTable>,
    /// Bits all keys of this set's traffic class share (see `specificity`).
    constant: FlowKey,
}

impl TableSet {
    pub fn new(class: usize) -> TableSet {
        TableSet { tables: Vec::new(), constant: traffic_class::constant_bits(class) }
    }

    /// How well hashing on `hash_mask` tells this class's keys apart; a rule joins the
    /// covering table that scores highest. Bits all keys share count nothing, and address
    /// bits count twice: addresses spread over thousands of sites, while protocol, port and
    /// EtherType bits take a handful of values. Counting every bit alike tied a destination
    /// /16 table with a destination /8 + protocol one, and the /16–/23 rules that went to the
    /// latter cost IPv4 keys about 0.2 fruitless bucket visits each.
    fn specificity(&self, hash_mask: &FlowKey) -> u32 {
        let varying = FlowKey { words: core::array::from_fn(|i| hash_mask.words[i] & !self.constant.words[i]) };
        let address = varying.get(Field::IpSrc).count_ones() + varying.get(Field::IpDst).count_ones();
        varying.words.iter().map(|w| w.count_ones()).sum::<u32>() + address
    }

    pub fn place(&mut self, rank: u64, rule: &Rule) {
        let mask = rule.mask;
        let coarse = relaxed(&mask);
        let joinable = self
            .tables
            .iter()
            .enumerate()
            .filter(|(_, t)| covered_by(&t.hash_mask, &mask) && t.bucket_len(&rule.value) < BUCKET_BOUND)
            .max_by_key(|(_, t)| self.specificity(&t.hash_mask))
            .map(|(i, _)| i);
        let at = joinable.unwrap_or_else(|| {
            let hash_mask = if self.tables.iter().any(|t| t.hash_mask == coarse) { unrelaxed(&mask) } else { coarse };
            self.tables.iter().position(|t| t.hash_mask == hash_mask).unwrap_or_else(|| {
                self.tables.push(TupleTable::new(hash_mask));
                self.tables.len() - 1
            })
        });
        self.tables[at].insert(rank, rule.value, &rule.mask, rule.result);
        self.sort_tables();
    }

    /// Removes the rule with `rank` placed from `rule`; false when it is not here.
    pub fn remove(&mut self, rank: u64, rule: &Rule) -> bool {
        let removed = self.tables.iter_mut().any(|t| covered_by(&t.hash_mask, &rule.mask) && t.remove(&rule.value, rank));
        self.sort_tables();
        removed
    }

    fn sort_tables(&mut self) {
        self.tables.retain(|t| t.rules() > 0);
        self.tables.sort_by_key(|t| core::cmp::Reverse(t.max_rank));
    }

    pub fn len(&self) -> usize {
        self.tables.len()
    }

    pub fn memory_bytes(&self) -> usize {
        self.tables.iter().map(TupleTable::memory_bytes).sum()
    }

    /// The best rule matching `key`.
    pub fn lookup(&self, key: &FlowKey) -> Option<&Entry> {
        let mut best: Option<&Entry> = None;
        let mut floor = 0;
        for table in &self.tables {
            if table.max_rank <= floor {
                break;
            }
            if !table.may_match(key) {
                continue;
            }
            if let Some(e) = table.probe(table.hash_of(key), key, floor) {
                floor = e.rank;
                best = Some(e);
            }
        }
        best
    }

    /// Classifies the keys at batch positions `members` (at most `N`) of `keys`, writing
    /// each verdict to the same position of `out`; `columns` is scratch space for the keys.
    ///
    /// Per table, the members that still need it and pass its pre-filter are selected first
    /// (see `filter_pass`), then three passes run over them: hash and prefetch the slot; find
    /// the bucket and prefetch its best rule; verify the keys whose bucket is not empty. Each
    /// pass issues independent loads for all selected keys, so their cache misses overlap.
    #[inline(always)]
    pub fn lookup_group<const N: usize>(
        &self,
        pass: FilterPass,
        columns: &mut KeyColumns<N>,
        keys: &[FlowKey],
        members: &[u16],
        out: &mut [Option<Verdict>],
    ) {
        columns.load(members.iter().map(|&k| &keys[usize::from(k)]));
        let columns = &*columns;
        let mut floor = [0u64; N];
        let mut best: [Option<&Entry>; N] = [None; N];
        let mut todo = [0u16; N];
        let mut hashes = [0u64; N];
        let mut heads = [0u32; N];
        let key = |m: u16| &keys[usize::from(members[usize::from(m)])];
        for table in &self.tables {
            let (n, live) = pass.select(table, columns, &floor, &mut todo);
            if !live {
                break;
            }
            for i in 0..n {
                let h = table.hash_of(key(todo[i]));
                prefetch(table.slot_address(h));
                hashes[i] = h;
            }
            // Keys whose bucket is empty (the pre-filter only checks two words) drop out here,
            // so they cost neither a prefetch nor a verify step. An empty bucket's head address
            // would be bogus, and a prefetch of an unmapped address still costs a page walk.
            let mut hits = 0;
            for i in 0..n {
                let head = table.head(hashes[i]);
                let entry = table.entry_address(if head == NONE { 0 } else { head });
                prefetch(entry);
                prefetch(entry.wrapping_add(64));
                heads[hits] = head;
                todo[hits] = todo[i];
                hits += usize::from(head != NONE);
            }
            for i in 0..hits {
                let m = usize::from(todo[i]);
                let found = table.best_from(heads[i], key(todo[i]), floor[m]);
                floor[m] = floor[m].max(found.map_or(0, |e| e.rank));
                best[m] = found.or(best[m]);
            }
        }
        for (&k, b) in members.iter().zip(best) {
            out[usize::from(k)] = b.map(|e| e.verdict);
        }
    }
}

#[inline(always)]
pub(crate) fn prefetch(addr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(addr.cast(), core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}
