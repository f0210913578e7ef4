//! The PEARL data plane: ports move batches of packets in and out; workers run each batch to
//! completion through the pipeline.
//!
//! Rooms: `pipeline/` (one file per stage), `plan/` (what a worker runs with, made per change
//! of configuration), `port/` (devices, fanout steering, transmit offloads), `worker/` (the
//! thread that polls ports and runs batches), `vr/` (a VR as workers see it), `sched/` (output
//! schedulers), `slowpath/` (rings to the VRs' kernels), `offload/` (flows handed to the kernel),
//! `packet/` (buffers and pools), `program/` (the VRs' programs).
//!
//! ## Per-VR stores, and why they are apart
//!
//! With thousands of VRs each packet's VR is cold: what a packet reads of its VR is split by
//! who reads it how often, so that the common path touches few lines and a rare decision's
//! state is not on them. Per worker means one copy per worker, written by it alone (no shared
//! lines, no locked instructions).
//!
//! | store | holds | written by | read by | apart because |
//! |---|---|---|---|---|
//! | `VrView` (`vr/`), `[vr id]` of a plan | program, FIB views, next-hop cell, `NearLinks`, offload flag | the control side, per plan (`plan/views.rs`) | every packet | one line (asserted): a cold VR costs one miss |
//! | `VrFacts` (`vr/`), behind the view | every port's link, interface ports, `punt_pps`, share weight, local-sources cell | with the view | exceptions, `Copies`, the source check | kept off the view's line |
//! | `NearLinks` (`vr/links.rs`), in the view | MTU and uRPF of up to four ports, 13 bytes | with the view | every forwarded packet | a separate allocation was one more cold line |
//! | `TableCells` (`plan/table_cells.rs`), dense | addresses of the FIB, next-hop and program cells, share weight: 40 bytes a VR | with each plan | `lookahead`'s prefetches; the share window's end | view → cell → table is three misses in a row; the dense array stays in cache |
//! | FIB snapshots (`pearl_lookup::fib`), per family | the trie, or ≤ 16 routes inside the snapshot | the tables' writer (RCU) | the lookup and source stages | a small table is the snapshot's own lines |
//! | `NextHopTable` (`pearl_tables`), an RCU cell | adjacencies, the first two on the table's line | the tables' writer | forward, source check | a VR with a gateway and a subnet reads one line |
//! | `LocalSources` (`pearl_tables`), an RCU cell | the VR's local host addresses | `VrTables::apply4` | the source check | a hash, not a second FIB lookup per packet |
//! | `VrCounters` (`counters.rs`), per worker | the five a batch adds first, on their own line; exceptions, drops | the worker | readers summing workers | `prefetch_hot` loads one line, not three |
//! | share `Account` (`worker_share.rs`), per worker | the VR's units, charged time and allowance: one line | the worker | the share stage, round ends | a batch over many VRs loads one line a packet |
//! | `PuntPolicer` (`punt.rs`), per worker | one token bucket per punt class | the worker | exceptions only | never on a forwarded packet's path |
//! | `NatTable` (`nat.rs`), per worker | the VR's NAT mappings | the one worker that sees both directions | the NAT stages | only VRs with `nat:` have one |
//! | `SlowPathTx::vr_channel` (`pipeline/slow_path_tx.rs`), per worker | the VR's slow-path ring, as an index | each plan | exceptions | 2 bytes a VR, the rings themselves apart |
//! | `VrRoster` (`plan/vr_roster.rs`), control side | shared flags, the VRs on each port, impairments, NAT reservations | each change, for the VRs it touches | plan building | never read by a worker's packet |
//!
//! ## The facade
//!
//! What other crates use, by name, re-exported below; the modules that hold them stay public
//! for the paths their callers already name. The rest is the crate's own (`pub(crate)`).

pub(crate) mod batch;
mod bpf_sys;
pub mod capture;
pub mod counters;
pub mod dataplane;
pub mod impair;
pub mod leak;
pub(crate) mod nat;
pub(crate) mod offload;
mod opaque;
pub mod output;
pub mod packet;
pub(crate) mod pipeline;
pub mod plan;
pub mod port;
pub(crate) mod prefetch;
pub mod program;
pub(crate) mod punt;
pub mod sched;
pub mod slowpath;
pub(crate) mod validity;
pub mod vr;
pub(crate) mod worker;
pub(crate) mod worker_share;

pub use capture::{CapturePoint, TapSpec};
pub use counters::{Exception, PortCounters, VrCounters, VrDrop, WorkerCounters};
pub use dataplane::{vr_interface_mtu, ChannelChange, Dataplane, Layout, SlowPathStart};
pub use output::{OutputSink, QueueMirror, Schedulers};
pub use packet::{Packet, PacketPool};
pub use port::Port;
pub use slowpath::{ChannelId, Netio, NetioCounters, NetioInterface, NetioReactor, NetioVr};
pub use vr::VrView;
