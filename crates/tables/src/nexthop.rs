//! What a FIB's next-hop id means: where and how to send, or why not to.
//!
//! Routes point at next-hop ids, next hops at adjacencies (VPP's indirection): a neighbour's MAC
//! changing rewrites one entry here, not every route through that neighbour.

use pearl_control::Mac;
use pearl_lookup::prefetch::lines;
use pearl_wire::{Field, FlowKey};

/// An adjacency (VPP's term): the rewrite a forwarded packet gets, or the reason it goes to
/// the slow path instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adjacency {
    /// Rewrite the MACs and send out of `port`.
    Forward { port: u16, src: Mac, dst: Mac },
    /// One of the VR's own addresses.
    Local,
    /// On a connected subnet of `port`, but the neighbour's MAC is unknown: the VR's kernel
    /// must resolve it.
    Glean { port: u16 },
}

/// One entry of a [`NextHopTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextHop {
    One(Adjacency),
    /// Equal-cost multipath: each flow takes one of the table's `members[first..first + len]`
    /// (ids of `One` entries; a member listed twice carries twice the weight).
    Group {
        first: u32,
        len: u32,
    },
    /// Nothing the fast path does itself (unreachable, prohibit, blackhole, or a route it could
    /// not mirror): the packet goes to the VR's kernel, which holds the real route and answers
    /// as it would (ICMP unreachable, silent drop, forwarding on a link we do not drive).
    Kernel,
}

/// Entries a table repeats on its own line.
const NEAR: usize = 2;

/// A VR's next hops, indexed by next-hop id; published whole (they change rarely). One line,
/// the first entries on it again: with thousands of VRs the table is cold, and a VR with a
/// next hop or two (its gateway, its connected subnet) then finds its packets' entries, the
/// destination's and the source's, on the line it loads anyway instead of on another.
#[derive(Debug, Clone, PartialEq, Eq)]
#[repr(align(64))]
pub struct NextHopTable {
    /// `entries[..NEAR]`, as far as there are.
    near: [NextHop; NEAR],
    entries: Box<[NextHop]>,
    members: Box<[u32]>,
}

// The promise above: one line.
const _: () = assert!(std::mem::size_of::<NextHopTable>() == 64);

impl Default for NextHopTable {
    fn default() -> NextHopTable {
        NextHopTable::new(Vec::new(), Vec::new())
    }
}

impl NextHopTable {
    /// A table from its entries and the member lists `Group` entries point into.
    pub fn new(entries: Vec<NextHop>, members: Vec<u32>) -> NextHopTable {
        // Past the entries, never read: `entry` asks `entries` how many there are.
        let mut near = [NextHop::Kernel; NEAR];
        for (n, e) in near.iter_mut().zip(&entries) {
            *n = *e;
        }
        NextHopTable { near, entries: entries.into(), members: members.into() }
    }

    /// Starts loading entry `id`, for a lookup a little later.
    #[inline]
    pub fn prefetch(&self, id: u32) {
        if (id as usize) >= NEAR {
            if let Some(e) = self.entries.get(id as usize) {
                lines((e as *const NextHop).cast(), core::mem::size_of::<NextHop>());
            }
        }
    }

    /// The id of a single-adjacency entry for `adj`, adding it if new.
    pub fn intern(&mut self, adj: Adjacency) -> u32 {
        let entry = NextHop::One(adj);
        match self.entries.iter().position(|e| *e == entry) {
            Some(i) => i as u32,
            None => {
                let mut entries = std::mem::take(&mut self.entries).into_vec();
                entries.push(entry);
                *self = NextHopTable::new(entries, std::mem::take(&mut self.members).into_vec());
                (self.entries.len() - 1) as u32
            }
        }
    }

    /// Entry `id`, from the table's own line if it is one of the first.
    #[inline]
    fn entry(&self, id: u32) -> Option<&NextHop> {
        let i = id as usize;
        if i < NEAR && i < self.entries.len() {
            Some(&self.near[i])
        } else {
            self.entries.get(i)
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, id: u32) -> Option<&NextHop> {
        self.entry(id)
    }

    /// The member ids of a `Group { first, len }` entry of this table.
    pub fn members(&self, first: u32, len: u32) -> &[u32] {
        self.members.get(first as usize..(first + len) as usize).unwrap_or(&[])
    }

    /// The adjacency a packet with flow `key` takes through next hop `id`; `None` sends it to
    /// the VR's kernel. Every packet of a flow takes the same group member, so ECMP never
    /// reorders a flow; the hash is only computed for groups.
    #[inline]
    pub fn resolve(&self, id: u32, key: &FlowKey) -> Option<&Adjacency> {
        self.resolve_with(id, || flow_hash(key))
    }

    /// Like `resolve`, an equal-cost group's member chosen by `hash`.
    #[inline]
    pub fn resolve_hashed(&self, id: u32, hash: u32) -> Option<&Adjacency> {
        self.resolve_with(id, || hash)
    }

    #[inline]
    fn resolve_with(&self, id: u32, hash: impl FnOnce() -> u32) -> Option<&Adjacency> {
        match self.entry(id)? {
            NextHop::One(adj) => Some(adj),
            NextHop::Kernel => None,
            &NextHop::Group { first, len } => {
                let pick = (u64::from(hash()) * u64::from(len)) >> 32;
                let member = *self.members.get(first as usize + pick as usize)?;
                match self.entry(member)? {
                    NextHop::One(adj) => Some(adj),
                    NextHop::Group { .. } | NextHop::Kernel => None,
                }
            }
        }
    }
}

/// What a route toward a packet's source says about where that packet may come from: the
/// question unicast reverse-path forwarding (RFC 3704) and the local-source check ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceRoute {
    /// No route, or one the fast path leaves to the kernel (unreachable, prohibit, blackhole).
    None,
    /// One of the VR's own addresses.
    Local,
    /// Reachable, and through `port` (for ECMP: through it among others) or not.
    Via { through_port: bool },
}

