//! An exact-match front for the rule shape a data plane has most of: "frames on port P to MAC M
//! belong to VR V" (one per VR interface). Such a rule that no rule of higher precedence
//! overlaps decides every frame it matches, so a frame found in this one hash table needs no
//! tuple-table probe at all; the rest fall through to the tuple space search.
//!
//! The index is a snapshot of the rules: built on request, dropped by any change (see
//! [`Classifier::index_interfaces`](crate::Classifier::index_interfaces)).

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

impl InterfaceIndex {
    /// Indexes the interface rules of `rules` that no other rule of higher rank overlaps.
    /// Returns `None` when there are none, so lookups skip the probe altogether.
    pub(crate) fn build<'a>(rules: impl Iterator<Item = (RuleId, &'a Rule)> + Clone) -> Option<InterfaceIndex> {
        let shape = interface_mask();
        let decisive: Vec<(u64, Verdict)> = rules
            .clone()
            .filter(|(_, r)| r.mask == shape)
            .filter(|&(id, r)| {
                let own = rank(r.priority, id);
                !rules.clone().any(|(other, o)| other != id && rank(o.priority, other) > own && o.overlaps(r))
            })
            .map(|(_, r)| (probe_key(&r.value), r.result))
            .filter(|&(key, _)| key != EMPTY)
            .collect();
        if decisive.is_empty() {
            return None;
        }
        let size = (decisive.len() * 2).next_power_of_two().max(16);
        let mut slots = vec![Slot { key: EMPTY, verdict: Verdict { vr: crate::VrId(0), action: 0 } }; size];
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
