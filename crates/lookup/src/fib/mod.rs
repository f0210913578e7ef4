//! Per-VR longest-prefix-match tables mapping prefixes to next-hop ids.
//!
//! A [`Fib`] is the writer's side: it keeps the routes in an ordered map (the reference every
//! node is rebuilt from) and a leaf-pushed, compressed multibit trie (see [`node`]) in an
//! [`arena::Arena`]. Updates come in batches; a batch rebuilds only the nodes whose address range
//! overlaps a changed prefix, copying the path up to a new root, and publishes that root with one
//! RCU pointer swap. A [`FibView`] is the readers' side: lock-free single and batched lookups.
//!
//! Memory follows the table: a table of up to [`small::SMALL_ROUTES`] routes has no trie at all,
//! its prefixes published inside the snapshot (see [`small`]); a trie's root is ~12 KiB, a full
//! Internet table a few MiB. The default route (`/0`) lives beside the trie so that changing it
//! touches nothing.

mod addr;
mod arena;
mod build;
mod changes;
mod hash;
mod node;
mod prefix;
mod prefix_list;
mod routes;
mod small;

pub use addr::AddrBits;
pub use prefix::{Prefix, PrefixError};
pub use prefix_list::{read_prefix_list, PrefixList, PrefixListError};

use crate::rcu::{RcuCell, RcuDomain, ReadGuard};
use arena::Arena;
use core::fmt;
use node::{CHILD, NO_ROUTE};
use small::{SmallTable, SMALL_ROUTES};
use std::marker::PhantomData;
use std::sync::Arc;

/// The id of a next hop in the VR's next-hop table.
pub type NextHopId = u32;

/// Returned by batch lookups for addresses no route covers.
pub const MISS: NextHopId = NO_ROUTE;

/// The largest next-hop id a route may carry.
pub const MAX_NEXT_HOP: NextHopId = NO_ROUTE - 1;

pub type Ipv4Fib = Fib<u32>;
pub type Ipv6Fib = Fib<u128>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteUpdate<A> {
    Insert(Prefix<A>, NextHopId),
    Remove(Prefix<A>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FibError {
    /// Update `index` of the batch names a next hop beyond [`MAX_NEXT_HOP`].
    NextHopOutOfRange { index: usize, next_hop: NextHopId },
}

impl fmt::Display for FibError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FibError::NextHopOutOfRange { index, next_hop } => {
                write!(f, "update {index}: next hop {next_hop} exceeds the maximum {MAX_NEXT_HOP}")
            }
        }
    }
}

impl std::error::Error for FibError {}

/// What a batch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ApplyStats {
    pub inserted: usize,
    pub replaced: usize,
    pub removed: usize,
    /// Removals of prefixes that were not in the table.
    pub absent: usize,
}

/// The published version readers see. Line-aligned, its fixed fields first: an IPv4 small
/// table then ends on the third line, and `prefetch` asks for no line it does not use.
#[repr(C, align(64))]
struct Snapshot<A> {
    headers: *const u32,
    entries: *const u32,
    root: u32,
    default: NextHopId,
    /// Set only in the last version a dropped [`Fib`] publishes: the node storage then lives
    /// exactly as long as the views that may still read it.
    _storage: Option<Box<(Arena, Arena)>>,
    /// A small table's routes; `None`: look in the trie at `root`.
    small: Option<SmallTable<A>>,
}

// Three lines, as `Snapshot`'s layout promises for IPv4.
const _: () = assert!(std::mem::size_of::<Snapshot<u32>>() == 192);

// SAFETY: the arena pointers are only dereferenced under an RCU read guard; see `arena`.
unsafe impl<A: Send> Send for Snapshot<A> {}
// SAFETY: as for the impl above.
unsafe impl<A: Sync> Sync for Snapshot<A> {}

/// The writer's side of one VR's table for one address family.
pub struct Fib<A: AddrBits> {
    routes: routes::RouteStore<A>,
    default: Option<NextHopId>,
    headers: Arena,
    entries: Arena,
    root: u32,
    /// Whether the routes are in the trie (`root`) or published as a small table.
    trie: bool,
    published: Arc<RcuCell<Snapshot<A>>>,
    domain: Arc<RcuDomain>,
    scratch: Vec<build::LevelScratch>,
    /// Header and entries of the node being stored, reused across nodes.
    encoding: (Vec<u32>, Vec<u32>),
}

