//! From the configuration file and the stored state to what a start runs: the file validated
//! first (a bad file is refused even when a stored state exists), then the stored state taken
//! or left by the rule of `file_vs_state`. `pearld --check` is the first half alone.

use crate::desired::{self, Desired};
use crate::file_vs_state::{self, Start, Winner};
use crate::{ports, store};
use pearl_control::{config_from_document, document_from_yaml, Config, ConfigError, Driver};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A configuration file read and validated as a start validates it.
struct File {
    text: String,
    doc: Value,
    base_dir: PathBuf,
    config: Config,
}

fn read(path: &str) -> Result<File, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let base_dir = Path::new(path).parent().map(Path::to_path_buf).unwrap_or_default();
    let doc = document_from_yaml(&text).map_err(|e| format!("{path}: {e}"))?;
    let doc = crate::nets::expand_file_nets(doc, &base_dir).map_err(|e| format!("{path}: {e}"))?;
    let config = config_from_document(&doc, &base_dir).map_err(|e| format!("{path}: {e}"))?;
    ports::check(&config).map_err(|e| format!("{path}: {e}"))?;
    Ok(File { text, doc, base_dir, config })
}

/// `pearld --check`: the one-line summary of a valid file, or the start's refusal.
pub fn check(path: &str) -> Result<String, String> {
    let f = read(path)?;
    // The veths of nets' hosts are made at start, not found.
    let made: Vec<String> = pearl_control::net_plans(&f.doc)
        .map_err(|e| format!("{path}: {e}"))?
        .iter()
        .flat_map(|n| n.ports.iter().filter_map(|p| p["name"].as_str().map(String::from)))
        .collect();
    interfaces_exist(&f.config, &made).map_err(|e| format!("{path}: {e}"))?;
    let c = &f.config;
    Ok(format!("{path}: valid: {} port(s), {} VR(s), {} worker(s)", c.ports.len(), c.vrs.len(), c.workers))
}

/// The configuration to start and the desired state it comes from, the file's or the stored.
/// With `forget_nets` (a cluster node whose lease lapsed: what it ran may run elsewhere now),
/// the stored nets, their hosts and their tunnel ports are dropped before anything starts; the
/// cluster agent lands again what is still the node's.
pub fn load(path: &str, state_dir: &str, winner: Winner, forget_nets: bool) -> Result<(Config, Desired), String> {
    let File { text, doc: file_doc, base_dir, mut config } = read(path)?;
    let (mut store, stored) =
        store::Store::open(Path::new(state_dir), Path::new(path), &text, &file_doc).map_err(|e| format!("--state {state_dir}: {e}"))?;
    let state_path = store.path().display().to_string();
    let start = match &stored {
        Some(s) => file_vs_state::choose(&file_doc, s, winner, path, &state_path)?,
        None => Start::File,
    };
    let mut doc = match (start, stored) {
        (Start::State { stale }, Some(s)) => match config_from_document(&s.doc, &base_dir) {
            Ok(c) => {
                tracing::info!("restoring the desired state stored in {state_path}");
                if stale {
                    store.keep_over_stale_file();
                }
                config = c;
                s.doc
            }
            Err(e) if stale => return Err(format!("--state-wins: the stored state in {state_path} is no longer valid: {e}")),
            Err(e) => {
                tracing::warn!("the stored state in {state_path} is no longer valid ({e}); starting from the file");
                store.start_from_file();
                file_doc
            }
        },
        _ => {
            store.start_from_file();
            file_doc
        }
    };
    if forget_nets && doc.get("nets").is_some() {
        doc = crate::nets::without_nets(&doc).map_err(|e| format!("{path}: {e}"))?;
        config = config_from_document(&doc, &base_dir).map_err(|e| format!("{path}: {e}"))?;
        tracing::info!("cluster: this node's lease lapsed while it was away: starting without the cluster's nets");
    }
    desired::pin_ids(&mut doc, &config, 0..config.vrs.len());
    crate::nets::make_missing_hosts(&doc).map_err(|e| format!("{path}: {e}"))?;
    Ok((config, Desired::new(doc, base_dir, store)))
}

/// The start's refusal of a port whose interface does not exist (its AF_PACKET fallback is the
/// last to try it), found by looking the interface up only.
fn interfaces_exist(config: &Config, made: &[String]) -> Result<(), ConfigError> {
    for (port, p) in config.ports.iter().enumerate() {
        if !matches!(p.driver, Driver::AfXdp | Driver::AfPacket) || made.contains(&p.name) {
            continue;
        }
        let Ok(name) = std::ffi::CString::new(p.interface.as_str()) else { continue };
        // SAFETY: a valid C string for the duration of the call.
        if unsafe { libc::if_nametoindex(name.as_ptr()) } == 0 {
            let e = std::io::Error::last_os_error();
            return Err(ConfigError::at(format!("ports[{port}]"), format!("af_packet {}: if_nametoindex: {e}", p.interface)));
        }
    }
    Ok(())
}
