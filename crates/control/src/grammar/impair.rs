//! An interface's `impair:`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the link out of an interface does to packets, as an emulated link would; each at least
/// 0, and a field left out does nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImpairSpec {
    /// Added to every packet's time on the link, up to 10,000 ms.
    pub delay_ms: Option<f64>,
    /// The delay varies uniformly within ± this, up to 10,000 ms.
    pub jitter_ms: Option<f64>,
    /// Chance that a packet is lost, 0 to 100.
    pub loss_percent: Option<f64>,
    /// Chance that a packet is sent twice, 0 to 100.
    pub duplicate_percent: Option<f64>,
    /// The link's rate in Mbit/s, above 0 (default: as fast as the port).
    pub rate_mbps: Option<f64>,
}
