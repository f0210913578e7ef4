//! A VR's `queues:` and `limits:`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One of a VR's output queues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// Its weight among the VR's queues, 1 to 1,000,000 (default 1).
    pub weight: Option<i64>,
    /// Frames it holds, 1 to 1,048,576 (default 1,024).
    pub length: Option<i64>,
}

/// What a VR may use; a limit left out comes from what it asks for as `resources`, else the
/// default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Its rate cap in Mbit/s, 1 to 10,000,000.
    pub rate_mbps: Option<i64>,
    /// Its share of its ports against other VRs, 1 to 2^30.
    pub share: Option<i64>,
    /// Most routes and neighbours, 0 to 2^26.
    pub fib_entries: Option<i64>,
    /// Most match rules, 0 to 2^20.
    pub filters: Option<i64>,
    /// CPU of its processes, percent of one core, 1 to 102,400.
    pub cpu_percent: Option<i64>,
    /// Memory of its processes in MiB, 32 to 2^24.
    pub memory_mb: Option<i64>,
    /// Packets per second it may punt to its slow path, 1 to 10,000,000.
    pub punt_pps: Option<i64>,
    /// A plugin's fuel per packet, 1 to 2^30.
    pub fuel_per_packet: Option<i64>,
}
