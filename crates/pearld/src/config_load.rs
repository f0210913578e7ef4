//! From the configuration file and the stored state to what a start runs: the file validated
//! first (a bad file is refused even when a stored state exists), then the stored state taken
//! or left by the rule of `file_vs_state`. `pearld --check` is the first half alone.

use crate::desired::{self, Desired};
use crate::file_vs_state::{self, Start, Winner};
use crate::{ports, store};
use pearl_control::{config_from_document, document_from_yaml, Config, ConfigError, Driver};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Why a start (or `pearld --check`) refused the file or the stored state.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// PATH: ERROR (the file was not read)
    #[error("{path}: {error}")]
    Read { path: String, error: std::io::Error },
    /// PATH: FIELD: what is wrong (the file is not a valid configuration)
    #[error("{path}: {error}")]
    Invalid { path: String, error: ConfigError },
    /// --state DIR: ERROR (the stored state was not opened)
    #[error("--state {state_dir}: {error}")]
    Store { state_dir: String, error: std::io::Error },
    /// PATH changed since the stored state was saved, which holds run-time changes; they differ
    /// in: … (neither `--state-wins` nor `--config-wins` was given: `file_vs_state`)
    #[error("{0}")]
    Choice(String),
    /// --state-wins: the stored state in PATH is no longer valid: FIELD: what is wrong
    #[error("--state-wins: the stored state in {state_path} is no longer valid: {error}")]
    StaleState { state_path: String, error: ConfigError },
    /// PATH: nets.NAME: ERROR (a host of the file's nets was not made)
    #[error("{path}: {error}")]
    Hosts { path: String, error: crate::nets::MissingHostsError },
}

/// A configuration file read and validated as a start validates it.
struct File {
    text: String,
    doc: Value,
    base_dir: PathBuf,
    config: Config,
}

fn read(path: &str) -> Result<File, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|error| LoadError::Read { path: path.to_string(), error })?;
    let invalid = |error| LoadError::Invalid { path: path.to_string(), error };
    let base_dir = Path::new(path).parent().map(Path::to_path_buf).unwrap_or_default();
    let doc = document_from_yaml(&text).map_err(invalid)?;
    let doc = crate::nets::expand_file_nets(doc, &base_dir).map_err(invalid)?;
    let config = config_from_document(&doc, &base_dir).map_err(invalid)?;
    ports::check(&config).map_err(invalid)?;
    Ok(File { text, doc, base_dir, config })
}

/// `pearld --check`: the one-line summary of a valid file, or the start's refusal.
pub fn check(path: &str) -> Result<String, LoadError> {
    let f = read(path)?;
    let invalid = |error| LoadError::Invalid { path: path.to_string(), error };
    // The veths of nets' hosts are made at start, not found.
    let made: Vec<String> = pearl_control::net_plans(&f.doc)
        .map_err(invalid)?
        .iter()
        .flat_map(|n| n.ports.iter().filter_map(|p| p["name"].as_str().map(String::from)))
        .collect();
    interfaces_exist(&f.config, &made).map_err(invalid)?;
    let c = &f.config;
    Ok(format!("{path}: valid: {} port(s), {} VR(s), {} worker(s)", c.ports.len(), c.vrs.len(), c.workers))
}

/// The configuration to start and the desired state it comes from, the file's or the stored.
/// With `forget_nets` (a cluster node whose lease lapsed: what it ran may run elsewhere now),
/// the stored nets, their hosts and their tunnel ports are dropped before anything starts; the
/// cluster agent lands again what is still the node's.
pub fn load(path: &str, state_dir: &str, winner: Winner, forget_nets: bool) -> Result<(Config, Desired), LoadError> {
    let File { text, doc: file_doc, base_dir, mut config } = read(path)?;
    let (mut store, stored) = store::Store::open(Path::new(state_dir), Path::new(path), &text, &file_doc)
        .map_err(|error| LoadError::Store { state_dir: state_dir.to_string(), error })?;
    let state_path = store.path().display().to_string();
    let start = match &stored {
        Some(s) => file_vs_state::choose(&file_doc, s, winner, path, &state_path).map_err(LoadError::Choice)?,
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
            Err(error) if stale => return Err(LoadError::StaleState { state_path, error }),
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
        let invalid = |error| LoadError::Invalid { path: path.to_string(), error };
        doc = crate::nets::without_nets(&doc).map_err(invalid)?;
        config = config_from_document(&doc, &base_dir).map_err(invalid)?;
        tracing::info!("cluster: this node's lease lapsed while it was away: starting without the cluster's nets");
    }
    desired::pin_ids(&mut doc, &config, 0..config.vrs.len());
    crate::nets::make_missing_hosts(&doc).map_err(|error| LoadError::Hosts { path: path.to_string(), error })?;
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
