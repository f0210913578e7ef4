//! The whole document.

use super::net::NetSpec;
use super::node::{ApiSpec, NodeSpec};
use super::port::PortSpec;
use super::vr::VrSpec;
use core::fmt;
use schemars::JsonSchema;
use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// A PEARL node's configuration: the YAML file, and the document the API edits.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Document {
    /// Worker threads of the data plane, 1 to 64 (default 1).
    pub workers: Option<i64>,
    pub node: Option<NodeSpec>,
    /// The host interfaces the node drives, which VR interfaces attach to.
    pub ports: Option<Vec<PortSpec>>,
    /// The VRs.
    #[schemars(with = "Option<Vec<VrSpec>>")]
    pub vrs: Option<VrEntries>,
    pub api: Option<ApiSpec>,
    /// Virtual networks, by name.
    pub nets: Option<std::collections::BTreeMap<String, NetSpec>>,
}

/// `vrs:` as the document is read: a list, whose entries are read one by one afterwards
/// ([`VrSpec`]), so that those of VRs a change left as they were are not read at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VrEntries;

impl<'de> Deserialize<'de> for VrEntries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = VrEntries;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<VrEntries, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(VrEntries)
            }
        }
        d.deserialize_seq(V)
    }
}
