//! Lookup structures of the PEARL fast path: per-VR longest-prefix-match FIBs, read by
//! data-plane workers without locks while a control thread updates them (see [`rcu`]).
//!
//! ## In detail
//!
//! `rcu`: an `RcuDomain` of registered readers (one per worker). A reader enters a read section
//! per packet batch with two plain stores; a writer swaps a pointer (`RcuCell`) and waits for a
//! grace period, using `membarrier(PRIVATE_EXPEDITED)` so readers need no fence.
//!
//! `fib`: `Fib<A>` (`u32` for IPv4, `u128` for IPv6) is the writer's side of one VR's table;
//! `FibView` the readers'. The lookup structure is a leaf-pushed multibit trie (root stride 16;
//! then 8 for IPv4; 16 then 8 for IPv6) whose nodes are run-length compressed: per group of 64
//! slots a run-start bitmap and a rank, so a slot's entry is one popcount away (`node.rs`). Node
//! headers and entries live in two arenas (`arena.rs`) so that a full table's headers stay in L2.
//! The writer keeps its routes in `routes.rs`: short ones hashed (plus a presence bitmap), longer
//! ones in sorted vectors per root slot. A dropped `Fib` hands its node storage to its last
//! published version, so views that outlive it stay valid. A table of at most 16 routes (besides
//! the default) has no trie: its prefixes, longest first, are published inside the snapshot and
//! scanned (`small.rs`: lengths, networks and next hops in arrays of their own, so that an IPv4
//! snapshot is three lines, line-aligned); `Fib::page` reads the routes a page at a time in
//! address order (after a prefix, within a prefix: one pass over the short routes, a probe per root
//! slot, the page's longer ones), so that `pearlctl fib` reads a full table in bounded steps; the trie is built when a 17th route comes and dropped when fewer than 9
//! remain. A VR with ten routes per family thus costs ~6 KiB of tables instead of ~150 KiB, and a
//! lookup in it touches the snapshot's lines instead of a 12 KiB root and a child node.
//!
//!
//! How a batch of routes is applied:
//!
//! ```text
//! Fib::apply(&[RouteUpdate]) ── validate whole batch (refuse all or nothing)
//!    │ merge into the route store; collect the changed address ranges
//!    ▼
//! build.rs: rebuild the root from its old version, repainting only touched slots; each touched
//!    │ child is repainted whole from one scan of its routes; untouched children are reused
//!    ▼
//! new nodes go to free arena space; replaced ones are retired
//!    ▼
//! publish: one pointer swap (RcuCell) → grace period → retired nodes become free space
//! ```
//!
//! A batch is atomic for readers: they see all of it or none (`tests/it/fib_concurrent.rs`).

pub mod fib;
pub mod prefetch;
pub mod rcu;

pub use fib::{Fib, FibView, Ipv4Fib, Ipv6Fib, NextHopId, Prefix, RouteUpdate};
