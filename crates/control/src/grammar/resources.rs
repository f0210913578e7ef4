//! A VR's `resources:` and the node's `capacity:`.

use super::forms::WorkersAsk;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Amounts of each resource, each left out when nothing is said; `W`: how workers are said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Amounts<W> {
    pub fib_entries: Option<i64>,
    pub filters: Option<i64>,
    pub queues: Option<i64>,
    pub buffer_kb: Option<i64>,
    pub bandwidth_mbps: Option<i64>,
    pub pps: Option<i64>,
    pub cpu_percent: Option<i64>,
    pub workers: Option<W>,
}

/// What a VR asks the node for (each at least 1), granted whole or refused whole.
pub type ResourcesSpec = Amounts<WorkersAsk>;

/// What the node has, stated instead of measured.
pub type CapacitySpec = Amounts<i64>;
