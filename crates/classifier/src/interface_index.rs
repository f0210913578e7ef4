//! An exact-match front for the rule shape a data plane has most of: "frames on port P to MAC M
//! belong to VR V" (one per VR interface). Such a rule that no rule of higher precedence
//! overlaps decides every frame it matches, so a frame found in this one hash table needs no
//! tuple-table probe at all; the rest fall through to the tuple space search.
//!
//! The index is a snapshot of the rules: built on request, dropped by any change (see
//! [`Classifier::index_interfaces`](crate::Classifier::index_interfaces)).

use crate::key_hash::FastMap;
use crate::rule::{rank, Rule, RuleId, Verdict};
use pearl_wire::flow_key::{Field, FlowKey};

/// The mask of an interface rule: the input port and the destination MAC, nothing else.
fn interface_mask() -> FlowKey {
    FlowKey::default().with(Field::InPort, 0xffff).with(Field::EthDst, (1 << 48) - 1)
}

/// Key of a slot: port in the top 16 bits, MAC below. All ones is no interface's key (the
/// broadcast MAC), so it marks an empty slot.
const EMPTY: u64 = u64::MAX;

#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u64,
    verdict: Verdict,
}

/// Open addressing, linear probing, at most half full.
#[derive(Debug, Clone)]
pub(crate) struct InterfaceIndex {
    slots: Box<[Slot]>,
    /// `slots.len() - 1` (a power of two minus one).
    mask: usize,
}

/// What the index is looked up with: the key words it reads, packed the same way.
#[inline(always)]
pub(crate) fn probe_key(key: &FlowKey) -> u64 {
    (key.words[0] & 0xffff) << 48 | (key.words[1] & ((1 << 48) - 1))
}

#[inline(always)]
fn home(key: u64, mask: usize) -> usize {
    // Fibonacci hashing: the high bits of the product mix every bit of port and MAC.
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & mask
}

/// The two best (rank, rule) under one key: the best other than a given rule is among them.
type BestTwo = [(u64, RuleId); 2];

/// The interface rules no rule of higher rank overlaps, as (probe key, verdict).
///
/// An interface rule (mask S) and a rule of mask M overlap exactly when their values agree on
/// S & M. So rules are grouped by mask, and within a group keyed by their value on S & M: one
/// hash lookup per group tells whether a better rule overlaps, instead of a scan of all rules
/// (thousands of VRs make thousands of interface rules, and the index is rebuilt on every
/// configuration change). A value masked to S is its port and MAC, so its probe key names it.
/// The interface rules' own group, nearly all the rules, is keyed by that alone, without
/// hashing and masking whole keys for each.
fn decisive<'a>(rules: impl Iterator<Item = (RuleId, &'a Rule)> + Clone) -> Vec<(u64, Verdict)> {
    let shape = interface_mask();
    let mut interfaces: FastMap<u64, BestTwo> = FastMap::default();
    let mut groups: FastMap<FlowKey, FastMap<u64, BestTwo>> = FastMap::default();
    for (id, r) in rules.clone() {
        let best = if r.mask == shape {
            interfaces.entry(probe_key(&r.value)).or_insert([(0, id); 2])
        } else {
            let seen = r.mask.masked(&shape);
            groups.entry(r.mask).or_default().entry(probe_key(&r.value.masked(&seen))).or_insert([(0, id); 2])
        };
        let own = (rank(r.priority, id), id);
        if own.0 > best[0].0 {
            *best = [own, best[0]];
        } else if own.0 > best[1].0 {
            best[1] = own;
        }
    }
    let beaten = |by_key: &FastMap<u64, BestTwo>, key: u64, id: RuleId, own: u64| {
        by_key.get(&key).is_some_and(|best| best.iter().any(|&(other_rank, other)| other != id && other_rank > own))
    };
    rules
        .filter(|(_, r)| r.mask == shape)
        .filter(|&(id, r)| {
            let own = rank(r.priority, id);
            !beaten(&interfaces, probe_key(&r.value), id, own)
                && !groups.iter().any(|(mask, by_key)| beaten(by_key, probe_key(&r.value.masked(&mask.masked(&shape))), id, own))
        })
        .map(|(_, r)| (probe_key(&r.value), r.result))
        .filter(|&(key, _)| key != EMPTY)
        .collect()
}

