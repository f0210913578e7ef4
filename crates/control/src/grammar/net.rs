//! `nets:`: virtual networks, each VRs, hosts and the links between their interfaces, made and
//! removed as one (also the whole of a net file, `pearlctl net apply -f`).

use super::impair::ImpairSpec;
use super::vr::VrSpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A virtual network on this node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetSpec {
    /// Its name, 1 to 8 letters, digits, '-' or '_' (a net file names it here; under `nets:`
    /// the key does, and this must agree).
    pub name: Option<String>,
    /// Its VRs, each a VR entry as under `vrs:`, whose interfaces on a link need no `port`.
    #[schemars(with = "Option<Vec<NetVrSpec>>")]
    pub vrs: Option<Vec<Value>>,
    /// Wires between two interfaces, of VRs or hosts.
    pub links: Option<Vec<LinkSpec>>,
    /// End systems: plain namespaces with kernel defaults.
    pub hosts: Option<Vec<HostSpec>>,
}

/// A VR of a net: an entry as under `vrs:`, and on a cluster the node it runs on.
#[derive(JsonSchema)]
#[allow(
    dead_code,
    reason = "only its schema is used (the reference, the OpenAPI document): a net's VR entries stay JSON until read as entries of `vrs:`"
)]
struct NetVrSpec {
    #[serde(flatten)]
    vr: VrSpec,
    /// On a cluster (`pearld --cluster URL --node NAME`): a node's name, or `auto` (the
    /// default there) for the cluster's scheduler to place it by capacity, and again on a
    /// live node when its node dies. A link between VRs on two nodes is a VXLAN tunnel.
    /// Refused on a node in no cluster.
    node: Option<String>,
}

/// A wire between two interfaces, `NODE/INTERFACE` each (`red/eth2`, `h1/eth0`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    /// What the wire does to packets, each way.
    pub impair: Option<ImpairSpec>,
    /// The MTU of both ends, 68 to 9,000.
    pub mtu: Option<i64>,
    /// Carrier at both ends (default up).
    pub state: Option<LinkStateSpec>,
}

choice!(
    /// A link's carrier.
    LinkStateSpec { Up = "up", Down = "down" }
);

/// A lab's end system: a namespace of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// 1 to 12 letters, digits, '-' or '_', unique in the net.
    pub name: String,
    pub interfaces: Option<Vec<HostInterfaceSpec>>,
    pub routes: Option<Vec<HostRouteSpec>>,
    /// A shell command started in the host once it is up (`iperf3 -s`); it ends with the host.
    pub command: Option<String>,
}

/// A host's interface, one end of a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostInterfaceSpec {
    /// 1 to 15 letters, digits, '-' or '_', unique in the host.
    pub name: String,
    /// Its MAC address, aa:bb:cc:dd:ee:ff (default: the kernel's).
    pub mac: Option<String>,
    /// ADDRESS/LENGTH each.
    pub addresses: Option<Vec<String>>,
}

/// A host's route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostRouteSpec {
    /// ADDRESS/LENGTH, or `default`.
    pub to: String,
    pub via: String,
}
