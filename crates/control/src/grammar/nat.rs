//! A VR's `nat:`.

use super::forms::NatPorts;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Transport ports the VR reserves on a node address; its TCP and UDP traffic out of the
/// interface holding that address is source-NATed into them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NatSpec {
    /// The node's IPv4 address.
    pub address: String,
    /// The range FIRST-LAST (or one port) of ports 1024-65535.
    pub ports: NatPorts,
    /// The outside interface (default: the one on the address's subnet).
    pub interface: Option<String>,
}
