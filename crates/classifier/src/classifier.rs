//! The classifier: per-VR partitions of TCAM-semantics rules over a tuple space search.
//!
//! Lookup probes tuple tables in decreasing order of their best rank and stops as soon as the
//! match in hand outranks every rule of the remaining tables, so high-priority matches cost
//! few probes. Tables are merged TupleMerge-style (see `hash_mask`): a rule joins the most
//! specific existing table whose hash mask its own mask covers, unless its bucket there is
//! already at [`BUCKET_BOUND`]; only then is a new table made.

use crate::error::ClassifierError;
use crate::hash_mask::{bit_count, covered_by, relaxed, unrelaxed};
use crate::partition::Partition;
use crate::rule::{rank, Rule, RuleId, Verdict, VrId};
use crate::same_priority::SamePriorityIndex;
use crate::tuple_table::{Entry, TupleTable};
use pearl_wire::flow_key::FlowKey;
use std::collections::{BTreeMap, HashMap};

/// Most rules a bucket collects before a rule is sent to a more specific table: bounds the
/// full compares one probe can cost.
pub const BUCKET_BOUND: usize = 3;

/// Keys a batch lookup advances together, so the slot loads of one table overlap.
const BATCH: usize = 16;

/// A packet classifier with TCAM semantics: the highest-priority matching rule wins, equal
/// priorities go to the lower [`RuleId`]. Cloning gives an independent copy, which is how the
/// data plane publishes an update (read-copy-update); lookups never allocate.
#[derive(Debug, Clone, Default)]
pub struct Classifier {
    /// Sorted by decreasing `max_rank`.
    tables: Vec<TupleTable>,
    rules: HashMap<RuleId, Rule>,
    partitions: BTreeMap<VrId, Partition>,
    same_priority: SamePriorityIndex,
    next_id: u32,
}

impl Classifier {
    pub fn new() -> Classifier {
        Classifier::default()
    }

    /// Caps how many rules `vr` may hold, so one VR cannot take the rules another needs.
    pub fn set_quota(&mut self, vr: VrId, max_rules: usize) -> Result<(), ClassifierError> {
        let part = self.partitions.entry(vr).or_default();
        let used = part.rules.len();
        if used > max_rules {
            return Err(ClassifierError::QuotaBelowUsage { vr, quota: max_rules, used });
        }
        part.quota = Some(max_rules);
        Ok(())
    }

    pub fn quota(&self, vr: VrId) -> Option<usize> {
        self.partitions.get(&vr).and_then(|p| p.quota)
    }

    /// Installs a rule in the partition of `rule.result.vr`. On error nothing changes.
    pub fn insert(&mut self, rule: Rule) -> Result<RuleId, ClassifierError> {
        rule.validate()?;
        let vr = rule.result.vr;
        if let Some(part) = self.partitions.get(&vr) {
            if part.is_full() {
                return Err(ClassifierError::QuotaExceeded { vr, quota: part.quota.unwrap_or(0) });
            }
        }
        if let Some((other, other_vr)) = self.same_priority.conflict(&rule) {
            return Err(ClassifierError::AmbiguousOverlap { vr, other, other_vr, priority: rule.priority });
        }
        if self.next_id == u32::MAX {
            return Err(ClassifierError::OutOfRuleIds);
        }
        let id = RuleId(self.next_id);
        self.next_id += 1;
        self.place(Entry { rank: rank(rule.priority, id), value: rule.value, mask: rule.mask, verdict: rule.result });
        self.same_priority.insert(id, &rule);
        self.partitions.entry(vr).or_default().rules.insert(id);
        self.rules.insert(id, rule);
        Ok(id)
    }

    fn place(&mut self, entry: Entry) {
        let mask = entry.mask;
        let joinable = self
            .tables
            .iter()
            .enumerate()
            .filter(|(_, t)| covered_by(&t.hash_mask, &mask) && t.bucket_len(&entry.value) < BUCKET_BOUND)
            .max_by_key(|(_, t)| bit_count(&t.hash_mask))
            .map(|(i, _)| i);
        let at = joinable.unwrap_or_else(|| {
            let coarse = relaxed(&mask);
            let hash_mask = if self.tables.iter().any(|t| t.hash_mask == coarse) { unrelaxed(&mask) } else { coarse };
            self.tables.iter().position(|t| t.hash_mask == hash_mask).unwrap_or_else(|| {
                self.tables.push(TupleTable::new(hash_mask));
                self.tables.len() - 1
            })
        });
        self.tables[at].insert(entry);
        self.sort_tables();
    }

    fn sort_tables(&mut self) {
        self.tables.retain(|t| t.rules() > 0);
        self.tables.sort_by(|a, b| b.max_rank.cmp(&a.max_rank));
    }

    /// Uninstalls a rule and returns it.
    pub fn remove(&mut self, id: RuleId) -> Result<Rule, ClassifierError> {
        let rule = self.rules.remove(&id).ok_or(ClassifierError::UnknownRule(id))?;
        let r = rank(rule.priority, id);
        let removed = self
            .tables
            .iter_mut()
            .any(|t| covered_by(&t.hash_mask, &rule.mask) && t.remove(&rule.value, r));
        debug_assert!(removed, "{id} was installed but no table held it");
        self.sort_tables();
        self.same_priority.remove(id, &rule);
        if let Some(part) = self.partitions.get_mut(&rule.result.vr) {
            part.rules.remove(&id);
        }
        Ok(rule)
    }

