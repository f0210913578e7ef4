//! The output scheduler of a port, after SPP's queue manager.
//!
//! Each VR sending out of a port owns one or more bounded queues with weights. A two-level
//! weighted deficit round robin shares the port: first across the backlogged VRs (a VR's weight
//! is the sum of its queues' weights), then across the backlogged queues inside the VR that
//! holds the turn. Token buckets cap the port and, optionally, each VR. The scheduler is
//! work-conserving: a VR that is idle or out of tokens is passed over, and whatever it cannot
//! use goes to the VRs that can.
//!
//! Everything is sized when the scheduler is built; enqueueing and dequeueing neither allocate,
//! lock, nor make system calls, and the clock is read by the caller once per batch.

mod config;
mod queue;
mod rate;
mod ring;
mod shared_credit;
mod token_bucket;
mod wdrr;

pub use config::{PortSchedConfig, QueueConfig, SchedConfigError, VrClassConfig};
pub use queue::QueueStats;
pub use rate::{RateLimit, DEFAULT_BURST_NS, MIN_DEFAULT_BURST_BYTES};
pub use shared_credit::SharedCredit;
pub use token_bucket::TokenBucket;
pub use wdrr::{PortScheduler, MIN_QUANTUM_BYTES};

/// A queue of one port's scheduler: queues are numbered across the port in config order, the
/// first VR's queues first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueId(pub u32);

/// A VR's place in one port's scheduler (its index in [`PortSchedConfig::vrs`]), not a global
/// VR identifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VrClassId(pub u32);
