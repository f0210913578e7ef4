//! `node:` and `api:`.

use super::resources::CapacitySpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the node offers VRs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// VRs the fast path may hold, 0 to 65,536 (default: as many as there are).
    pub fast_slots: Option<i64>,
    /// Amounts stated instead of the measured ones.
    pub capacity: Option<CapacitySpec>,
    /// Hand fast VRs' established TCP flows to the kernel's tc layer (default true).
    pub flow_offload: Option<bool>,
}

/// Who may use the API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiSpec {
    /// The token that may do everything: 16 to 256 letters, digits or - . _ ~ + / =.
    pub admin_token: Option<String>,
    /// Requests per second each VR's token may make, 1 to 1,000,000 (default 100).
    pub owner_requests_per_second: Option<i64>,
    /// The TCP API's certificate and key.
    pub tls: Option<TlsSpec>,
}

/// PEM files, from the YAML file's directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsSpec {
    /// The certificate chain.
    pub certificate: String,
    /// The private key of its first certificate.
    pub key: String,
}