impl NextHopTable {
    /// Classifies next hop `id` as the route to a source that arrived on `port`.
    #[inline]
    pub fn source_route(&self, id: u32, port: u16) -> SourceRoute {
        let via = |adj: &Adjacency| match *adj {
            Adjacency::Forward { port: p, .. } | Adjacency::Glean { port: p } => Some(p == port),
            Adjacency::Local => None,
        };
        match self.entry(id) {
            Some(NextHop::One(Adjacency::Local)) => SourceRoute::Local,
            Some(NextHop::One(adj)) => SourceRoute::Via { through_port: via(adj) == Some(true) },
            Some(&NextHop::Group { first, len }) => {
                let through_port = self.members(first, len).iter().any(|&m| match self.entry(m) {
                    Some(NextHop::One(adj)) => via(adj) == Some(true),
                    _ => false,
                });
                SourceRoute::Via { through_port }
            }
            Some(NextHop::Kernel) | None => SourceRoute::None,
        }
    }
}

/// A hash of the flow's 5-tuple (addresses, protocol, ports), the same on every worker and
/// every run so that a flow keeps its path across restarts.
#[inline]
pub fn flow_hash(key: &FlowKey) -> u32 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let ports = u64::from(key.ip_proto()) << 32 | u64::from(key.l4_src()) << 16 | u64::from(key.l4_dst());
    let (src, dst) = (key.get(Field::IpSrc), key.get(Field::IpDst));
    let mut h = ports;
    for word in [src as u64, (src >> 64) as u64, dst as u64, (dst >> 64) as u64] {
        h = (h ^ word).wrapping_mul(K).rotate_left(31);
    }
    // Final avalanche (MurmurHash3's fmix64): the group pick uses the high bits.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    (h >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(src_port: u16) -> FlowKey {
        FlowKey::default()
            .with(Field::IpSrc, 0xffff_0a00_0001)
            .with(Field::IpDst, 0xffff_0a09_0001)
            .with(Field::IpProto, 17)
            .with(Field::L4Src, u128::from(src_port))
            .with(Field::L4Dst, 53)
    }

    fn table() -> NextHopTable {
        let a = NextHop::One(Adjacency::Forward { port: 0, src: [2; 6], dst: [4; 6] });
        let b = NextHop::One(Adjacency::Forward { port: 1, src: [2; 6], dst: [5; 6] });
        // Entry 2: a group of 0 and 1, entry 1 weighted twice.
        NextHopTable::new(vec![a, b, NextHop::Group { first: 0, len: 3 }, NextHop::Kernel], vec![0, 1, 1])
    }

    #[test]
    fn a_group_picks_one_member_per_flow_and_spreads_flows_by_weight() {
        let t = table();
        let mut per_port = [0usize; 2];
        for sport in 0..3000 {
            let Some(&Adjacency::Forward { port, .. }) = t.resolve(2, &flow(sport)) else { panic!("a member") };
            assert_eq!(t.resolve(2, &flow(sport)), t.resolve(2, &flow(sport)), "same flow, same member");
            per_port[port as usize] += 1;
        }
        assert!((800..1200).contains(&per_port[0]) && (1800..2200).contains(&per_port[1]), "{per_port:?}");
    }

    #[test]
    fn kernel_entries_and_unknown_ids_resolve_to_nothing() {
        let t = table();
        assert_eq!(t.resolve(3, &flow(1)), None);
        assert_eq!(t.resolve(9, &flow(1)), None);
        assert_eq!(t.resolve(0, &flow(1)), Some(&Adjacency::Forward { port: 0, src: [2; 6], dst: [4; 6] }));
    }

    #[test]
    fn a_group_member_that_is_not_a_single_adjacency_resolves_to_nothing() {
        let t = NextHopTable::new(vec![NextHop::Kernel, NextHop::Group { first: 0, len: 1 }], vec![0]);
        assert_eq!(t.resolve(1, &flow(7)), None);
    }

    #[test]
    fn a_source_route_says_whether_the_source_lies_behind_the_arrival_port() {
        let mut t = table();
        let local = t.intern(Adjacency::Local);
        let glean = t.intern(Adjacency::Glean { port: 1 });
        assert_eq!(t.source_route(0, 0), SourceRoute::Via { through_port: true });
        assert_eq!(t.source_route(0, 1), SourceRoute::Via { through_port: false });
        assert_eq!(t.source_route(2, 1), SourceRoute::Via { through_port: true }, "any ECMP member's port");
        assert_eq!(t.source_route(2, 7), SourceRoute::Via { through_port: false });
        assert_eq!(t.source_route(glean, 1), SourceRoute::Via { through_port: true }, "a connected subnet");
        assert_eq!(t.source_route(local, 0), SourceRoute::Local);
        assert_eq!(t.source_route(3, 0), SourceRoute::None, "a route left to the kernel");
        assert_eq!(t.source_route(99, 0), SourceRoute::None);
    }
}
