//! The table of a VR with a handful of routes: the prefixes themselves, longest first, inside
//! the published snapshot. A lookup scans them in the snapshot's own cache lines instead of
//! walking a trie whose root alone is 12 KiB: with thousands of VRs each with ten routes,
//! every node on that walk is another VR's memory and a miss (tables sized to their routes).
//!
//! Lengths, networks and next hops are kept apart (structure of arrays): an IPv4 table of 16
//! routes is 148 bytes where `(network, length, next hop)` tuples padded to 12 bytes took 200,
//! so that a snapshot spans three lines instead of four or five, each another miss per packet
//! when every packet is another VR's.

use super::addr::AddrBits;
use super::node::NO_ROUTE;
use super::NextHopId;

/// Routes (besides the default) up to which a table stays small; past it the trie is built,
/// and a table shrinking to half of it goes back.
pub const SMALL_ROUTES: usize = 16;

#[derive(Clone, Copy)]
#[repr(C)]
pub struct SmallTable<A> {
    /// `[..len]`: the routes' prefix lengths, longest first, so the first match is the longest.
    lens: [u8; SMALL_ROUTES],
    len: u8,
    nets: [A; SMALL_ROUTES],
    hops: [NextHopId; SMALL_ROUTES],
}

impl<A: AddrBits> SmallTable<A> {
    /// The table of `routes` `(network, length, next hop)` (at most [`SMALL_ROUTES`], none of
    /// length 0).
    pub fn new(routes: impl IntoIterator<Item = (A, u8, NextHopId)>) -> SmallTable<A> {
        let mut sorted: Vec<(A, u8, NextHopId)> = routes.into_iter().collect();
        assert!(sorted.len() <= SMALL_ROUTES, "a small table holds at most {SMALL_ROUTES} routes");
        // Stable: equal lengths cannot overlap, so their order does not matter.
        sorted.sort_by_key(|r| std::cmp::Reverse(r.1));
        let mut t =
            SmallTable { lens: [0; SMALL_ROUTES], len: sorted.len() as u8, nets: [A::ZERO; SMALL_ROUTES], hops: [NO_ROUTE; SMALL_ROUTES] };
        for (i, (net, len, nh)) in sorted.into_iter().enumerate() {
            debug_assert!(len > 0, "the default route lives beside the table");
            (t.lens[i], t.nets[i], t.hops[i]) = (len, net, nh);
        }
        t
    }

    /// The next hop of the longest route covering `addr`, or `NO_ROUTE`.
    #[inline(always)]
    pub fn lookup(&self, addr: A) -> NextHopId {
        let len = usize::from(self.len);
        for (i, (&l, &net)) in self.lens[..len].iter().zip(&self.nets[..len]).enumerate() {
            if addr.network(u32::from(l)) == net {
                return self.hops[i];
            }
        }
        NO_ROUTE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_longest_covering_route_wins_whatever_the_insertion_order() {
        let t = SmallTable::<u32>::new([(0x0a00_0000, 8, 1), (0x0a01_0200, 24, 3), (0x0a01_0000, 16, 2)]);
        assert_eq!(t.lookup(0x0a01_0203), 3);
        assert_eq!(t.lookup(0x0a01_0303), 2);
        assert_eq!(t.lookup(0x0aff_0000), 1);
        assert_eq!(t.lookup(0x0b00_0000), NO_ROUTE);
        assert_eq!(SmallTable::<u128>::new([]).lookup(7), NO_ROUTE);
    }

    /// The longest of `routes` covering `addr`, by a plain scan.
    fn reference<A: AddrBits>(routes: &[(A, u8, NextHopId)], addr: A) -> NextHopId {
        routes.iter().filter(|r| addr.network(u32::from(r.1)) == r.0).max_by_key(|r| r.1).map_or(NO_ROUTE, |r| r.2)
    }

    /// Up to a full table of distinct prefixes of lengths 1..=`width`, clustered under a few
    /// top bits so that they nest and overlap; host routes included.
    fn routes<A: AddrBits>(width: u8, addr: impl Strategy<Value = A>) -> impl Strategy<Value = Vec<(A, u8, NextHopId)>> {
        let len = prop_oneof![1..=width, Just(width), Just(width - 1), Just(1u8)];
        prop::collection::vec((addr, len, 0u32..1000), 0..=SMALL_ROUTES).prop_map(|rs| {
            let mut seen = Vec::new();
            rs.into_iter()
                .map(|(a, l, nh)| (a.network(u32::from(l)), l, nh))
                .filter(|&(a, l, _)| {
                    let new = !seen.contains(&(a, l));
                    seen.push((a, l));
                    new
                })
                .collect()
        })
    }

    fn clustered4() -> impl Strategy<Value = u32> {
        (0u32..4, any::<u32>()).prop_map(|(top, low)| (top << 30) | (low & 0x00ff_ffff))
    }

    fn clustered6() -> impl Strategy<Value = u128> {
        (0u128..4, any::<u128>()).prop_map(|(top, low)| (top << 126) | (low >> 64))
    }

    proptest! {
        #[test]
        fn ipv4_matches_a_linear_scan(rs in routes(32, clustered4()), probes in prop::collection::vec(clustered4(), 32)) {
            let t = SmallTable::new(rs.iter().copied());
            for a in probes.into_iter().chain(rs.iter().flat_map(|r| [r.0, r.0.last(u32::from(r.1))])) {
                prop_assert_eq!(t.lookup(a), reference(&rs, a), "{:#x}", a);
            }
        }

        #[test]
        fn ipv6_matches_a_linear_scan(rs in routes(128, clustered6()), probes in prop::collection::vec(clustered6(), 32)) {
            let t = SmallTable::new(rs.iter().copied());
            for a in probes.into_iter().chain(rs.iter().flat_map(|r| [r.0, r.0.last(u32::from(r.1))])) {
                prop_assert_eq!(t.lookup(a), reference(&rs, a), "{:#x}", a);
            }
        }
    }
}
