//! `plugin:` of a plugin VR: the owner's packet program (a WebAssembly module) and the
//! configuration handed to it when it starts. The module is read here, once, so that what
//! the node runs is what the configuration was checked against. pearld compiles it when it
//! applies the configuration (`pearl-plugin`), refusing a module that does not compile.
//! `tables: {NAME: MAX_ENTRIES}` declares the key-value tables the program shares with the
//! VR's owner (the API's `/v1/vrs/{name}/tables`).

use crate::control_plane::os_text;
use crate::error::ConfigError;
use crate::model::{PluginConfig, PluginModule, MAX_TABLE_ENTRIES};
use crate::node::{optional, Node};
use crate::tree::to_json;
use std::path::Path;
use std::sync::Arc;

/// The four bytes every WebAssembly binary starts with.
const WASM_MAGIC: &[u8] = b"\0asm";

pub(crate) fn parse_plugin(n: Node<'_>, base_dir: &Path) -> Result<PluginConfig, ConfigError> {
    n.only_keys(&["wasm", "process", "config", "tables"])?;
    optional(&n, "process", |n| Err::<(), _>(n.err("process plugins are not yet supported; give a WebAssembly module as wasm:")))?;
    let module = match optional(&n, "wasm", |n| wasm_module(n, base_dir))? {
        Some(m) => m,
        None => return Err(n.err("give the program as wasm: <file>")),
    };
    let config = match n.get("config") {
        Some(y) => to_json(y, &format!("{}.config", n.path()))?,
        None => serde_json::Value::Null,
    };
    let tables = optional(&n, "tables", parse_tables)?.unwrap_or_default();
    Ok(PluginConfig { module, config, tables })
}

/// `{NAME: MAX_ENTRIES, ...}`; a name is what the API's paths carry: letters, digits, `_`, `-`.
fn parse_tables(n: Node<'_>) -> Result<Vec<(String, usize)>, ConfigError> {
    let yaml_rust2::Yaml::Hash(h) = n.yaml else { return Err(n.err("expected a mapping of table names to their most entries")) };
    let mut tables = Vec::new();
    for (k, v) in h {
        let name = k.as_str().ok_or_else(|| n.err("table names are strings"))?;
        let child = n.child_path(name);
        let at = child.node(v);
        if name.is_empty() || name.len() > 32 || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(at.err("a table name is 1 to 32 letters, digits, '_' or '-'"));
        }
        let max = at.uint(MAX_TABLE_ENTRIES)?;
        if max == 0 {
            return Err(at.err("a table holds at least one entry"));
        }
        tables.push((name.to_string(), max as usize));
    }
    tables.sort();
    Ok(tables)
}

fn wasm_module(n: Node<'_>, base_dir: &Path) -> Result<PluginModule, ConfigError> {
    let path = base_dir.join(n.str()?);
    let refuse = |why: String| n.err(format!("{}: {why}", path.display()));
    let bytes = std::fs::read(&path).map_err(|e| refuse(os_text(&e)))?;
    // The text format too: small programs written by hand, tests.
    if !bytes.starts_with(WASM_MAGIC) && std::str::from_utf8(&bytes).is_err() {
        return Err(refuse("neither a WebAssembly binary (\\0asm) nor WebAssembly text".to_string()));
    }
    Ok(PluginModule::Wasm { path, bytes: Arc::from(bytes) })
}
