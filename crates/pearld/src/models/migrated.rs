//! What `POST /v1/vrs/{name}/migrate` answers: the VR as it is now, and how the move went.

use super::vr::Vr;
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Migrated {
    pub vr: Vr,
    pub from: String,
    pub to: String,
    /// from the request's validation to the data plane's switch, tables included
    #[schemars(range(min = 0))]
    pub duration_ms: f64,
}
