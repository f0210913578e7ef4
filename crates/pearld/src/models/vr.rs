//! A VR as the API shows it (`GET /v1/vrs/{name}` and what changes answer): what it is, from its
//! configuration, rather than what it counts (that is `stats`).

use super::impairment::Impairment;
use super::resources::ResourceAmounts;
use super::vr_kind::VrKind;
use super::vr_options::{Code, DataPlane, Distribution, Placement, Urpf};
use crate::validate::NAME_PATTERN;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Vr {
    #[schemars(pattern(NAME_PATTERN), example = &"red")]
    pub name: String,
    pub id: u16,
    pub kind: VrKind,
    /// its code option (not a plugin VR's)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<Code>,
    /// IPv4 source route options honoured (off: dropped, as Linux does by default)
    pub accept_source_route: bool,
    /// the network namespace holding the VR's control plane
    pub namespace: String,
    pub ports: Vec<String>,
    pub interfaces: Vec<Interface>,
    pub routes: Vec<Route>,
    pub neighbors: Vec<Neighbor>,
    pub match_rules: Vec<MatchRule>,
    pub queues: Vec<Queue>,
    pub limits: Limits,
    /// where the VR asked to be forwarded (fast and kernel VRs)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// where its packets are forwarded now
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_plane: Option<DataPlane>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceAmounts>,
    /// how its traffic is spread over the workers
    pub distribution: Distribution,
    /// the workers its traffic runs on
    pub workers: Vec<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slices: Option<Vec<Slice>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<ControlPlane>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<Vec<Process>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leak: Option<Vec<Leak>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nat: Option<Nat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<Plugin>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Interface {
    pub name: String,
    pub port: String,
    pub mac: String,
    pub addresses: Vec<String>,
    pub mtu: u32,
    pub urpf: Urpf,
    pub impair: Impairment,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Route {
    pub prefix: String,
    pub via: String,
    pub interface: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Neighbor {
    pub ip: String,
    pub mac: String,
    pub interface: String,
}

// A `match` rule's priority and queue, and a filter VR's action (`out` and `mac`, `slow` or
// `drop`) as its configuration states it.
#[derive(Serialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct MatchRule {
    pub priority: u32,
    pub queue: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drop: Option<bool>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Queue {
    pub weight: u32,
    pub length: usize,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub fib_entries: usize,
    pub filters: usize,
    pub cpu_percent: u32,
    pub memory_mb: u64,
    pub punt_pps: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_mbps: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<u32>,
    // A plugin's only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuel_per_packet: Option<u64>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Slice {
    pub worker: usize,
    #[schemars(range(min = 1))]
    pub pps: u64,
}

// One of `frr`, `bird` or `command`.
#[derive(Serialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ControlPlane {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frr: Option<Frr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bird: Option<Bird>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Frr {
    pub daemons: Vec<String>,
    pub config: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bird {
    pub config: String,
    // Where `birdc -s` reaches this VR's BIRD.
    pub socket: String,
}

// A control-plane process: what it is, whether it runs, how often it was restarted.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Process {
    pub name: String,
    pub running: bool,
    pub restarts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Leak {
    pub from: String,
    pub prefixes: Vec<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nat {
    pub address: String,
    pub ports: String,
    pub interface: String,
}

// The program of a plugin VR: `wasm` or `xdp` (with `bytes`), or `process`.
#[derive(Serialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct Plugin {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wasm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xdp: Option<String>,
    /// the XDP program's ELF section, if the configuration names one
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// plugin.config, handed to the plugin as JSON
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
    /// each table's most entries
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tables: Option<BTreeMap<String, usize>>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VrList {
    pub vrs: Vec<Vr>,
    /// VRs the query matched, before offset and limit
    pub vrs_total: usize,
}
