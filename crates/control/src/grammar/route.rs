//! A VR's `routes:` and `neighbors:`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A static route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// The destination, ADDRESS/LENGTH with no host bits set, of a family the VR's code routes.
    #[schemars(example = &"198.51.100.0/24")]
    pub prefix: String,
    /// The next hop, an address on one of the VR's interface subnets.
    #[schemars(example = &"10.2.0.2")]
    pub via: String,
}

/// A static neighbour (ARP or NDP entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NeighborSpec {
    /// Its address, on a subnet of `interface`.
    #[schemars(example = &"10.2.0.2")]
    pub ip: String,
    /// Its MAC address, aa:bb:cc:dd:ee:ff.
    #[schemars(example = &"02:aa:00:00:00:02")]
    pub mac: String,
    /// The VR interface it is reached through, by name.
    pub interface: String,
}
