//! Whether an IPv4 source is one of a VR's own addresses, answered without a FIB lookup.
//!
//! A router drops a packet that claims one of its own addresses as source (a martian). Linux,
//! with reverse-path filtering off, answers that from its address hash
//! (`fib_validate_source` → `inet_lookup_ifaddr_rcu`), not with a route lookup, unless local
//! routes other than the addresses' own exist (`fib_has_custom_local_routes`). The fast path
//! does the same: the writer keeps the VR's local host routes apart, and a worker checks a
//! source against them with a compare or two where it spent a second FIB lookup per packet
//! before (a sixth of the instructions of a forwarded IPv4 packet).

use crate::nexthop::{Adjacency, NextHop, NextHopTable};
use pearl_lookup::fib::{NextHopId, RouteUpdate};
use std::collections::BTreeSet;

/// What workers read: the VR's local IPv4 host routes, or that only its FIB can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalSources {
    /// Every local route is one of these host routes (sorted).
    Hosts(Box<[u32]>),
    /// A local route covers more than one address: look the source up.
    Routed,
}

impl LocalSources {
    /// Whether `src` is one of the VR's own addresses; `None` when only the FIB can say.
    #[inline]
    pub fn is_local(&self, src: u32) -> Option<bool> {
        match self {
            LocalSources::Hosts(hosts) => Some(hosts.binary_search(&src).is_ok()),
            LocalSources::Routed => None,
        }
    }
}

/// The writer's account of a VR's local IPv4 routes, kept batch by batch as its FIB takes them.
#[derive(Debug, Default)]
pub struct LocalRoutes {
    hosts: BTreeSet<u32>,
    /// Local routes wider than a host, as (address, length).
    wider: BTreeSet<(u32, u32)>,
    /// A next-hop id changed between local and not while routes may point at it: what was
    /// recorded at insertion no longer says what the FIB answers, so only the FIB can tell.
    stale: bool,
}

impl LocalRoutes {
    /// Takes a batch the FIB accepted whole, its next hops as `table` has them; later updates
    /// of a prefix win, as in the FIB. Returns whether what workers read changed.
    pub fn apply(&mut self, updates: &[RouteUpdate<u32>], table: &NextHopTable) -> bool {
        // The hosts are a handful (the VR's addresses): their copy is cheaper than any
        // bookkeeping of what a batch undid.
        let (routed_before, hosts_before) = (self.routed(), self.hosts.clone());
        for u in updates {
            let (p, local) = match *u {
                RouteUpdate::Insert(p, nh) => (p, is_local(table, nh)),
                RouteUpdate::Remove(p) => (p, false),
            };
            let (hosts, wider) = (&mut self.hosts, &mut self.wider);
            match (p.len() == 32, local) {
                (true, true) => hosts.insert(p.addr()),
                (true, false) => hosts.remove(&p.addr()),
                (false, true) => wider.insert((p.addr(), p.len())),
                (false, false) => wider.remove(&(p.addr(), p.len())),
            };
        }
        let routed = self.routed();
        routed != routed_before || (!routed && self.hosts != hosts_before)
    }

    /// Notes a new next-hop table replacing `old`. Returns whether what workers read changed.
    pub fn next_hops_replaced(&mut self, old: &NextHopTable, new: &NextHopTable) -> bool {
        let moved = (0..old.len().min(new.len()) as NextHopId).any(|id| is_local(old, id) != is_local(new, id));
        let changed = moved && !self.stale;
        self.stale |= moved;
        changed
    }

    pub fn sources(&self) -> LocalSources {
        match self.routed() {
            true => LocalSources::Routed,
            false => LocalSources::Hosts(self.hosts.iter().copied().collect()),
        }
    }
}

impl LocalRoutes {
    /// Only the FIB can tell.
    fn routed(&self) -> bool {
        self.stale || !self.wider.is_empty()
    }
}

fn is_local(table: &NextHopTable, nh: NextHopId) -> bool {
    table.get(nh) == Some(&NextHop::One(Adjacency::Local))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pearl_lookup::fib::{Fib, Prefix};
    use pearl_lookup::rcu::RcuDomain;
    use proptest::prelude::*;

    /// Next hops 0: local, 1: a gateway, 2: a connected subnet.
    fn table() -> NextHopTable {
        let mut t = NextHopTable::default();
        t.intern(Adjacency::Local);
        t.intern(Adjacency::Forward { port: 0, src: [2, 0, 0, 0, 0, 1], dst: [2, 0, 0, 0, 0, 2] });
        t.intern(Adjacency::Glean { port: 1 });
        t
    }

    /// Addresses within a /24 so that hosts, subnets and lookups meet often.
    fn update() -> impl Strategy<Value = RouteUpdate<u32>> {
        let prefix =
            (0u32..256, prop_oneof![3 => Just(32u32), 1 => 20u32..32]).prop_map(|(a, len)| Prefix::containing(0x0a00_0000 | a, len));
        prop_oneof![
            3 => (prefix.clone(), 0u32..3).prop_map(|(p, nh)| RouteUpdate::Insert(p, nh)),
            1 => prefix.prop_map(RouteUpdate::Remove),
        ]
    }

    proptest! {
        /// After any batches, wherever the account answers, it answers as a lookup of the
        /// source in the FIB would (the check the pipeline made before).
        #[test]
        fn answers_as_the_fib_does(batches in proptest::collection::vec(proptest::collection::vec(update(), 1..12), 1..8)) {
            let domain = RcuDomain::new();
            let mut reader = domain.register();
            let mut fib = Fib::<u32>::new(&domain);
            let table = table();
            let mut local = LocalRoutes::default();
            for batch in &batches {
                fib.apply(batch).unwrap();
                let before = local.sources();
                let changed = local.apply(batch, &table);
                prop_assert_eq!(changed, local.sources() != before);
                let sources = local.sources();
                let guard = reader.read();
                for a in 0u32..256 {
                    let src = 0x0a00_0000 | a;
                    let by_fib = fib.view().lookup(&guard, src) == Some(0);
                    match sources.is_local(src) {
                        Some(answer) => prop_assert_eq!(answer, by_fib, "source {:#x}", src),
                        None => prop_assert!(fib.routes().iter().any(|(p, nh)| *nh == 0 && p.len() < 32)),
                    }
                }
            }
        }
    }

    #[test]
    fn a_next_hop_that_changes_between_local_and_not_leaves_the_answer_to_the_fib() {
        let old = table();
        let mut local = LocalRoutes::default();
        local.apply(&[RouteUpdate::Insert(Prefix::containing(0x0a00_0001, 32), 0)], &old);
        assert_eq!(local.sources(), LocalSources::Hosts([0x0a00_0001].into()));
        // Same meaning, one more entry: nothing moves.
        let mut grown = old.clone();
        grown.intern(Adjacency::Glean { port: 2 });
        assert!(!local.next_hops_replaced(&old, &grown));
        // Id 0 is a gateway now: the host route recorded as local no longer is.
        let moved = NextHopTable::new(vec![NextHop::One(Adjacency::Glean { port: 0 })], Vec::new());
        assert!(local.next_hops_replaced(&grown, &moved));
        assert_eq!(local.sources(), LocalSources::Routed);
    }
}
