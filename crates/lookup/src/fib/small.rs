//! The table of a VR with a handful of routes: the prefixes themselves, longest first, inside
//! the published snapshot. A lookup scans them in the snapshot's own cache lines instead of
//! walking a trie whose root alone is 12 KiB: with thousands of VRs each with ten routes,
//! every node on that walk is another VR's memory and a miss (tables sized to their routes).

use super::addr::AddrBits;
use super::node::NO_ROUTE;
use super::NextHopId;

/// Routes (besides the default) up to which a table stays small; past it the trie is built,
/// and a table shrinking to half of it goes back.
pub const SMALL_ROUTES: usize = 16;

#[derive(Clone, Copy)]
pub struct SmallTable<A> {
    len: usize,
    /// `(network, length, next hop)`, longest first: the first match is the longest.
    routes: [(A, u8, NextHopId); SMALL_ROUTES],
}

impl<A: AddrBits> SmallTable<A> {
    /// The table of `routes` (at most [`SMALL_ROUTES`], none of length 0).
    pub fn new(routes: impl IntoIterator<Item = (A, u8, NextHopId)>) -> SmallTable<A> {
        let mut t = SmallTable { len: 0, routes: [(A::ZERO, 0, NO_ROUTE); SMALL_ROUTES] };
        for r in routes {
            debug_assert!(r.1 > 0, "the default route lives beside the table");
            t.routes[t.len] = r;
            t.len += 1;
        }
        // Stable: equal lengths cannot overlap, so their order does not matter.
        t.routes[..t.len].sort_by_key(|r| std::cmp::Reverse(r.1));
        t
    }

    /// The next hop of the longest route covering `addr`, or `NO_ROUTE`.
    #[inline(always)]
    pub fn lookup(&self, addr: A) -> NextHopId {
        for &(net, len, nh) in &self.routes[..self.len] {
            if addr.network(u32::from(len)) == net {
                return nh;
            }
        }
        NO_ROUTE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_covering_route_wins_whatever_the_insertion_order() {
        let t = SmallTable::<u32>::new([(0x0a00_0000, 8, 1), (0x0a01_0200, 24, 3), (0x0a01_0000, 16, 2)]);
        assert_eq!(t.lookup(0x0a01_0203), 3);
        assert_eq!(t.lookup(0x0a01_0303), 2);
        assert_eq!(t.lookup(0x0aff_0000), 1);
        assert_eq!(t.lookup(0x0b00_0000), NO_ROUTE);
        assert_eq!(SmallTable::<u128>::new([]).lookup(7), NO_ROUTE);
    }
}
