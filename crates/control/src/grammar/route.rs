//! A VR's `routes:` and `neighbors:`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A static route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// The destination, ADDRESS/LENGTH with no host bits set, of a family the VR's code routes.
    pub prefix: String,
    /// The next hop, an address on one of the VR's interface subnets.
    pub via: String,
}

/// A static neighbour (ARP or NDP entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NeighborSpec {
    /// Its address, on a subnet of `interface`.
    pub ip: String,
    /// Its MAC address, aa:bb:cc:dd:ee:ff.
    pub mac: String,
    /// The VR interface it is reached through, by name.
    pub interface: String,
}
