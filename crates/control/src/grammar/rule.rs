//! A VR's `match:` rules.

use super::forms::MaskedInt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A classifier rule: the frames it matches (at least one field), the VR queue they go to, and
/// for a `code: filter` VR what becomes of them (exactly one of out, slow, drop).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MatchSpec {
    /// Higher wins (default 100), 0 to 2^32-1.
    pub priority: Option<i64>,
    /// The VR queue its frames go to (default 0).
    pub queue: Option<i64>,
    /// A `code: filter` VR's action: out of this VR interface, by name.
    pub out: Option<String>,
    /// With `out`: the next hop's MAC address, aa:bb:cc:dd:ee:ff.
    pub mac: Option<String>,
    /// A `code: filter` VR's action: to the VR's slow path.
    pub slow: Option<bool>,
    /// A `code: filter` VR's action: dropped.
    pub drop: Option<bool>,
    /// The port the frame came in on, by name.
    pub in_port: Option<String>,
    /// Source MAC address.
    pub eth_src: Option<String>,
    /// Destination MAC address.
    pub eth_dst: Option<String>,
    pub ethertype: Option<MaskedInt>,
    pub vlan: Option<MaskedInt>,
    /// Source prefix, ADDRESS/LENGTH.
    pub ip_src: Option<String>,
    /// Destination prefix, ADDRESS/LENGTH.
    pub ip_dst: Option<String>,
    pub ip_proto: Option<MaskedInt>,
    pub l4_src: Option<MaskedInt>,
    pub l4_dst: Option<MaskedInt>,
    /// UDP source port (sets ip_proto 17).
    pub udp_src: Option<MaskedInt>,
    /// UDP destination port (sets ip_proto 17).
    pub udp_dst: Option<MaskedInt>,
    /// TCP source port (sets ip_proto 6).
    pub tcp_src: Option<MaskedInt>,
    /// TCP destination port (sets ip_proto 6).
    pub tcp_dst: Option<MaskedInt>,
    /// The port's `opaque` bytes, as an integer.
    pub opaque: Option<MaskedInt>,
}
