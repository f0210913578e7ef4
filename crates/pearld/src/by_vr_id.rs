//! Values by VR id, in chunks that successive copies share. The readers' view of the node is
//! made anew after every change; with thousands of VRs, copying every entry (and so touching
//! each entry's reference counts, a cache miss apiece) cost more than a one-VR change itself.
//! A copy here shares every chunk, and setting a VR's value copies its chunk alone.

use std::sync::Arc;

/// Ids per chunk: a set copies this many entries, a copy of the whole as many pointers as
/// there are chunks (64 at 4,096 VRs).
const CHUNK: usize = 64;

pub struct ById<T>(Vec<Arc<Vec<Option<T>>>>);

impl<T> Clone for ById<T> {
    fn clone(&self) -> Self {
        ById(self.0.clone())
    }
}

impl<T: Clone> ById<T> {
    pub fn of(items: impl Iterator<Item = (u16, T)>) -> ById<T> {
        let mut by_id = ById(Vec::new());
        for (id, value) in items {
            by_id.set(id, Some(value));
        }
        by_id
    }

    pub fn get(&self, id: u16) -> Option<&T> {
        let i = usize::from(id);
        self.0.get(i / CHUNK).and_then(|chunk| chunk[i % CHUNK].as_ref())
    }

    /// Sets (or with `None` clears) `id`'s value, copying its chunk if another copy shares it.
    pub fn set(&mut self, id: u16, value: Option<T>) {
        let (c, i) = (usize::from(id) / CHUNK, usize::from(id) % CHUNK);
        if self.0.len() <= c {
            if value.is_none() {
                return;
            }
            self.0.resize_with(c + 1, || Arc::new(vec![None; CHUNK]));
        }
        Arc::make_mut(&mut self.0[c])[i] = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// A copy changed by sets reads as a map given the same sets; the original reads as
        /// before them.
        #[test]
        fn sets_on_a_copy_read_like_a_map_and_leave_the_original(
            first in prop::collection::vec((0u16..300, any::<u32>()), 0..80),
            then in prop::collection::vec((0u16..300, prop::option::of(any::<u32>())), 0..40),
        ) {
            let original = ById::of(first.iter().copied());
            let before: BTreeMap<u16, u32> = first.iter().copied().collect();
            let mut copy = original.clone();
            let mut after = before.clone();
            for &(id, v) in &then {
                copy.set(id, v);
                match v {
                    Some(v) => after.insert(id, v),
                    None => after.remove(&id),
                };
            }
            for id in 0..320u16 {
                prop_assert_eq!(copy.get(id), after.get(&id));
                prop_assert_eq!(original.get(id), before.get(&id));
            }
        }
    }
}
