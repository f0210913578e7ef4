//! A VR's `control_plane:`.

use super::forms::Word;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The routing software run in the VR's namespace: exactly one of frr, bird, command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ControlPlaneSpec {
    pub frr: Option<FrrSpec>,
    pub bird: Option<BirdSpec>,
    /// A program (a `/` in it: from the YAML file's directory, else found in PATH), then its
    /// arguments.
    pub command: Option<Vec<Word>>,
}

/// FRR: zebra and the daemons listed, from one integrated configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrrSpec {
    /// At least one FRR daemon (zebra always runs).
    pub daemons: Option<Vec<String>>,
    /// frr.conf, from the YAML file's directory; its sections' daemons must be listed.
    #[schemars(example = &"red-frr.conf")]
    pub config: String,
}

/// BIRD, from its configuration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BirdSpec {
    /// bird.conf, from the YAML file's directory.
    #[schemars(example = &"red-bird.conf")]
    pub config: String,
}
