//! What a DELETE answers: what is gone (a VR's name, a route, a rule, a table entry).

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deleted {
    pub deleted: String,
}
