//! What the VRs of a running configuration claim that no other VR may (names, MACs, ids,
//! tokens, match rules by priority, NAT reservations, the distribution on each port) and what
//! other VRs rely on (the names leaks import from), kept from change to change by whoever
//! changes the configuration. With thousands of VRs, finding these anew for every one-VR
//! change cost more than all the rest of its validation; looked up here, a change is checked
//! in time proportional to the VR it touches (`vr_edit.rs`).

use crate::model::{Config, Distribution, Mac, MatchRule, NatConfig, Placement, VrConfig, VrKind, MAX_VR_ID};
use crate::nat::reservations_overlap;
use serde_json::Value;
use std::collections::HashMap;

/// Words of the id bitmap: one bit per possible VR id.
const ID_WORDS: usize = (MAX_VR_ID as usize + 1) / 64;

/// The claims of a configuration's VRs, each by the id of the VR that makes it: ids, unlike
/// positions, stay when a VR listed earlier goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VrIndex {
    /// The VRs' ids in the order of the list.
    order: Vec<u16>,
    /// Name → (id, kind): leaks import from fast VRs only.
    names: HashMap<String, (u16, VrKind)>,
    macs: HashMap<Mac, u16>,
    ids: [u64; ID_WORDS],
    tokens: HashMap<String, u16>,
    /// Match rules by priority: only rules at one priority can be ambiguous.
    rules: HashMap<u32, Vec<(u16, MatchRule)>>,
    nat: Vec<(u16, NatConfig)>,
    /// Name → how many leaks import from the VR of that name.
    imported: HashMap<String, usize>,
    /// `[port][distribution]`: how many VRs with that distribution have an interface there.
    on_port: Vec<[usize; 3]>,
    /// VRs of kind fast placed on the fast path (`node.fast_slots` bounds them).
    fast_placed: usize,
    /// VRs whose validation depends on more than their entry: they read files or are placed
    /// by the whole node (`auto`), so a change cannot take them as they were.
    anew: usize,
}

impl VrIndex {
    /// The index of `config`, validated from `doc` (whose entries hold the VRs' tokens).
    pub fn of(config: &Config, doc: &Value) -> VrIndex {
        let mut index = VrIndex {
            order: Vec::with_capacity(config.vrs.len()),
            names: HashMap::with_capacity(config.vrs.len()),
            macs: HashMap::with_capacity(2 * config.vrs.len()),
            ids: [0; ID_WORDS],
            tokens: HashMap::new(),
            rules: HashMap::new(),
            nat: Vec::new(),
            imported: HashMap::new(),
            on_port: vec![[0; 3]; config.ports.len()],
            fast_placed: 0,
            anew: 0,
        };
        let entries = doc["vrs"].as_array().map(Vec::as_slice).unwrap_or_default();
        for (i, vr) in config.vrs.iter().enumerate() {
            index.insert(i, vr, entries.get(i).unwrap_or(&Value::Null));
        }
        index
    }

