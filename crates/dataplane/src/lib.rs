//! The PEARL data plane: ports move batches of packets in and out; workers run each batch to
//! completion through the pipeline.

pub mod batch;
mod bpf_sys;
pub mod capture;
pub mod counters;
pub mod dataplane;
pub mod impair;
pub mod leak;
pub mod nat;
pub mod offload;
mod opaque;
pub mod output;
pub mod packet;
pub mod pipeline;
pub mod plan;
pub mod port;
pub mod prefetch;
pub mod program;
pub mod punt;
pub mod sched;
pub mod slowpath;
pub mod validity;
pub mod vr;
pub mod worker;
pub mod worker_share;
