//! A VR's `interfaces:`.

use super::impair::ImpairSpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A VR interface: the VR's side of a port, with its own MAC and addresses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InterfaceSpec {
    /// 1 to 15 letters, digits, '-' or '_', unique in the VR.
    #[schemars(example = &"eth0")]
    pub name: String,
    /// The port it attaches to, by name.
    #[schemars(example = &"p0")]
    pub port: String,
    /// Its unicast MAC address, aa:bb:cc:dd:ee:ff, unique in the node.
    #[schemars(example = &"02:00:00:00:01:00")]
    pub mac: String,
    /// Its addresses, ADDRESS/LENGTH (e.g. 10.1.0.1/24).
    pub addresses: Option<Vec<String>>,
    /// Its MTU, up to 9,000 (at least 68, or 1,280 with an IPv6 address).
    #[schemars(example = &1500)]
    pub mtu: Option<i64>,
    /// Unicast reverse-path filtering (default off).
    pub urpf: Option<UrpfSpec>,
    /// What the link out of it does to packets.
    pub impair: Option<ImpairSpec>,
}

choice!(
    /// Unicast reverse-path filtering of a VR interface.
    UrpfSpec { Strict = "strict", Loose = "loose", Off = "off" }
);
