//! `plugin:` of a plugin VR: the owner's packet program (a WebAssembly module, a native
//! process, or an XDP program's eBPF object) and the
//! configuration handed to it when it starts. The module is read here, once, so that what
//! the node runs is what the configuration was checked against. pearld compiles it when it
//! applies the configuration (`pearl-plugin`), refusing a module that does not compile.
//! `tables: {NAME: MAX_ENTRIES}` declares the key-value tables the program shares with the
//! VR's owner (the API's `/v1/vrs/{name}/tables`).

use crate::at::At;
use crate::control_plane::os_text;
use crate::error::ConfigError;
use crate::fields::optional;
use crate::grammar::PluginSpec;
use crate::model::{PluginConfig, PluginModule, MAX_TABLE_ENTRIES};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The four bytes every WebAssembly binary starts with.
const WASM_MAGIC: &[u8] = b"\0asm";

pub(crate) fn parse_plugin(p: &PluginSpec, at: At<'_>, base_dir: &Path) -> Result<PluginConfig, ConfigError> {
    let wasm = optional(p.wasm.as_deref(), at, "wasm", |w, at| wasm_module(w, at, base_dir))?;
    let process = optional(p.process.as_deref(), at, "process", |argv, at| process_argv(argv, at, base_dir))?;
    let xdp = optional(p.xdp.as_deref(), at, "xdp", |x, at| xdp_object(x, at, base_dir, p.section.clone()))?;
    let module = match (wasm, process, xdp) {
        (Some(m), None, None) | (None, Some(m), None) | (None, None, Some(m)) => m,
        (None, None, None) => {
            return Err(at.err("give the program as wasm: <file>, process: [<executable>, <argument>...] or xdp: <object file>"))
        }
        _ => return Err(at.err("a plugin is one of wasm:, process: and xdp:")),
    };
    let is_xdp = matches!(module, PluginModule::Xdp { .. });
    if p.section.is_some() && !is_xdp {
        return Err(at
            .key("section")
            .err("names the program of an xdp: object (its ELF section, or its function where a section holds several)"));
    }
    if is_xdp && (p.config.is_some() || p.tables.is_some()) {
        let key = if p.config.is_some() { "config" } else { "tables" };
        return Err(at.key(key).err("an XDP program's state is its maps, declared in its object and filled through the API"));
    }
    let config = p.config.clone().unwrap_or(serde_json::Value::Null);
    let tables = optional(p.tables.as_ref(), at, "tables", parse_tables)?.unwrap_or_default();
    Ok(PluginConfig { module, config, tables })
}

/// `{NAME: MAX_ENTRIES, ...}`; a name is what the API's paths carry: letters, digits, `_`, `-`.
fn parse_tables(t: &BTreeMap<String, i64>, at: At<'_>) -> Result<Vec<(String, usize)>, ConfigError> {
    let mut tables = Vec::new();
    for (name, &max) in t {
        let at = at.key(name);
        if name.is_empty() || name.len() > 32 || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(at.err("a table name is 1 to 32 letters, digits, '_' or '-'"));
        }
        let max = crate::fields::uint(max, MAX_TABLE_ENTRIES, at)?;
        if max == 0 {
            return Err(at.err("a table holds at least one entry"));
        }
        tables.push((name.clone(), max as usize));
    }
    Ok(tables)
}

/// `[EXECUTABLE, ARGUMENT...]`, the executable relative to the configuration's directory.
fn process_argv(words: &[String], at: At<'_>, base_dir: &Path) -> Result<PluginModule, ConfigError> {
    let mut argv = words.to_vec();
    let Some(program) = argv.first() else { return Err(at.err("give the executable and its arguments, e.g. [/usr/bin/lab-fwd, --flag]")) };
    let path = base_dir.join(program);
    let first = at.index(0);
    let meta = std::fs::metadata(&path).map_err(|e| first.err(format!("{}: {}", path.display(), os_text(&e))))?;
    if !meta.is_file() || std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 == 0 {
        return Err(first.err(format!("{}: not an executable file", path.display())));
    }
    argv[0] = path.to_string_lossy().into_owned();
    Ok(PluginModule::Process { argv })
}

/// An eBPF object file; pearld loads and checks the program in it when it applies the change.
fn xdp_object(file: &str, at: At<'_>, base_dir: &Path, section: Option<String>) -> Result<PluginModule, ConfigError> {
    let path = base_dir.join(file);
    let bytes = std::fs::read(&path).map_err(|e| at.err(format!("{}: {}", path.display(), os_text(&e))))?;
    if !bytes.starts_with(b"\x7fELF") {
        return Err(at.err(format!("{}: not an ELF object (build it with clang -O2 -g -target bpf -c)", path.display())));
    }
    Ok(PluginModule::Xdp { path, bytes: Arc::from(bytes), section })
}

fn wasm_module(file: &str, at: At<'_>, base_dir: &Path) -> Result<PluginModule, ConfigError> {
    let path = base_dir.join(file);
    let refuse = |why: String| at.err(format!("{}: {why}", path.display()));
    let bytes = std::fs::read(&path).map_err(|e| refuse(os_text(&e)))?;
    // The text format too: small programs written by hand, tests.
    if !bytes.starts_with(WASM_MAGIC) && std::str::from_utf8(&bytes).is_err() {
        return Err(refuse("neither a WebAssembly binary (\\0asm) nor WebAssembly text".to_string()));
    }
    Ok(PluginModule::Wasm { path, bytes: Arc::from(bytes) })
}
