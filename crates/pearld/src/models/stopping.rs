//! What `POST /v1/node/stop` answers before pearld removes everything and exits.

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stopping {
    /// The VRs being removed.
    pub vrs: usize,
}