impl InterfaceIndex {
    /// Indexes the interface rules of `rules` that no other rule of higher rank overlaps.
    /// Returns `None` when there are none, so lookups skip the probe altogether.
    pub(crate) fn build<'a>(rules: impl Iterator<Item = (RuleId, &'a Rule)> + Clone) -> Option<InterfaceIndex> {
        let decisive = decisive(rules);
        if decisive.is_empty() {
            return None;
        }
        let size = (decisive.len() * 2).next_power_of_two().max(16);
        let mut slots = vec![Slot { key: EMPTY, verdict: Verdict { vr: crate::VrId(0), rule: None, action: 0 } }; size];
        let mask = size - 1;
        for (key, verdict) in decisive {
            let mut i = home(key, mask);
            while slots[i].key != EMPTY {
                i = (i + 1) & mask;
            }
            slots[i] = Slot { key, verdict };
        }
        Some(InterfaceIndex { slots: slots.into_boxed_slice(), mask })
    }

    /// Starts loading the slot where `key`'s probe begins. A batch spread over thousands of
    /// VRs asks this for every frame before probing any, so that its misses overlap.
    #[inline(always)]
    pub(crate) fn prefetch(&self, key: &FlowKey) {
        crate::table_set::prefetch((&raw const self.slots[home(probe_key(key), self.mask)]).cast());
    }

    /// The verdict of the decisive interface rule matching `key`, if there is one.
    #[inline(always)]
    pub(crate) fn get(&self, key: &FlowKey) -> Option<Verdict> {
        let k = probe_key(key);
        let mut i = home(k, self.mask);
        loop {
            let s = &self.slots[i];
            if s.key == k {
                return Some(s.verdict);
            }
            if s.key == EMPTY {
                return None;
            }
            i = (i + 1) & self.mask;
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(&*self.slots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VrId;
    use proptest::prelude::*;

    /// The definition, rule against rule.
    fn decisive_by_scan(rules: &[(RuleId, Rule)]) -> Vec<(u64, Verdict)> {
        rules
            .iter()
            .filter(|(_, r)| r.mask == interface_mask())
            .filter(|&&(id, r)| {
                let own = rank(r.priority, id);
                !rules.iter().any(|&(other, o)| other != id && rank(o.priority, other) > own && o.overlaps(&r))
            })
            .map(|(_, r)| (probe_key(&r.value), r.result))
            .filter(|&(key, _)| key != EMPTY)
            .collect()
    }

    /// Masks a configuration has: interface rules, shared-VR rules (some MAC bytes), a port,
    /// a multicast bit, an IP field, nothing.
    fn masks() -> Vec<FlowKey> {
        let none = FlowKey::default();
        vec![
            interface_mask(),
            none.with(Field::InPort, 0xffff).with(Field::EthDst, 0xff00_00ff_ff00),
            none.with(Field::InPort, 0xffff),
            none.with(Field::EthDst, 1 << 40),
            none.with(Field::IpDst, 0xff00_0000),
            none,
        ]
    }

    proptest! {
        #[test]
        fn grouping_by_mask_finds_what_a_scan_finds(
            picks in prop::collection::vec((0usize..6, 0u64..3, 0u64..4, 0u64..3, 0u32..4), 0..40),
        ) {
            let macs: [u64; 4] = [0x0200_0000_0100, 0x0201_0000_0001, 0x0300_0000_0100, 0x0200_0000_0101];
            let rules: Vec<(RuleId, Rule)> = picks
                .iter()
                .enumerate()
                .map(|(i, &(m, port, mac, ip, priority))| {
                    let mask = masks()[m];
                    let value = FlowKey::default()
                        .with(Field::InPort, u128::from(port))
                        .with(Field::EthDst, u128::from(macs[mac as usize]))
                        .with(Field::IpDst, u128::from(ip) << 24)
                        .masked(&mask);
                    let rule = Rule { value, mask, priority, result: Verdict { vr: VrId(i as u16), rule: None, action: 0 } };
                    (RuleId(i as u32), rule)
                })
                .collect();
            let mut fast = decisive(rules.iter().map(|(id, r)| (*id, r)));
            let mut scan = decisive_by_scan(&rules);
            fast.sort_by_key(|&(k, v)| (k, v.vr));
            scan.sort_by_key(|&(k, v)| (k, v.vr));
            prop_assert_eq!(fast, scan);
        }
    }
}
