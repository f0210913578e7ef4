//! A VR's forwarding tables as their writer (the configuration, then routed) sees them: its FIBs
//! and next hops. Apart from the data plane so that routed, which only writes them, does not
//! depend on it.
//!
//! ## In detail
//!
//! A VR's forwarding tables as their writers see them: the data plane builds them from the
//! configuration (`Dataplane::update`) and reads them through views of its own (`VrView::new`);
//! routed keeps them from then on. Apart from the data plane so that routed does not depend on it.
//!
//! | module | job |
//! |---|---|
//! | `vr_tables` | `VrTables`: a VR's `Fib`s (IPv4 written through `apply4`, IPv6), its next hops and its local sources in `RcuCell`s, built from its config (`build`: own addresses, connected subnets, static neighbours and routes) or `empty`; `publish_next_hops`, and `published`, which the writer calls after a change so that the flow offload drops what it decided from the old tables |
//! | `local_sources` | `LocalRoutes`, the writer's account of the VR's local IPv4 routes kept batch by batch (`VrTables::apply4` is the IPv4 FIB's only writer, so it cannot drift), and `LocalSources`, what workers read in an `RcuCell` (`VrFacts::local_sources`): the local host addresses, or "ask the FIB" once a local route covers more than one address or a next-hop id changed between local and not. Linux checks a source against its own addresses with a hash, not a route lookup, unless custom local routes exist; the fast path did a second FIB lookup per IPv4 packet for it (a sixth of a forwarded packet's instructions) |
//! | `table_watch` | `TableWatch`: the hook `published` tells, implemented by the data plane's flow offload (`offload/`), so the tables need not know it |
//! | `nexthop` | `NextHopTable` (one line, its first two entries repeated on it, so that a VR with a gateway and a connected subnet reads no other): next-hop id → one `Adjacency` (forward: port, MACs; local; glean: unresolved), an ECMP group (member picked by a hash of the packet's 5-tuple, so a flow keeps its path), or "to the kernel" |

mod local_sources;
pub mod nexthop;
mod table_watch;
mod vr_tables;

pub use local_sources::LocalSources;
pub use table_watch::TableWatch;
pub use vr_tables::VrTables;
