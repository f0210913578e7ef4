//! Next-hop ids: one per distinct next hop the mirrored routes use, shared by all routes through
//! it and counted, so that a neighbour change rewrites one entry and no route.
//!
//! An id is reused only after the FIB stopped pointing at it: ids whose last route went are
//! freed after the FIB batch that removed those routes was published, and a reused id's new
//! entry is published before the batch that points routes at it.

use crate::hash::FastMap;
use crate::state::World;
use core::net::IpAddr;
use pearl_tables::nexthop::{Adjacency, NextHop, NextHopTable};

/// What a route's packets need, independent of the id that stands for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NhKey {
    Local,
    Kernel,
    /// Directly on the link (`dev` only): every destination is a neighbour.
    Attached(u32),
    /// Through a gateway on a link: (ifindex, gateway).
    Via(u32, IpAddr),
    /// ECMP over single next hops with weights, in canonical order.
    Group(Box<[(NhKey, u16)]>),
}

enum Entry {
    Leaf(NextHop),
    /// Member ids, each repeated by its weight.
    Group(Vec<u32>),
}

struct Slot {
    key: Option<NhKey>,
    refs: u32,
    entry: Entry,
}

#[derive(Default)]
pub struct NextHops {
    ids: FastMap<NhKey, u32>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Ids whose count dropped to zero since the last FIB batch.
    released: Vec<u32>,
    /// The table differs from the one last taken.
    changed: bool,
    /// The hold-down is on: entries may improve or change, never lose their resolution.
    hold: bool,
}

impl NextHops {
    /// Starts from a table someone else filled (the configuration's): its ids stay as they
    /// are until the first FIB batch replaced every route, then become free.
    pub fn adopt(old: &NextHopTable) -> NextHops {
        let mut hops = NextHops::default();
        for id in 0..old.len() as u32 {
            let entry = match *old.get(id).expect("id below len") {
                NextHop::Group { first, len } => Entry::Group(old.members(first, len).to_vec()),
                other => Entry::Leaf(other),
            };
            hops.slots.push(Slot { key: None, refs: 0, entry });
            hops.released.push(id);
        }
        hops
    }

    /// The id for `key`, counting one more user.
    pub fn acquire(&mut self, key: &NhKey, world: &World) -> u32 {
        if let Some(&id) = self.ids.get(key) {
            self.slots[id as usize].refs += 1;
            return id;
        }
        let entry = match key {
            NhKey::Group(members) => {
                let mut ids = Vec::new();
                for (k, weight) in members.iter() {
                    let id = self.acquire(k, world);
                    ids.extend(std::iter::repeat_n(id, usize::from(*weight)));
                }
                Entry::Group(ids)
            }
            leaf => Entry::Leaf(resolve(leaf, world)),
        };
        let slot = Slot { key: Some(key.clone()), refs: 1, entry };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        self.ids.insert(key.clone(), id);
        self.changed = true;
        id
    }

    /// One user fewer; the id is freed by [`NextHops::reclaim`] if none is left by then.
    pub fn release(&mut self, id: u32) {
        let slot = &mut self.slots[id as usize];
        slot.refs -= 1;
        if slot.refs == 0 {
            self.released.push(id);
        }
    }

    pub fn key(&self, id: u32) -> Option<&NhKey> {
        self.slots.get(id as usize)?.key.as_ref()
    }

    /// Re-resolves `key` if it is in use (its neighbour or link changed).
    pub fn refresh(&mut self, key: &NhKey, world: &World) {
        if let Some(&id) = self.ids.get(key) {
            let now = resolve(key, world);
            if let Entry::Leaf(old) = &mut self.slots[id as usize].entry {
                self.changed |= update(old, now, self.hold);
            }
        }
    }

    /// Re-resolves every next hop (after a resync: links may have changed).
    pub fn refresh_all(&mut self, world: &World) {
        for s in &mut self.slots {
            if let (Some(key), Entry::Leaf(old)) = (&s.key, &mut s.entry) {
                self.changed |= update(old, resolve(key, world), self.hold);
            }
        }
    }

    /// Under the hold-down, refreshes keep an entry rather than lose its resolution.
    pub fn set_hold(&mut self, on: bool) {
        self.hold = on;
    }

    /// Frees the ids nobody took back since they were released. Call after the FIB batch that
    /// dropped their last routes is published.
    pub fn reclaim(&mut self) {
        while let Some(id) = self.released.pop() {
            let slot = &mut self.slots[id as usize];
            if slot.refs > 0 {
                continue;
            }
            if let Some(key) = slot.key.take() {
                self.ids.remove(&key);
            }
            if let Entry::Group(members) = std::mem::replace(&mut slot.entry, Entry::Leaf(NextHop::Kernel)) {
                let mut distinct = members;
                distinct.dedup();
                for m in distinct {
                    // Adopted groups hold no counts on their members.
                    if self.slots[m as usize].refs > 0 {
                        self.release(m);
                    }
                }
            }
            self.free.push(id);
        }
    }

    /// Ids in use.
    pub fn live(&self) -> usize {
        self.ids.len()
    }

    /// The table to publish, if it changed since last taken.
    pub fn take_table(&mut self) -> Option<NextHopTable> {
        if !std::mem::take(&mut self.changed) {
            return None;
        }
        let mut entries = Vec::with_capacity(self.slots.len());
        let mut members = Vec::new();
        for s in &self.slots {
            entries.push(match &s.entry {
                Entry::Leaf(nh) => *nh,
                Entry::Group(ids) => {
                    let first = members.len() as u32;
                    members.extend_from_slice(ids);
                    NextHop::Group { first, len: ids.len() as u32 }
                }
            });
        }
        Some(NextHopTable::new(entries, members))
    }
}

/// Sets `old` to `now` unless that loses resolution under a hold; returns whether it changed.
fn update(old: &mut NextHop, now: NextHop, hold: bool) -> bool {
    // Forward beats glean beats "to the kernel".
    let rank = |nh: &NextHop| match nh {
        NextHop::One(Adjacency::Forward { .. }) => 2,
        NextHop::One(Adjacency::Glean { .. }) => 1,
        _ => 0,
    };
    if *old == now || (hold && rank(&now) < rank(old)) {
        return false;
    }
    *old = now;
    true
}

/// What a single next hop does now.
fn resolve(key: &NhKey, world: &World) -> NextHop {
    match *key {
        NhKey::Local => NextHop::One(Adjacency::Local),
        NhKey::Attached(ifindex) => match world.interface(ifindex) {
            Some(i) => NextHop::One(Adjacency::Glean { port: i.port }),
            None => NextHop::Kernel,
        },
        NhKey::Via(ifindex, gateway) => match (world.interface(ifindex), world.neighbour(ifindex, gateway)) {
            (Some(i), Some(mac)) => NextHop::One(Adjacency::Forward { port: i.port, src: i.mac, dst: mac }),
            (Some(i), None) => NextHop::One(Adjacency::Glean { port: i.port }),
            (None, _) => NextHop::Kernel,
        },
        NhKey::Kernel | NhKey::Group(_) => NextHop::Kernel,
    }
}
