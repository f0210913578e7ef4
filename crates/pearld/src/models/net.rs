//! A virtual network as `GET /v1/nets/{name}` and `pearlctl net show` give it.

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetReport {
    pub name: String,
    /// When the counters were read: seconds of the node's monotonic clock (rates are the
    /// counters' change between two reads over the change of this).
    pub time_seconds: f64,
    pub vrs: Vec<String>,
    pub hosts: Vec<NetHost>,
    pub links: Vec<NetLink>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetHost {
    pub name: String,
    /// The namespace it runs in (`ip netns exec NAMESPACE …`).
    pub namespace: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetLink {
    /// `A-B`, by which `pearlctl link set` names it.
    pub name: String,
    pub a: String,
    pub b: String,
    /// wire (between two VRs, in the fast path) or veth (a host at one end).
    pub kind: String,
    /// up or down.
    pub state: String,
    /// The ports its VR ends are on (their counters are the ports' in `pearlctl stats`).
    pub ports: Vec<String>,
    /// Times `link set` turned its carrier off or on since pearld started.
    pub carrier_changes: u64,
    /// Frames lost on the wire (carrier off, or the far end's ring full) since pearld started.
    pub dropped: u64,
    /// Frames and bytes that crossed it each way since pearld started.
    pub traffic: LinkTraffic,
}

#[derive(Serialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct LinkTraffic {
    pub a_to_b: Direction,
    pub b_to_a: Direction,
}

#[derive(Serialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct Direction {
    pub packets: u64,
    pub bytes: u64,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetList {
    pub nets: Vec<NetReport>,
}
