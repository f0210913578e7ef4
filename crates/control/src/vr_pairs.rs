//! Which VRs differ between two configurations. A change hands over whole configurations in
//! which every VR it left alone is the very same `Arc` in both (validation reuses them), so a
//! walk over the two lists comparing pointers finds the few that differ without reading the
//! thousands that do not: reading each VR's id to match them up is a cache miss apiece, about
//! half a millisecond per configuration at 4,096 VRs.

use crate::model::VrConfig;
use std::collections::HashMap;
use std::sync::Arc;

/// A VR that is not the same `Arc` in both configurations, as it was and as it is, matched
/// by id: `(Some, None)` is gone, `(None, Some)` is new.
pub type VrPair<'a> = (Option<&'a Arc<VrConfig>>, Option<&'a Arc<VrConfig>>);

/// The VRs of `old` and `new` that are not one shared `Arc`, paired by id: new and changed
/// ones in `new`'s order, then those gone by id. A change that inserts, removes or replaces
/// VRs here and there costs pointer comparisons over both lists plus its own VRs; one that
/// reorders everything falls back to matching every VR by id.
pub fn changed_vrs<'a>(old: &'a [Arc<VrConfig>], new: &'a [Arc<VrConfig>]) -> Vec<VrPair<'a>> {
    let (mut olds, mut news) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        if Arc::ptr_eq(&old[i], &new[j]) {
            (i, j) = (i + 1, j + 1);
        } else if old.get(i + 1).is_some_and(|o| Arc::ptr_eq(o, &new[j])) {
            olds.push(&old[i]);
            i += 1;
        } else if new.get(j + 1).is_some_and(|n| Arc::ptr_eq(&old[i], n)) {
            news.push(&new[j]);
            j += 1;
        } else {
            olds.push(&old[i]);
            news.push(&new[j]);
            (i, j) = (i + 1, j + 1);
        }
    }
    olds.extend(&old[i..]);
    news.extend(&new[j..]);
    let mut was: HashMap<u16, &Arc<VrConfig>> = olds.into_iter().map(|o| (o.id, o)).collect();
    let mut pairs: Vec<VrPair<'a>> = Vec::with_capacity(news.len() + was.len());
    for n in news {
        match was.remove(&n.id) {
            // Moved, not changed.
            Some(o) if Arc::ptr_eq(o, n) => {}
            o => pairs.push((o, Some(n))),
        }
    }
    let mut gone: Vec<&Arc<VrConfig>> = was.into_values().collect();
    gone.sort_unstable_by_key(|o| o.id);
    pairs.extend(gone.into_iter().map(|o| (Some(o), None)));
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::one_vr_fixture::vr;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// By id, what a plain map from id to `Arc` says differs: `id → (was, now)` pointers.
    fn reference(old: &[Arc<VrConfig>], new: &[Arc<VrConfig>]) -> BTreeMap<u16, (Option<usize>, Option<usize>)> {
        let at = |list: &[Arc<VrConfig>]| -> BTreeMap<u16, usize> { list.iter().map(|v| (v.id, Arc::as_ptr(v) as usize)).collect() };
        let (o, n) = (at(old), at(new));
        o.keys().chain(n.keys()).map(|id| (*id, (o.get(id).copied(), n.get(id).copied()))).filter(|(_, (a, b))| a != b).collect()
    }

    fn found(pairs: &[VrPair<'_>]) -> BTreeMap<u16, (Option<usize>, Option<usize>)> {
        let ptr = |v: Option<&Arc<VrConfig>>| v.map(|v| Arc::as_ptr(v) as usize);
        pairs.iter().map(|(o, n)| (o.or(*n).expect("one side").id, (ptr(*o), ptr(*n)))).collect()
    }

    #[derive(Debug, Clone)]
    enum Edit {
        Insert(usize, u16),
        Remove(usize),
        Replace(usize),
        Swap(usize, usize),
        Reverse,
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            4 => (any::<usize>(), 0u16..200).prop_map(|(i, id)| Edit::Insert(i, id)),
            4 => any::<usize>().prop_map(Edit::Remove),
            4 => any::<usize>().prop_map(Edit::Replace),
            2 => (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Edit::Swap(i, j)),
            1 => Just(Edit::Reverse),
        ]
    }

    proptest! {
        #[test]
        fn pairs_are_the_ids_whose_vr_is_not_the_same_arc(len in 0usize..60, edits in prop::collection::vec(edit(), 0..8)) {
            let old: Vec<Arc<VrConfig>> = (0..len as u16).map(vr).collect();
            let mut new = old.clone();
            for e in edits {
                let n = new.len();
                match e {
                    // Ids stay unique in a configuration.
                    Edit::Insert(i, id) if !new.iter().any(|v| v.id == 1000 + id) => new.insert(i % (n + 1), vr(1000 + id)),
                    Edit::Insert(..) => {}
                    Edit::Remove(i) if n > 0 => drop(new.remove(i % n)),
                    Edit::Replace(i) if n > 0 => new[i % n] = vr(new[i % n].id),
                    Edit::Swap(i, j) if n > 0 => new.swap(i % n, j % n),
                    Edit::Reverse => new.reverse(),
                    _ => {}
                }
            }
            let pairs = changed_vrs(&old, &new);
            prop_assert_eq!(found(&pairs), reference(&old, &new));
            prop_assert_eq!(pairs.len(), reference(&old, &new).len(), "each id once");
        }
    }

    #[test]
    fn one_vr_added_among_many_is_the_only_pair() {
        let old: Vec<Arc<VrConfig>> = (0..4096).map(vr).collect();
        let mut new = old.clone();
        new.insert(17, vr(5000));
        let pairs = changed_vrs(&old, &new);
        assert_eq!(pairs.len(), 1);
        assert!(pairs[0].0.is_none() && pairs[0].1.is_some_and(|n| n.id == 5000));
    }
}