impl<A: AddrBits> Fib<A> {
    /// An empty table whose readers belong to `domain`.
    pub fn new(domain: &Arc<RcuDomain>) -> Fib<A> {
        let (headers, entries) = (Arena::new(), Arena::new());
        let published = Arc::new(RcuCell::new(Snapshot {
            headers: headers.base(),
            entries: entries.base(),
            root: 0,
            default: NO_ROUTE,
            small: Some(SmallTable::new([])),
            _storage: None,
        }));
        Fib {
            routes: routes::RouteStore::new(),
            default: None,
            headers,
            entries,
            root: 0,
            trie: false,
            published,
            domain: Arc::clone(domain),
            scratch: Vec::new(),
            encoding: (Vec::new(), Vec::new()),
        }
    }

    /// A handle for lookups from any thread.
    pub fn view(&self) -> FibView<A> {
        FibView { published: Arc::clone(&self.published), _family: PhantomData }
    }

    /// Applies a batch atomically: readers see all of it or none of it. A batch with an invalid
    /// update is refused whole and changes nothing. When a batch names a prefix more than once,
    /// its last update wins; the stats count each prefix's net change once.
    pub fn apply(&mut self, updates: &[RouteUpdate<A>]) -> Result<ApplyStats, FibError> {
        for (index, u) in updates.iter().enumerate() {
            if let RouteUpdate::Insert(_, nh) = *u {
                if nh > MAX_NEXT_HOP {
                    return Err(FibError::NextHopOutOfRange { index, next_hop: nh });
                }
            }
        }
        let mut stats = ApplyStats::default();
        let default_before = self.default;
        let mut order: Vec<(Prefix<A>, usize)> = Vec::with_capacity(updates.len());
        for (index, u) in updates.iter().enumerate() {
            match *u {
                RouteUpdate::Insert(p, nh) if p.len() == 0 => count(&mut stats, self.default.replace(nh), Some(nh)),
                RouteUpdate::Remove(p) if p.len() == 0 => count(&mut stats, self.default.take(), None),
                RouteUpdate::Insert(p, _) | RouteUpdate::Remove(p) => order.push((p, index)),
            }
        }
        // Address order lets the store merge each group once; the stable sort keeps a prefix's
        // updates in batch order, and the last one wins.
        order.sort_by_key(|&(p, _)| p);
        order.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.1 = later.1;
            }
            same
        });
        let changes: Vec<routes::Change<A>> = order
            .iter()
            .map(|&(p, index)| routes::Change {
                addr: p.addr(),
                len: p.len() as u8,
                new: match updates[index] {
                    RouteUpdate::Insert(_, nh) => Some(nh),
                    RouteUpdate::Remove(_) => None,
                },
            })
            .collect();
        let mut previous = Vec::with_capacity(changes.len());
        self.routes.apply(&changes, &mut previous);
        let mut changed = Vec::new();
        for (c, &old) in changes.iter().zip(&previous) {
            if old != c.new {
                changed.push((c.addr, c.addr.last(u32::from(c.len))));
            }
            count(&mut stats, old, c.new);
        }
        let routes_changed = !changed.is_empty();
        let was_trie = self.trie;
        if self.trie && self.routes.len() <= SMALL_ROUTES / 2 {
            self.retire_subtree(self.root, 0);
            self.trie = false;
        } else if self.trie && routes_changed {
            let changed = changes::ChangedRanges::new(changed);
            self.root = self.rebuild(Some(self.root), A::ZERO, 0, NO_ROUTE, &changed);
        } else if !self.trie && self.routes.len() > SMALL_ROUTES {
            let everything = changes::ChangedRanges::new(vec![(A::ZERO, A::ZERO.last(0))]);
            self.root = self.rebuild(None, A::ZERO, 0, NO_ROUTE, &everything);
            self.trie = true;
        }
        if self.trie && (routes_changed || !was_trie) {
            // The root level's scratch is as large as the root (2^16 slots: ~580 KiB), which
            // kept between batches would cost every VR that much; taking it anew per batch
            // costs less than the rebuild that uses it. Deeper levels' scratch is small.
            if let Some(root) = self.scratch.first_mut() {
                *root = build::LevelScratch::default();
            }
        }
        if routes_changed || was_trie != self.trie || default_before != self.default {
            self.publish();
        }
        Ok(stats)
    }

    pub fn insert(&mut self, prefix: Prefix<A>, next_hop: NextHopId) -> Result<ApplyStats, FibError> {
        self.apply(&[RouteUpdate::Insert(prefix, next_hop)])
    }

    pub fn remove(&mut self, prefix: Prefix<A>) -> ApplyStats {
        self.apply(&[RouteUpdate::Remove(prefix)]).expect("removals cannot be refused")
    }

    /// The next hop of an exact prefix.
    pub fn get(&self, prefix: Prefix<A>) -> Option<NextHopId> {
        if prefix.len() == 0 {
            return self.default;
        }
        self.routes.get(prefix.addr(), prefix.len() as u8)
    }

    /// All routes, ordered by address then length.
    pub fn routes(&self) -> Vec<(Prefix<A>, NextHopId)> {
        let default = self.default.map(|nh| (Prefix::containing(A::ZERO, 0), nh));
        default.into_iter().chain(self.routes.sorted().into_iter().map(|(a, l, nh)| (Prefix::containing(a, u32::from(l)), nh))).collect()
    }

    /// A page of [`Fib::routes`]: at most `limit` routes ordered after `after`, within
    /// `within` (itself and more specific routes) if given. Bounded in time by the page, not
    /// the table, so that a full table can be read while its writer keeps updating it.
    pub fn page(&self, after: Option<Prefix<A>>, within: Option<Prefix<A>>, limit: usize) -> Vec<(Prefix<A>, NextHopId)> {
        let (first, last, min_len) = within.map_or((A::ZERO, A::ZERO.last(0), 0), |w| (w.addr(), w.last(), w.len() as u8));
        let key = after.map(|p| (p.addr(), p.len() as u8));
        let default = self.default.filter(|_| min_len == 0 && key.is_none()).map(|nh| (Prefix::containing(A::ZERO, 0), nh));
        let rest = self.routes.page(key, first, last, min_len.max(1), limit - usize::from(default.is_some()).min(limit));
        default.into_iter().chain(rest.into_iter().map(|(a, l, nh)| (Prefix::containing(a, u32::from(l)), nh))).take(limit).collect()
    }

    pub fn len(&self) -> usize {
        self.routes.len() + usize::from(self.default.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the lookup structure (node storage as allocated).
    pub fn table_bytes(&self) -> usize {
        self.headers.allocated_bytes() + self.entries.allocated_bytes()
    }

    /// Bytes of nodes reachable from the current root.
    pub fn live_bytes(&self) -> usize {
        self.headers.live_bytes() + self.entries.live_bytes()
    }

    /// Bytes of everything the table holds: node storage plus the writer's route store.
    pub fn total_bytes(&self) -> usize {
        self.table_bytes() + self.routes.bytes() + std::mem::size_of::<Self>()
    }

    /// The table's small form, when it has one.
    fn small(&self) -> Option<SmallTable<A>> {
        (!self.trie).then(|| SmallTable::new(self.routes.sorted()))
    }

    fn publish(&mut self) {
        let snapshot = Snapshot {
            headers: self.headers.base(),
            entries: self.entries.base(),
            root: self.root,
            default: self.default.unwrap_or(NO_ROUTE),
            small: self.small(),
            _storage: None,
        };
        drop(self.published.replace(snapshot, &self.domain));
        self.headers.grace_period_elapsed();
        self.entries.grace_period_elapsed();
    }
}

impl<A: AddrBits> Drop for Fib<A> {
    /// Views may outlive the table (a worker still holding one while the control side replaces
    /// a VR): hand the node storage to the published version instead of freeing it.
    fn drop(&mut self) {
        let small = self.small();
        let headers = std::mem::replace(&mut self.headers, Arena::new());
        let entries = std::mem::replace(&mut self.entries, Arena::new());
        let last = Snapshot {
            headers: headers.base(),
            entries: entries.base(),
            root: self.root,
            default: self.default.unwrap_or(NO_ROUTE),
            small,
            _storage: Some(Box::new((headers, entries))),
        };
        drop(self.published.replace(last, &self.domain));
    }
}

fn count(stats: &mut ApplyStats, old: Option<NextHopId>, new: Option<NextHopId>) {
    match (old, new) {
        (None, Some(_)) => stats.inserted += 1,
        (Some(a), Some(b)) if a != b => stats.replaced += 1,
        (Some(_), None) => stats.removed += 1,
        (None, None) => stats.absent += 1,
        (Some(_), Some(_)) => {}
    }
}

/// Lock-free lookups into a [`Fib`]; cheap to clone, one per worker.
pub struct FibView<A> {
    published: Arc<RcuCell<Snapshot<A>>>,
    _family: PhantomData<fn() -> A>,
}

impl<A> Clone for FibView<A> {
    fn clone(&self) -> Self {
        FibView { published: Arc::clone(&self.published), _family: PhantomData }
    }
}

/// Lookups in flight at once in a batch: enough independent memory accesses to hide latency.
pub const BATCH: usize = 32;

impl<A: AddrBits> FibView<A> {
    /// The next hop for `addr`, or `None` when no route covers it.
    #[inline]
    pub fn lookup(&self, guard: &ReadGuard<'_>, addr: A) -> Option<NextHopId> {
        let s = self.published.load(guard);
        if let Some(small) = &s.small {
            let nh = match small.lookup(addr) {
                NO_ROUTE => s.default,
                nh => nh,
            };
            return (nh != NO_ROUTE).then_some(nh);
        }
        let mut node = s.root;
        let mut depth = 0;
        loop {
            let stride = A::stride_at(depth);
            // SAFETY: `node` is reachable from the published root, which the guard keeps alive.
            let e = unsafe { node::entry(s.headers, s.entries, node, addr.slot(depth, stride)) };
            if e & CHILD == 0 {
                let nh = if e == NO_ROUTE { s.default } else { e };
                return (nh != NO_ROUTE).then_some(nh);
            }
            node = e & !CHILD;
            depth += stride;
        }
    }

    /// Where the cell that holds the published table's address is, which `prefetch` reads:
    /// with thousands of VRs it is cold too, and a batch asks for it well before `prefetch`
    /// (the address never changes, so it may be kept apart from the view).
    pub fn cell_address(&self) -> usize {
        Arc::as_ptr(&self.published) as usize
    }

    /// Starts loading the published table (a small table's routes, or the trie's root
    /// pointer): a batch spread over many VRs asks this of each VR's table before looking any
    /// up, so that their misses overlap instead of following one another.
    #[inline]
    pub fn prefetch(&self, guard: &ReadGuard<'_>) {
        let s: *const Snapshot<A> = self.published.load(guard);
        crate::prefetch::lines(s.cast(), std::mem::size_of::<Snapshot<A>>());
    }

    /// Looks up every address, writing next hops (or [`MISS`]) to `out[..addrs.len()]`.
    ///
    /// The lookups of a batch advance level by level in two passes: the first reads each
    /// lane's header and prefetches the entry it points to, the second reads the entries (by
    /// then arriving) and prefetches the next level's headers. Every distant load is thus
    /// requested a whole pass before it is needed, and the lanes' misses overlap.
    #[inline]
    pub fn lookup_batch(&self, guard: &ReadGuard<'_>, addrs: &[A], out: &mut [NextHopId]) {
        let s = self.published.load(guard);
        if let Some(small) = &s.small {
            for (&a, o) in addrs.iter().zip(out.iter_mut()) {
                *o = match small.lookup(a) {
                    NO_ROUTE => s.default,
                    nh => nh,
                };
            }
            return;
        }
        for (addrs, out) in addrs.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            let mut nodes = [s.root; BATCH];
            let mut entries = [core::ptr::null::<u32>(); BATCH];
            let mut pending: u64 = u64::MAX >> (64 - addrs.len());
            let mut depth = 0;
            while pending != 0 {
                let stride = A::stride_at(depth);
                let mut todo = pending;
                while todo != 0 {
                    let i = todo.trailing_zeros() as usize;
                    todo &= todo - 1;
                    // SAFETY: `nodes[i]` is reachable from the published root, which the guard
                    // keeps alive.
                    let p = unsafe { node::entry_ptr(s.headers, s.entries, nodes[i], addrs[i].slot(depth, stride)) };
                    node::prefetch(p);
                    entries[i] = p;
                }
                let next = depth + stride;
                let mut todo = pending;
                while todo != 0 {
                    let i = todo.trailing_zeros() as usize;
                    todo &= todo - 1;
                    // SAFETY: computed above from a live node.
                    let e = unsafe { *entries[i] };
                    if e & CHILD != 0 {
                        nodes[i] = e & !CHILD;
                        if next < A::WIDTH {
                            let index = addrs[i].slot(next, A::stride_at(next));
                            node::prefetch(node::header_ptr(s.headers, nodes[i], index));
                        }
                    } else {
                        out[i] = if e == NO_ROUTE { s.default } else { e };
                        pending &= !(1 << i);
                    }
                }
                depth = next;
            }
        }
    }
}
