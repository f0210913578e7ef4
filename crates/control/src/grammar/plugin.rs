//! A plugin VR's `plugin:`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The owner's packet program: exactly one of wasm, process, xdp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginSpec {
    /// A WebAssembly module (binary or text), from the YAML file's directory.
    pub wasm: Option<String>,
    /// A native process: its executable, then its arguments.
    pub process: Option<Vec<String>>,
    /// An XDP program's eBPF object file.
    pub xdp: Option<String>,
    /// The xdp object's program: its ELF section, or its function.
    pub section: Option<String>,
    /// Handed to the program when it starts (not for xdp).
    pub config: Option<serde_json::Value>,
    /// Key-value tables shared with the VR's owner: name (1 to 32 letters, digits, '_', '-')
    /// to most entries (not for xdp).
    pub tables: Option<BTreeMap<String, i64>>,
}