    /// Removes a VR's rules and its quota; returns how many rules it held.
    pub fn remove_partition(&mut self, vr: VrId) -> usize {
        let Some(part) = self.partitions.remove(&vr) else { return 0 };
        for &id in &part.rules {
            let rule = self.rules.remove(&id).expect("partition lists only installed rules");
            let r = rank(rule.priority, id);
            self.tables.iter_mut().any(|t| covered_by(&t.hash_mask, &rule.mask) && t.remove(&rule.value, r));
            self.same_priority.remove(id, &rule);
        }
        self.sort_tables();
        part.rules.len()
    }

    pub fn rule(&self, id: RuleId) -> Option<&Rule> {
        self.rules.get(&id)
    }

    /// A VR's rules in id (installation) order.
    pub fn partition_rules(&self, vr: VrId) -> impl Iterator<Item = (RuleId, &Rule)> + '_ {
        self.partitions.get(&vr).into_iter().flat_map(move |p| p.rules.iter().map(move |id| (*id, &self.rules[id])))
    }

    /// VRs that hold rules or have a quota.
    pub fn vrs(&self) -> impl Iterator<Item = VrId> + '_ {
        self.partitions.keys().copied()
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Number of tuple tables a lookup may probe.
    pub fn table_count(&self) -> usize {
        self.tables.len()
    }

    /// Estimated heap and inline bytes of the whole classifier (lookup tables and the
    /// control-plane indexes).
    pub fn memory_bytes(&self) -> usize {
        let lookup: usize = self.tables.iter().map(TupleTable::memory_bytes).sum();
        let per_rule = core::mem::size_of::<(RuleId, Rule)>() + 8 // rule map, with its control byte
            + 2 * core::mem::size_of::<RuleId>() // partition set
            + core::mem::size_of::<(FlowKey, Vec<(RuleId, VrId)>)>() + 8; // same-priority index
        core::mem::size_of::<Self>() + lookup + self.rules.len() * per_rule
    }

    /// The winning rule for `key`, if any matches.
    pub fn lookup(&self, key: &FlowKey) -> Option<(RuleId, Verdict)> {
        let mut best: Option<&Entry> = None;
        let mut floor = 0;
        for table in &self.tables {
            if table.max_rank <= floor {
                break;
            }
            if let Some(e) = table.probe(table.hash_of(key), key, floor) {
                floor = e.rank;
                best = Some(e);
            }
        }
        best.map(|e| (e.id(), e.verdict))
    }

    /// Classifies `keys` into `out` (same length). Keys advance through the tables in groups:
    /// all hashes of a group for one table are computed and their slots prefetched before any
    /// is probed, so the cache misses of different keys overlap.
    pub fn lookup_batch(&self, keys: &[FlowKey], out: &mut [Option<Verdict>]) {
        assert_eq!(keys.len(), out.len(), "lookup_batch needs one output per key");
        for (keys, out) in keys.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            self.lookup_group(keys, out);
        }
    }

    #[inline(always)]
    fn lookup_group(&self, keys: &[FlowKey], out: &mut [Option<Verdict>]) {
        let mut floor = [0u64; BATCH];
        let mut best: [Option<&Entry>; BATCH] = [None; BATCH];
        let mut hashes = [0u64; BATCH];
        for table in &self.tables {
            let mut pending = false;
            for (k, key) in keys.iter().enumerate() {
                if table.max_rank > floor[k] {
                    let h = table.hash_of(key);
                    prefetch(table.slot_address(h));
                    hashes[k] = h;
                    pending = true;
                } else {
                    hashes[k] = 0;
                }
            }
            if !pending {
                break;
            }
            for (k, key) in keys.iter().enumerate() {
                if hashes[k] != 0 {
                    if let Some(e) = table.probe(hashes[k], key, floor[k]) {
                        floor[k] = e.rank;
                        best[k] = Some(e);
                    }
                }
            }
        }
        for (o, b) in out.iter_mut().zip(best) {
            *o = b.map(|e| e.verdict);
        }
    }
}

#[inline(always)]
fn prefetch(addr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(addr.cast(), core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}
impl Classifier {
    pub fn tmp_stats(&self, key: &FlowKey) -> (usize, usize, usize) {
        let mut floor = 0; let mut probes = 0; let mut hits = 0; let mut checked = 0;
        for table in &self.tables {
            if table.max_rank <= floor { break; }
            probes += 1;
            let (e, c) = table.tmp_probe(table.hash_of(key), key, floor);
            checked += c; if c > 0 { hits += 1; }
            if let Some(e) = e { floor = e.rank; }
        }
        (probes, hits, checked)
    }
    pub fn tmp_tables(&self) { for t in &self.tables { eprintln!("{:>6} rules max {:>12x} mask {:x?}", t.rules(), t.max_rank >> 32, t.hash_mask.words); } }
}
