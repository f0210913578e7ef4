//! A VR's entry in `vrs:`.

use super::control_plane::ControlPlaneSpec;
use super::interface::InterfaceSpec;
use super::leak::LeakSpec;
use super::nat::NatSpec;
use super::plugin::PluginSpec;
use super::queue::{LimitsSpec, QueueSpec};
use super::resources::ResourcesSpec;
use super::route::{NeighborSpec, RouteSpec};
use super::rule::MatchSpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A virtual router.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VrSpec {
    /// 1 to 12 letters, digits, '-' or '_', unique in the node (it names the VR's namespace).
    #[schemars(example = &"red")]
    pub name: String,
    /// 0 to 8,191, unique (default: the lowest nobody states or holds).
    pub id: Option<i64>,
    /// Its data plane (default fast, or what `placement` says).
    pub kind: Option<KindSpec>,
    /// Which data plane forwards its packets (fast and kernel VRs).
    pub placement: Option<PlacementSpec>,
    /// What its fast path runs (default ip; filter and i3 for fast VRs).
    pub code: Option<CodeOption>,
    /// At least one.
    pub interfaces: Option<Vec<InterfaceSpec>>,
    /// Static routes: installed in the VR's kernel, mirrored to its fast path.
    pub routes: Option<Vec<RouteSpec>>,
    /// Static neighbours: an address and the MAC it is reached at.
    pub neighbors: Option<Vec<NeighborSpec>>,
    /// Extra classifier rules.
    #[serde(rename = "match")]
    pub matches: Option<Vec<MatchSpec>>,
    /// Its output queues (default one).
    pub queues: Option<Vec<QueueSpec>>,
    pub limits: Option<LimitsSpec>,
    pub control_plane: Option<ControlPlaneSpec>,
    /// The token that reaches this VR alone through the API (needs api.admin_token): 16 to
    /// 256 letters, digits or - . _ ~ + / =, its own.
    pub token: Option<String>,
    /// Accept IPv4 source-routed packets (default false).
    pub accept_source_route: Option<bool>,
    /// Prefixes imported from other VRs.
    pub leak: Option<Vec<LeakSpec>>,
    pub nat: Option<NatSpec>,
    pub resources: Option<ResourcesSpec>,
    /// How its traffic spreads over the node's workers (default flow).
    pub distribution: Option<DistributionSpec>,
    /// A plugin VR's program.
    pub plugin: Option<PluginSpec>,
}

choice!(
    /// A VR's kind.
    KindSpec { Fast = "fast", Kernel = "kernel", Shared = "shared", Plugin = "plugin" }
);

choice!(
    /// A VR's data plane: fast, kernel, or auto (fast while slots last).
    PlacementSpec { Fast = "fast", Kernel = "kernel", Auto = "auto" }
);

choice!(
    /// What a VR's fast path runs (SPP's "code option"): the one list of them, which the
    /// grammar reads, the API shows and the program factory (`pearl_program::make`)
    /// makes. A new option here is refused by the compiler until every `match` on it knows it.
    CodeOption { Ipv4 = "ipv4", Ipv6 = "ipv6", Ip = "ip", Filter = "filter", I3 = "i3", Reflect = "reflect" }
);

choice!(
    /// How a VR's traffic spreads over the node's workers.
    DistributionSpec { Flow = "flow", RoundRobin = "round_robin", Proportional = "proportional" }
);
