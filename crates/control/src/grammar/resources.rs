//! A VR's `resources:` and the node's `capacity:`.

use super::forms::WorkersAsk;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Amounts of each resource, each left out when nothing is said; `W`: how workers are said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Amounts<W> {
    /// FIB entries (granted: the VR's `limits.fib_entries`).
    pub fib_entries: Option<i64>,
    /// Classifier rules (granted: its `limits.filters`).
    pub filters: Option<i64>,
    /// Output queues.
    pub queues: Option<i64>,
    /// Queue buffer memory in KiB (measured: half the memory available).
    pub buffer_kb: Option<i64>,
    /// Mbit/s (measured: the ports' speeds or `rate_mbps`; granted: the VR's rate cap).
    pub bandwidth_mbps: Option<i64>,
    /// Packets per second of the workers' time (granted: the VR's weight for ports and workers).
    pub pps: Option<i64>,
    /// Percent of one CPU (granted: its cgroup's `limits.cpu_percent`).
    pub cpu_percent: Option<i64>,
    /// Workers.
    pub workers: Option<W>,
}

/// What a VR asks the node for (each at least 1), granted whole or refused whole.
pub type ResourcesSpec = Amounts<WorkersAsk>;

/// What the node has, stated instead of measured.
pub type CapacitySpec = Amounts<i64>;
