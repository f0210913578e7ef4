//! The classifier: per-VR partitions of TCAM-semantics rules, looked up through one set of
//! tuple tables per traffic class (see `traffic_class` and `table_set`).

use crate::error::ClassifierError;
use crate::filter_pass::{FilterPass, KeyColumns, BATCH, SMALL_BATCH};
use crate::interface_index::InterfaceIndex;
use crate::partition::Partition;
use crate::rule::{rank, Rule, RuleId, Verdict, VrId};
use crate::same_priority::SamePriorityIndex;
use crate::table_set::{prefetch, TableSet};
use crate::traffic_class::{self, CLASSES};
use pearl_wire::flow_key::FlowKey;
use std::collections::{BTreeMap, HashMap};

/// A packet classifier with TCAM semantics: the highest-priority matching rule wins, equal
/// priorities go to the lower [`RuleId`]. Cloning gives an independent copy, which is how the
/// data plane publishes an update (read-copy-update); lookups never allocate.
#[derive(Debug, Clone)]
pub struct Classifier {
    /// Indexed by traffic class.
    classes: [TableSet; CLASSES],
    rules: HashMap<RuleId, Rule>,
    partitions: BTreeMap<VrId, Partition>,
    same_priority: SamePriorityIndex,
    next_id: u32,
    /// The decisive interface rules, when indexed since the last change.
    interfaces: Option<InterfaceIndex>,
}

impl Default for Classifier {
    fn default() -> Classifier {
        Classifier {
            classes: core::array::from_fn(TableSet::new),
            rules: HashMap::new(),
            partitions: BTreeMap::new(),
            same_priority: SamePriorityIndex::default(),
            next_id: 0,
            interfaces: None,
        }
    }
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
        self.interfaces = None;
        for class in traffic_class::of_rule(&rule.value, &rule.mask) {
            self.classes[class].place(rank(rule.priority, id), &rule);
        }
        self.same_priority.insert(id, &rule);
        self.partitions.entry(vr).or_default().rules.insert(id);
        self.rules.insert(id, rule);
        Ok(id)
    }

    /// Uninstalls a rule and returns it.
    pub fn remove(&mut self, id: RuleId) -> Result<Rule, ClassifierError> {
        let rule = self.rules.remove(&id).ok_or(ClassifierError::UnknownRule(id))?;
        self.interfaces = None;
        self.unplace(id, &rule);
        self.same_priority.remove(id, &rule);
        if let Some(part) = self.partitions.get_mut(&rule.result.vr) {
            part.rules.remove(&id);
        }
        Ok(rule)
    }

    /// Removes a VR's rules and its quota; returns how many rules it held.
    pub fn remove_partition(&mut self, vr: VrId) -> usize {
        let Some(part) = self.partitions.remove(&vr) else { return 0 };
        self.interfaces = None;
        for &id in &part.rules {
            let rule = self.rules.remove(&id).expect("partition lists only installed rules");
            self.unplace(id, &rule);
            self.same_priority.remove(id, &rule);
        }
        part.rules.len()
    }

    fn unplace(&mut self, id: RuleId, rule: &Rule) {
        for class in traffic_class::of_rule(&rule.value, &rule.mask) {
            let removed = self.classes[class].remove(rank(rule.priority, id), rule);
            debug_assert!(removed, "{id} was installed but no table of its class held it");
        }
    }

    /// Puts the interface rules (exact input port and destination MAC, nothing else) that no
    /// rule of higher precedence overlaps into one hash table that batch lookups consult first:
    /// a frame to a VR interface then costs one probe instead of a tuple space search. Call it
    /// once a set of rules is complete; any later change drops the index (lookups stay exact,
    /// only slower) until it is called again. Costs O(rules × distinct masks).
    pub fn index_interfaces(&mut self) {
        self.interfaces = InterfaceIndex::build(self.rules.iter().map(|(id, r)| (*id, r)));
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

    /// Number of tuple tables, over all traffic classes (a key probes those of its class).
    pub fn table_count(&self) -> usize {
        self.classes.iter().map(TableSet::len).sum()
    }

    /// Estimated heap and inline bytes of the whole classifier (lookup tables and the
    /// control-plane indexes).
    pub fn memory_bytes(&self) -> usize {
        let lookup: usize = self.classes.iter().map(TableSet::memory_bytes).sum();
        let per_rule = core::mem::size_of::<(RuleId, Rule)>() + 8 // rule map, with its control byte
            + 2 * core::mem::size_of::<RuleId>() // partition set
            + core::mem::size_of::<(FlowKey, Vec<(RuleId, VrId)>)>() + 8; // same-priority index
        let index = self.interfaces.as_ref().map_or(0, InterfaceIndex::memory_bytes);
        core::mem::size_of::<Self>() + lookup + index + self.rules.len() * per_rule
    }

    /// The winning rule for `key`, if any matches.
    pub fn lookup(&self, key: &FlowKey) -> Option<(RuleId, Verdict)> {
        self.classes[traffic_class::of_key(key)].lookup(key).map(|e| (e.id(), e.verdict))
    }

    /// Classifies `keys` into `out` (same length). Keys advance through the tables in groups
    /// of one traffic class: all hashes of a group for one table are computed and their slots
    /// prefetched before any is probed, so the cache misses of different keys overlap.
    pub fn lookup_batch(&self, keys: &[FlowKey], out: &mut [Option<Verdict>]) {
        assert_eq!(keys.len(), out.len(), "lookup_batch needs one output per key");
        if keys.len() <= SMALL_BATCH {
            self.lookup_chunks::<SMALL_BATCH>(keys, out);
        } else {
            self.lookup_chunks::<BATCH>(keys, out);
        }
    }

    fn lookup_chunks<const N: usize>(&self, keys: &[FlowKey], out: &mut [Option<Verdict>]) {
        let pass = FilterPass::detect();
        // Made on first need: a batch the interface index settles whole never pays for it.
        let mut columns: Option<KeyColumns<N>> = None;
        for (at, (keys_now, out)) in keys.chunks(N).zip(out.chunks_mut(N)).enumerate() {
            // The next group's keys are fetched while this group is probed: a caller's key
            // array larger than the caches would otherwise stall on every group's first pass.
            let next = keys.get((at + 1) * N..).unwrap_or_default();
            let next = &next[..next.len().min(N)];
            let bytes = core::mem::size_of_val(next);
            for line in (0..bytes).step_by(64) {
                prefetch(next.as_ptr().cast::<u8>().wrapping_add(line));
            }
            let keys = keys_now;
            if let Some(ix) = &self.interfaces {
                keys.iter().for_each(|key| ix.prefetch(key));
            }
            let mut members = [[0u16; N]; CLASSES];
            let mut counts = [0usize; CLASSES];
            for (k, key) in keys.iter().enumerate() {
                if let Some(v) = self.interfaces.as_ref().and_then(|ix| ix.get(key)) {
                    out[k] = Some(v);
                    continue;
                }
                let class = traffic_class::of_key(key);
                members[class][counts[class]] = k as u16;
                counts[class] += 1;
            }
            for ((set, members), count) in self.classes.iter().zip(&members).zip(counts) {
                if count > 0 {
                    let columns = columns.get_or_insert_with(KeyColumns::<N>::new);
                    set.lookup_group::<N>(pass, columns, keys, &members[..count], out);
                }
            }
        }
    }
}
