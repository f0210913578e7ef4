//! `plugin:` of a plugin VR: the owner's packet program (a WebAssembly module, a native
//! process, or an XDP program's eBPF object) and the
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
    n.only_keys(&["wasm", "process", "xdp", "section", "config", "tables"])?;
    let wasm = optional(&n, "wasm", |n| wasm_module(n, base_dir))?;
    let process = optional(&n, "process", |n| process_argv(n, base_dir))?;
    let section = optional(&n, "section", |n| n.str().map(str::to_string))?;
    let xdp = optional(&n, "xdp", |n| xdp_object(n, base_dir, section.clone()))?;
    let module = match (wasm, process, xdp) {
        (Some(m), None, None) | (None, Some(m), None) | (None, None, Some(m)) => m,
        (None, None, None) => {
            return Err(n.err("give the program as wasm: <file>, process: [<executable>, <argument>...] or xdp: <object file>"))
        }
        _ => return Err(n.err("a plugin is one of wasm:, process: and xdp:")),
    };
    let is_xdp = matches!(module, PluginModule::Xdp { .. });
    if section.is_some() && !is_xdp {
        return Err(ConfigError::at(
            format!("{}.section", n.path()),
            "names the program of an xdp: object (its ELF section, or its function where a section holds several)",
        ));
    }
    if is_xdp && (n.get("config").is_some() || n.get("tables").is_some()) {
        let key = if n.get("config").is_some() { "config" } else { "tables" };
        return Err(ConfigError::at(
            format!("{}.{key}", n.path()),
            "an XDP program's state is its maps, declared in its object and filled through the API",
        ));
    }
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

/// `[EXECUTABLE, ARGUMENT...]`, the executable relative to the configuration's directory.
fn process_argv(n: Node<'_>, base_dir: &Path) -> Result<PluginModule, ConfigError> {
    let words = n.list()?;
    let mut argv = Vec::with_capacity(words.len());
    for (i, w) in words.iter().enumerate() {
        let child = n.index_path(i);
        argv.push(child.node(w).str()?.to_string());
    }
    let Some(program) = argv.first() else { return Err(n.err("give the executable and its arguments, e.g. [/usr/bin/lab-fwd, --flag]")) };
    let path = base_dir.join(program);
    let first = n.index_path(0);
    let at = first.node(&words[0]);
    let meta = std::fs::metadata(&path).map_err(|e| at.err(format!("{}: {}", path.display(), os_text(&e))))?;
    if !meta.is_file() || std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 == 0 {
        return Err(at.err(format!("{}: not an executable file", path.display())));
    }
    argv[0] = path.to_string_lossy().into_owned();
    Ok(PluginModule::Process { argv })
}

/// An eBPF object file; pearld loads and checks the program in it when it applies the change.
fn xdp_object(n: Node<'_>, base_dir: &Path, section: Option<String>) -> Result<PluginModule, ConfigError> {
    let path = base_dir.join(n.str()?);
    let bytes = std::fs::read(&path).map_err(|e| n.err(format!("{}: {}", path.display(), os_text(&e))))?;
    if !bytes.starts_with(b"\x7fELF") {
        return Err(n.err(format!("{}: not an ELF object (build it with clang -O2 -g -target bpf -c)", path.display())));
    }
    Ok(PluginModule::Xdp { path, bytes: Arc::from(bytes), section })
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
