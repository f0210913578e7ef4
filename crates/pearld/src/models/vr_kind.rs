//! A VR's kind as the API spells it.

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum VrKind {
    Fast,
    Kernel,
    Shared,
    Plugin,
}

impl From<pearl_control::VrKind> for VrKind {
    fn from(kind: pearl_control::VrKind) -> VrKind {
        match kind {
            pearl_control::VrKind::Fast => VrKind::Fast,
            pearl_control::VrKind::Kernel => VrKind::Kernel,
            pearl_control::VrKind::Shared => VrKind::Shared,
            pearl_control::VrKind::Plugin => VrKind::Plugin,
        }
    }
}
