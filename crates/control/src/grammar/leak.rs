//! A VR's `leak:`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Prefixes a fast VR imports from another fast VR (admin only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeakSpec {
    /// The VR whose routes forward them, by name.
    pub from: String,
    /// At least one, ADDRESS/LENGTH with no host bits set.
    pub prefixes: Option<Vec<String>>,
}
