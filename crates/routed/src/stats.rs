//! What routed reports about one VR's mirror.

/// A snapshot, taken after each batch (see [`crate::Routed::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoutedStats {
    /// FIB entries the mirror installed: kernel routes plus neighbour host routes.
    pub routes_v4: u64,
    pub routes_v6: u64,
    /// Routes the namespace's kernel holds in its main and local tables.
    pub kernel_routes_v4: u64,
    pub kernel_routes_v6: u64,
    /// Resolved neighbours.
    pub neighbors: u64,
    /// Next-hop ids in use.
    pub next_hops: u64,
    /// Routes the fast path cannot carry out (through a link that is not the VR's, encapsulating,
    /// source-specific…): installed as "to the kernel", logged once each.
    pub refused: u64,
    /// Routes left out because the FIB reached `limits.fib_entries`.
    pub over_quota: u64,
    /// Batches a FIB refused (each followed by a whole rewrite).
    pub fib_errors: u64,
    /// The hold-down is on (see [`crate::Routed::set_hold`]).
    pub held: bool,
    /// Routes the FIB keeps only because of the hold: the kernel has deleted them (or left them
    /// to itself) since. They go on release.
    pub deferred_removals: u64,
    /// Full dumps after the first: lost notifications (ENOBUFS), links going down, IPv4
    /// addresses removed.
    pub resyncs: u64,
    /// Batches published into the tables.
    pub batches: u64,
    /// Netlink messages handled, dumps included.
    pub events: u64,
    /// Messages that did not parse (skipped, logged).
    pub malformed: u64,
    /// Route updates in the last batch.
    pub last_batch_updates: u64,
    /// Time the last batch held the tables' lock (publishing next hops and both FIBs).
    pub last_apply_ns: u64,
    /// CPU time spent mirroring this VR (its first sync on the starting thread, then its
    /// steps on the reactor's).
    pub cpu_ns: u64,
}
