//! What a change of configuration does to each VR, decided once: pearld makes and removes
//! namespaces and the data plane builds tables and channels from the same answer, rather than
//! each pairing the VRs and asking which are the same VR again. Taken from the pointer walk of
//! `changed_vrs`, so that only the few VRs a change touches are read.

use crate::model::{Config, VrConfig};
use crate::vr_pairs::changed_vrs;
use std::sync::Arc;

/// What a change does to one VR (VRs are matched by id).
#[derive(Debug)]
pub enum VrChange {
    Added(Arc<VrConfig>),
    Removed(Arc<VrConfig>),
    /// Its name, kind or interfaces differ: another VR under the same id, made anew (new
    /// namespace, TAPs, tables and channel) once the old one is gone.
    Replaced {
        old: Arc<VrConfig>,
        new: Arc<VrConfig>,
    },
    /// The same VR with other settings (program, routes, rules, queues, limits, control
    /// plane, impairments, placement): what serves it stays and takes them.
    InPlace {
        old: Arc<VrConfig>,
        new: Arc<VrConfig>,
    },
}

impl VrChange {
    pub fn id(&self) -> u16 {
        match self {
            VrChange::Added(vr) | VrChange::Removed(vr) => vr.id,
            VrChange::Replaced { new, .. } | VrChange::InPlace { new, .. } => new.id,
        }
    }

    /// The VR as it was; none if it is new.
    pub fn before(&self) -> Option<&Arc<VrConfig>> {
        match self {
            VrChange::Added(_) => None,
            VrChange::Removed(old) | VrChange::Replaced { old, .. } | VrChange::InPlace { old, .. } => Some(old),
        }
    }

    /// The VR as it is; none if it is gone.
    pub fn after(&self) -> Option<&Arc<VrConfig>> {
        match self {
            VrChange::Removed(_) => None,
            VrChange::Added(new) | VrChange::Replaced { new, .. } | VrChange::InPlace { new, .. } => Some(new),
        }
    }

    /// The VR to make anew: new, or the one replacing another.
    pub fn made(&self) -> Option<&Arc<VrConfig>> {
        self.after().filter(|_| !self.is_in_place())
    }

    /// The VR to take down: gone, or the one replaced.
    pub fn unmade(&self) -> Option<&Arc<VrConfig>> {
        self.before().filter(|_| !self.is_in_place())
    }

    pub fn is_in_place(&self) -> bool {
        matches!(self, VrChange::InPlace { .. })
    }
}

/// The difference between two configurations, VR by VR.
#[derive(Debug)]
pub struct ConfigDiff {
    pub old: Arc<Config>,
    pub new: Arc<Config>,
    /// Each VR that differs, once: new and changed ones in `new`'s order, then those gone by id.
    pub vrs: Vec<VrChange>,
    /// VRs written again with the same settings (another `Arc`, equal field by field), as
    /// they were and as they are: nothing changes for them, but setting a VR's control plane
    /// again is how its FRR is asked to reread an edited file.
    pub restated: Vec<(Arc<VrConfig>, Arc<VrConfig>)>,
}

impl ConfigDiff {
    /// Costs pointer comparisons over both lists of VRs, plus reading the VRs that are not
    /// one shared `Arc` in both (see `changed_vrs`).
    pub fn between(old: &Arc<Config>, new: &Arc<Config>) -> ConfigDiff {
        let mut vrs = Vec::new();
        let mut restated = Vec::new();
        for pair in changed_vrs(&old.vrs, &new.vrs) {
            match pair {
                (Some(o), Some(n)) if o == n => restated.push((Arc::clone(o), Arc::clone(n))),
                (Some(o), Some(n)) if o.same_identity(n) => vrs.push(VrChange::InPlace { old: Arc::clone(o), new: Arc::clone(n) }),
                (Some(o), Some(n)) => vrs.push(VrChange::Replaced { old: Arc::clone(o), new: Arc::clone(n) }),
                (None, Some(n)) => vrs.push(VrChange::Added(Arc::clone(n))),
                (Some(o), None) => vrs.push(VrChange::Removed(Arc::clone(o))),
                (None, None) => unreachable!("a pair has at least one side"),
            }
        }
        ConfigDiff { old: Arc::clone(old), new: Arc::clone(new), vrs, restated }
    }

