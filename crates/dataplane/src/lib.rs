//! The PEARL data plane: ports move batches of packets in and out; workers run each batch to
//! completion through the pipeline.

pub mod batch;
mod bpf_sys;
pub mod capture;
pub mod channel_plan;
pub mod coalesce;
pub mod counters;
pub mod dataplane;
pub mod impair;
pub use pearl_program::leak;
pub mod link;
pub mod nat;
pub mod offload;
mod opaque;
pub mod output;
pub use pearl_program::packet;
pub mod pipeline;
pub mod plan;
pub mod plan_views;
pub mod port;
pub mod prefetch;
pub use pearl_program as program;
pub use pearl_program::punt;
pub mod sched;
pub mod sched_plan;
pub mod slowpath;
pub mod steering;
pub mod table_cells;
pub mod tx_offload;
pub use pearl_program::validity;
pub mod vid_rules;
pub mod vr;
pub mod vr_changes;
pub mod vr_facts;
pub mod vr_links;
pub mod worker;
pub mod worker_share;
