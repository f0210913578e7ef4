//! The crate's integration tests, one module per file, linked as one binary: every test binary
//! is linked with the release profile's thin LTO, ~17 s of a CPU each, so one binary instead of
//! one per file saves minutes of every CI run.
//! Apart, each in a process of its own: `pipeline_alloc` and `sched_alloc` (a counting global
//! allocator), `af_xdp`, `ports_netdev` and `worker_stalls` (kernel interfaces and namespaces, and
//! timing that other tests running beside them would disturb).

#[path = "../common/mod.rs"]
mod common;
#[path = "../pcap_rig/mod.rs"]
mod pcap_rig;

mod impair;
mod opaque_filter;
mod pipeline_bytes;
mod ports;
mod program_wire;
mod reconfigure;
mod sched;
mod tx_offload;
mod validity;