    /// Whether no VR changes.
    pub fn is_empty(&self) -> bool {
        self.vrs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::VrKind;
    use crate::one_vr_fixture::{config, vr};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// What happens to each VR, with its sides by pointer.
    type Outcome = (&'static str, Option<usize>, Option<usize>);

    fn ptr(v: Option<&Arc<VrConfig>>) -> Option<usize> {
        v.map(|v| Arc::as_ptr(v) as usize)
    }

    /// By id, what a plain map from id to VR says happens to each VR, restated ones included.
    fn reference(old: &[Arc<VrConfig>], new: &[Arc<VrConfig>]) -> BTreeMap<u16, Outcome> {
        let by_id = |list: &[Arc<VrConfig>]| -> BTreeMap<u16, Arc<VrConfig>> { list.iter().map(|v| (v.id, Arc::clone(v))).collect() };
        let (o, n) = (by_id(old), by_id(new));
        let mut out = BTreeMap::new();
        for id in o.keys().chain(n.keys()) {
            let (was, is) = (o.get(id), n.get(id));
            let what = match (was, is) {
                (Some(a), Some(b)) if Arc::ptr_eq(a, b) => continue,
                (Some(a), Some(b)) if a == b => "restated",
                (Some(a), Some(b)) if a.same_identity(b) => "in place",
                (Some(_), Some(_)) => "replaced",
                (None, Some(_)) => "added",
                (Some(_), None) => "removed",
                (None, None) => unreachable!(),
            };
            out.insert(*id, (what, ptr(was), ptr(is)));
        }
        out
    }

    fn found(diff: &ConfigDiff) -> BTreeMap<u16, Outcome> {
        let mut out = BTreeMap::new();
        for c in &diff.vrs {
            let what = match c {
                VrChange::Added(_) => "added",
                VrChange::Removed(_) => "removed",
                VrChange::Replaced { .. } => "replaced",
                VrChange::InPlace { .. } => "in place",
            };
            assert!(out.insert(c.id(), (what, ptr(c.before()), ptr(c.after()))).is_none(), "VR {} once", c.id());
        }
        for (o, n) in &diff.restated {
            assert!(out.insert(n.id, ("restated", ptr(Some(o)), ptr(Some(n)))).is_none(), "VR {} once", n.id);
        }
        out
    }

    #[derive(Debug, Clone)]
    enum Edit {
        Insert(usize, u16),
        Remove(usize),
        /// Another VR under the same id: renamed, another kind, or an interface that differs.
        Rename(usize),
        ShareKind(usize),
        NewMac(usize),
        /// The same VR: placed on the other data plane, impaired, or another setting.
        Place(usize),
        Impair(usize),
        SourceRoute(usize),
        /// The same settings in a new allocation.
        Copy(usize),
        Swap(usize, usize),
        Reverse,
    }

    fn edit() -> impl Strategy<Value = Edit> {
        let at = || any::<usize>();
        prop_oneof![
            3 => (at(), 0u16..200).prop_map(|(i, id)| Edit::Insert(i, id)),
            3 => at().prop_map(Edit::Remove),
            2 => at().prop_map(Edit::Rename),
            2 => at().prop_map(Edit::ShareKind),
            2 => at().prop_map(Edit::NewMac),
            2 => at().prop_map(Edit::Place),
            2 => at().prop_map(Edit::Impair),
            2 => at().prop_map(Edit::SourceRoute),
            3 => at().prop_map(Edit::Copy),
            2 => (at(), at()).prop_map(|(i, j)| Edit::Swap(i, j)),
            1 => Just(Edit::Reverse),
        ]
    }

    /// `vrs` after `e`; ids stay unique.
    fn apply(vrs: &mut Vec<Arc<VrConfig>>, e: Edit) {
        let n = vrs.len();
        let edited = |vrs: &mut Vec<Arc<VrConfig>>, i: usize, f: &dyn Fn(&mut VrConfig)| {
            let mut v = vrs[i % n].as_ref().clone();
            f(&mut v);
            vrs[i % n] = Arc::new(v);
        };
        match e {
            Edit::Insert(i, id) if !vrs.iter().any(|v| v.id == 1000 + id) => vrs.insert(i % (n + 1), vr(1000 + id)),
            Edit::Insert(..) => {}
            _ if n == 0 => {}
            Edit::Remove(i) => drop(vrs.remove(i % n)),
            Edit::Rename(i) => edited(vrs, i, &|v| v.name.push('x')),
            Edit::ShareKind(i) => edited(vrs, i, &|v| v.kind = if v.kind == VrKind::Shared { VrKind::Fast } else { VrKind::Shared }),
            Edit::NewMac(i) => edited(vrs, i, &|v| v.interfaces[0].mac[5] ^= 1),
            Edit::Place(i) => edited(vrs, i, &|v| v.kind = if v.kind == VrKind::Fast { VrKind::Kernel } else { VrKind::Fast }),
            Edit::Impair(i) => edited(vrs, i, &|v| v.interfaces[0].impair.delay_ns ^= 1),
            Edit::SourceRoute(i) => edited(vrs, i, &|v| v.accept_source_route ^= true),
            Edit::Copy(i) => edited(vrs, i, &|_| {}),
            Edit::Swap(i, j) => vrs.swap(i % n, j % n),
            Edit::Reverse => vrs.reverse(),
        }
    }

    proptest! {
        #[test]
        fn each_vr_that_differs_is_in_the_diff_once_as_a_map_by_id_says(
            len in 0usize..40,
            edits in prop::collection::vec(edit(), 0..10),
        ) {
            let old: Vec<Arc<VrConfig>> = (0..len as u16).map(vr).collect();
            let mut new = old.clone();
            for e in edits {
                apply(&mut new, e);
            }
            let diff = ConfigDiff::between(&config(old.clone()), &config(new.clone()));
            prop_assert_eq!(found(&diff), reference(&old, &new));
            prop_assert_eq!(diff.is_empty(), diff.vrs.is_empty());
        }
    }

    #[test]
    fn a_vr_placed_on_the_other_data_plane_changes_in_place_and_a_renamed_one_is_replaced() {
        let old = config((0..3).map(vr).collect());
        let mut vrs = old.vrs.clone();
        apply(&mut vrs, Edit::Place(0));
        apply(&mut vrs, Edit::Rename(1));
        apply(&mut vrs, Edit::Copy(2));
        let diff = ConfigDiff::between(&old, &config(vrs));
        assert!(diff.vrs[0].is_in_place() && diff.vrs[0].made().is_none() && diff.vrs[0].unmade().is_none());
        assert!(matches!(diff.vrs[1], VrChange::Replaced { .. }) && diff.vrs[1].made().is_some() && diff.vrs[1].unmade().is_some());
        assert_eq!(diff.vrs.len(), 2);
        assert_eq!(diff.restated.len(), 1);
    }

    #[test]
    fn one_vr_added_among_many_is_the_only_change() {
        let old = config((0..4096).map(vr).collect());
        let mut vrs = old.vrs.clone();
        vrs.insert(17, vr(5000));
        let diff = ConfigDiff::between(&old, &config(vrs));
        assert_eq!(diff.vrs.len(), 1);
        assert!(matches!(&diff.vrs[0], VrChange::Added(n) if n.id == 5000));
    }
}
