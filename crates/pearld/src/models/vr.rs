//! A VR as the API shows it (`GET /v1/vrs/{name}` and what changes answer): what it is, from its
//! configuration, rather than what it counts (that is `stats`).

use super::impairment::Impairment;
use super::resources::ResourceAmounts;
use super::vr_health::VrHealth;
use super::vr_kind::VrKind;
use super::vr_options::{DataPlane, Distribution, Placement, Urpf};
use crate::validate::NAME_PATTERN;
use pearl_control::CodeOption;
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
    pub code: Option<CodeOption>,
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
    /// the control plane's health at a glance (VRs with a control plane or a route mirror)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<VrHealth>,
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
    /// how its last process ended (`signal: 9 (SIGKILL)`, `exit status: 1`), once one has
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_exit: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::schema_of;
    use crate::models::vr_health::{Families, Session};
    use crate::validate::check;
    use serde_json::{json, Value};

    fn bare() -> Vr {
        Vr {
            name: "red".into(),
            id: 1,
            kind: VrKind::Shared,
            code: None,
            accept_source_route: false,
            namespace: "red".into(),
            ports: vec!["p0".into()],
            interfaces: vec![],
            routes: vec![],
            neighbors: vec![],
            match_rules: vec![],
            queues: vec![],
            limits: Limits {
                fib_entries: 1,
                filters: 1,
                cpu_percent: 1,
                memory_mb: 1,
                punt_pps: 1,
                rate_mbps: None,
                share: None,
                fuel_per_packet: None,
            },
            placement: None,
            data_plane: None,
            resources: None,
            distribution: Distribution::Flow,
            workers: vec![0],
            slices: None,
            control_plane: None,
            processes: None,
            health: None,
            leak: None,
            nat: None,
            plugin: None,
        }
    }

    /// Every field the type can send, each optional one set.
    fn full() -> Vr {
        let text = |s: &str| s.to_string();
        Vr {
            kind: VrKind::Fast,
            code: Some(CodeOption::Ipv4),
            interfaces: vec![Interface {
                name: text("eth0"),
                port: text("p0"),
                mac: text("02:00:00:00:00:01"),
                addresses: vec![text("10.0.0.1/24")],
                mtu: 1500,
                urpf: Urpf::Strict,
                impair: Impairment {
                    delay_ms: Some(1.5),
                    jitter_ms: Some(0.5),
                    loss_percent: Some(1.0),
                    duplicate_percent: Some(2.0),
                    rate_mbps: Some(10.0),
                },
            }],
            routes: vec![Route { prefix: text("0.0.0.0/0"), via: text("10.0.0.2"), interface: text("eth0") }],
            neighbors: vec![Neighbor { ip: text("10.0.0.2"), mac: text("02:00:00:00:00:02"), interface: text("eth0") }],
            match_rules: vec![MatchRule {
                priority: 10,
                queue: 0,
                out: Some(text("eth0")),
                mac: Some(text("02:00:00:00:00:02")),
                slow: Some(true),
                drop: Some(true),
            }],
            queues: vec![Queue { weight: 1, length: 64 }],
            limits: Limits {
                fib_entries: 1,
                filters: 1,
                cpu_percent: 1,
                memory_mb: 1,
                punt_pps: 1,
                rate_mbps: Some(100),
                share: Some(2),
                fuel_per_packet: Some(1000),
            },
            placement: Some(Placement::Auto),
            data_plane: Some(DataPlane::Kernel),
            resources: Some(ResourceAmounts::from(vec![("pps", 1000), ("workers", 1)])),
            distribution: Distribution::RoundRobin,
            slices: Some(vec![Slice { worker: 0, pps: 1000 }]),
            control_plane: Some(ControlPlane {
                frr: Some(Frr { daemons: vec![text("bgpd")], config: text("/etc/frr.conf") }),
                bird: Some(Bird { config: text("/etc/bird.conf"), socket: text("/run/bird.ctl") }),
                command: Some(vec![text("true")]),
            }),
            processes: Some(vec![Process {
                name: text("bgpd"),
                running: true,
                restarts: 1,
                pid: Some(42),
                last_exit: Some(text("signal: 9 (SIGKILL)")),
            }]),
            health: Some(VrHealth {
                daemons_running: 1,
                daemons: 1,
                sessions: Some(vec![Session {
                    protocol: text("bgp"),
                    peer: text("10.0.0.2"),
                    interface: Some(text("eth0")),
                    vrf: None,
                    state: text("Established"),
                    up: true,
                    prefixes_received: Some(3),
                }]),
                sessions_up: 1,
                checked_seconds_ago: Some(0.5),
                query_errors: Some(vec![text("show bgp summary json: timed out")]),
                fast_path_routes: Some(Families { v4: 3, v6: 0 }),
                kernel_routes: Some(Families { v4: 3, v6: 0 }),
                routed_in_sync: Some(true),
            }),
            leak: Some(vec![Leak { from: text("blue"), prefixes: vec![text("10.1.0.0/16")] }]),
            nat: Some(Nat { address: text("192.0.2.1"), ports: text("1024-2047"), interface: text("eth0") }),
            plugin: Some(Plugin {
                wasm: Some(text("/p.wasm")),
                bytes: Some(10),
                process: Some(vec![text("/p")]),
                xdp: Some(text("/p.o")),
                section: Some(text("xdp")),
                config: Some(json!({"any": ["json", null]})),
                tables: Some([(text("blocked"), 16)].into()),
            }),
            ..bare()
        }
    }

    #[test]
    fn a_vr_answer_is_what_its_schema_says_with_every_option_set_or_none() {
        let schema = schema_of::<Vr>();
        for vr in [bare(), full()] {
            let sent = serde_json::to_value(&vr).unwrap();
            check(&schema, &sent, "").unwrap_or_else(|e| panic!("{e:?} in {sent}"));
        }
        let sent = serde_json::to_value(full()).unwrap();
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&sent), keys(&schema["properties"]), "a field sent but not documented, or the reverse");
        let bare = serde_json::to_value(bare()).unwrap();
        assert_eq!(keys(&bare).len(), schema["required"].as_array().unwrap().len(), "an unset option is sent");
    }
}
