//! The crate's integration tests as modules of one binary, since each test binary pays the
//! release profile's thin LTO (~17 s of a CPU). A new test file is a `mod` here unless it needs a
//! process of its own.
//! Apart, each in a process of its own: `pipeline_alloc` and `sched_alloc` (a counting global
//! allocator), `af_xdp`, `ports_netdev` and `worker_stalls` (kernel interfaces and namespaces, and
//! timing that other tests running beside them would disturb).

#[path = "../common/mod.rs"]
mod common;
#[path = "../pcap_rig/mod.rs"]
mod pcap_rig;

mod hosted_program;
mod impair;
mod incremental_plan;
mod opaque_filter;
mod pipeline_bytes;
mod ports;
mod program_wire;
mod reconfigure;
mod reflect;
mod sched;
mod trace;
mod tx_offload;
mod unresolved;
mod validity;