    /// How many VRs the index holds.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The position in the list of the VR named `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        let (id, _) = self.names.get(name)?;
        self.order.iter().position(|i| i == id)
    }

    /// Takes in `vr`, now at `position` of the list, whose entry is `entry`.
    pub fn insert(&mut self, position: usize, vr: &VrConfig, entry: &Value) {
        let id = vr.id;
        self.order.insert(position, id);
        self.names.insert(vr.name.clone(), (id, vr.kind));
        self.macs.extend(vr.interfaces.iter().map(|i| (i.mac, id)));
        self.ids[usize::from(id) / 64] |= 1 << (id % 64);
        if let Some(t) = token(entry) {
            self.tokens.insert(t.to_string(), id);
        }
        // Kept in the order of ids, so that an index kept from change to change equals one
        // made anew.
        for rule in &vr.matches {
            let rules = self.rules.entry(rule.priority).or_default();
            rules.insert(rules.partition_point(|(owner, _)| *owner <= id), (id, rule.clone()));
        }
        if let Some(n) = vr.nat {
            self.nat.insert(self.nat.partition_point(|(owner, _)| *owner <= id), (id, n));
        }
        for leak in &vr.leak {
            *self.imported.entry(leak.from.clone()).or_default() += 1;
        }
        for p in ports_of(vr) {
            self.on_port[p][distribution_slot(vr.distribution)] += 1;
        }
        self.fast_placed += usize::from(fast_placed(vr));
        self.anew += usize::from(validated_anew(vr));
    }

    /// Lets go of `vr`, at `position` of the list, whose entry was `entry`.
    pub fn remove(&mut self, position: usize, vr: &VrConfig, entry: &Value) {
        let id = vr.id;
        self.order.remove(position);
        self.names.remove(&vr.name);
        for i in &vr.interfaces {
            self.macs.remove(&i.mac);
        }
        self.ids[usize::from(id) / 64] &= !(1 << (id % 64));
        if let Some(t) = token(entry) {
            self.tokens.remove(t);
        }
        for rule in &vr.matches {
            if let Some(rules) = self.rules.get_mut(&rule.priority) {
                rules.retain(|(owner, _)| *owner != id);
                if rules.is_empty() {
                    self.rules.remove(&rule.priority);
                }
            }
        }
        self.nat.retain(|(owner, _)| *owner != id);
        for leak in &vr.leak {
            if let Some(n) = self.imported.get_mut(&leak.from) {
                *n -= 1;
                if *n == 0 {
                    self.imported.remove(&leak.from);
                }
            }
        }
        for p in ports_of(vr) {
            self.on_port[p][distribution_slot(vr.distribution)] -= 1;
        }
        self.fast_placed -= usize::from(fast_placed(vr));
        self.anew -= usize::from(validated_anew(vr));
    }

    /// The lowest id no VR but `except` holds.
    pub(crate) fn lowest_free_id(&self, except: Option<u16>) -> Option<u16> {
        let mut ids = self.ids;
        if let Some(e) = except {
            ids[usize::from(e) / 64] &= !(1 << (e % 64));
        }
        let word = ids.iter().position(|&w| w != u64::MAX)?;
        Some((word * 64) as u16 + ids[word].trailing_ones() as u16)
    }

    /// Whether every VR but `except` can be taken as it was: none is validated anew.
    pub(crate) fn all_reusable_but(&self, except: Option<&VrConfig>) -> bool {
        self.anew == except.map_or(0, |v| usize::from(validated_anew(v)))
    }

    /// Whether a VR but `except` imports routes from the VR named `name`.
    pub(crate) fn imported_from(&self, name: &str) -> bool {
        self.imported.contains_key(name)
    }

    /// Whether `vr`, whose entry holds `token`, claims nothing a VR but `except` (the one it
    /// replaces) holds, and agrees with them on what VRs share. Only a yes is final: a no may
    /// be an error the whole validation words.
    pub(crate) fn admits(&self, vr: &VrConfig, token: Option<&str>, except: Option<&VrConfig>, config: &Config) -> bool {
        let except_id = except.map(|v| v.id);
        let other = |id: &u16| Some(*id) != except_id;
        let id_taken = self.ids[usize::from(vr.id) / 64] & (1 << (vr.id % 64)) != 0 && other(&vr.id);
        if id_taken
            || self.names.get(&vr.name).is_some_and(|(id, _)| other(id))
            || vr.interfaces.iter().any(|i| self.macs.get(&i.mac).is_some_and(other))
            || token.is_some_and(|t| self.tokens.get(t).is_some_and(other))
        {
            return false;
        }
        let placed = self.fast_placed - except.map_or(0, |v| usize::from(fast_placed(v))) + usize::from(fast_placed(vr));
        if config.node.fast_slots.is_some_and(|s| placed > s) {
            return false;
        }
        let was_on = |p: usize, d: usize| except.is_some_and(|v| ports_of(v).any(|q| q == p) && distribution_slot(v.distribution) == d);
        let own = distribution_slot(vr.distribution);
        let shares_distributions = ports_of(vr)
            .all(|p| self.on_port.get(p).is_some_and(|counts| (0..3).all(|d| d == own || counts[d] == usize::from(was_on(p, d)))));
        let rules_apart = vr.matches.iter().all(|rule| {
            let same_priority = self.rules.get(&rule.priority).map(Vec::as_slice).unwrap_or_default();
            same_priority.iter().all(|(id, r)| !other(id) || !crate::matches::overlap(rule, r))
        });
        let nat_apart =
            vr.nat.is_none_or(|n| config.workers == 1 && self.nat.iter().all(|(id, o)| !other(id) || !reservations_overlap(&n, o)));
        shares_distributions && rules_apart && nat_apart && self.leaks_resolve(vr, except)
    }

    /// Whether `vr`'s leaks import from fast VRs other than itself, and the VRs that import
    /// from the one it replaces still find it.
    fn leaks_resolve(&self, vr: &VrConfig, except: Option<&VrConfig>) -> bool {
        let own = vr.leak.iter().all(|leak| {
            vr.kind == VrKind::Fast
                && leak.from != vr.name
                && self.names.get(&leak.from).is_some_and(|&(id, kind)| Some(id) != except.map(|v| v.id) && kind == VrKind::Fast)
        });
        // No VR imports from itself: the imports of `old`'s name are other VRs'.
        let importers_kept = except.is_none_or(|old| !self.imported_from(&old.name) || (old.name == vr.name && vr.kind == VrKind::Fast));
        own && importers_kept
    }
}

fn token(entry: &Value) -> Option<&str> {
    entry.get("token").and_then(Value::as_str)
}

/// The ports `vr` has an interface on, each once.
fn ports_of(vr: &VrConfig) -> impl Iterator<Item = usize> + '_ {
    vr.interfaces.iter().enumerate().filter(|(k, i)| !vr.interfaces[..*k].iter().any(|j| j.port == i.port)).map(|(_, i)| i.port)
}

fn distribution_slot(d: Distribution) -> usize {
    match d {
        Distribution::Flow => 0,
        Distribution::RoundRobin => 1,
        Distribution::Proportional => 2,
    }
}

fn fast_placed(vr: &VrConfig) -> bool {
    vr.kind == VrKind::Fast && vr.placement == Placement::Fast
}

/// Whether a VR is validated anew at every change (see `config_from_document_since`).
pub(crate) fn validated_anew(vr: &VrConfig) -> bool {
    vr.plugin.is_some() || vr.control_plane.is_some() || vr.placement == Placement::Auto
}
