//! A VR's health at a glance (`health` in `GET /v1/vrs/{name}` and `/v1/vrs`): its control-plane
//! daemons, the adjacencies and sessions its routing suite reports through its own query
//! interface (vtysh, birdc), and how far its routes reached the fast path.

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VrHealth {
    /// control-plane daemons running, of `daemons`
    pub daemons_running: usize,
    pub daemons: usize,
    /// adjacencies and sessions as the routing suite last reported them; absent until it was
    /// first asked (within a second of the first request for this VR)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Vec<Session>>,
    /// sessions that are up (OSPF Full, BGP Established, BIRD protocol up)
    pub sessions_up: usize,
    /// age of `sessions`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_seconds_ago: Option<f64>,
    /// why a query of the routing suite failed, one line per query
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query_errors: Option<Vec<String>>,
    /// routes routed mirrored into the fast path's FIBs (kernel routes and neighbour host routes)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_path_routes: Option<Families>,
    /// routes the VR namespace's kernel holds (main and local tables)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_routes: Option<Families>,
    /// the fast path holds what the kernel holds: routed holds no route back (hold-down) and
    /// left none out for the VR's quota
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routed_in_sync: Option<bool>,
}

#[derive(Serialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Families {
    pub v4: u64,
    pub v6: u64,
}

#[derive(Serialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// `ospf`, `ospf6`, `bgp` (FRR), or BIRD's protocol type in lower case (`bgp`, `ospf`…)
    #[schemars(example = &"ospf")]
    pub protocol: String,
    /// the neighbour's router id (OSPF), the peer's address (FRR BGP) or BIRD's protocol name
    #[schemars(example = &"10.1.0.2")]
    pub peer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// the VR's VRF the session is in, other than its default one (FRR)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vrf: Option<String>,
    /// the suite's own word for it: `Full/-`, `Established`, `Active`, `up`…
    #[schemars(example = &"Full/-")]
    pub state: String,
    pub up: bool,
    /// prefixes received from the peer (BGP)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefixes_received: Option<u64>,
}
