//! `GET /v1/node`: what the node has to grant VRs, what it granted and has free (null:
//! unbounded), its fast-path slots, and each VR's requests and workers.

use super::resources::{ResourceAmounts, ResourceTable};
use super::vr_kind::VrKind;
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeReport {
    pub capacity: ResourceTable<Option<u64>>,
    pub granted: ResourceTable<u64>,
    pub free: ResourceTable<Option<u64>>,
    pub fast_slots: FastSlots,
    pub vrs: Vec<NodeVr>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FastSlots {
    pub capacity: Option<usize>,
    pub used: usize,
    pub free: Option<usize>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeVr {
    pub name: String,
    pub kind: VrKind,
    pub resources: ResourceAmounts,
    /// the workers its traffic runs on
    pub workers: Vec<usize>,
}
