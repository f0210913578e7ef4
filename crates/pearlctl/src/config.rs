//! `pearlctl config show|export`: the running desired state (`GET /v1/config`: the file plus
//! every run-time change) as the YAML of a configuration file, which pearld reads back to the
//! same configuration: exported over the file, it makes the file current again.

use crate::client::Client;
use crate::failure::{Failure, DAEMON};
use pearl_control::document_to_yaml;
use std::path::Path;

pub fn show(client: &Client, json: bool) -> Result<(), Failure> {
    let doc = client.get("/v1/config")?;
    if json {
        println!("{doc}");
    } else {
        print!("{}", document_to_yaml(&doc));
    }
    Ok(())
}

/// Writes the desired state to `output` (a new file put in place whole, so a reader, pearld's
/// next start included, never sees half of it), or to stdout.
pub fn export(client: &Client, output: Option<&str>) -> Result<(), Failure> {
    let doc = client.get("/v1/config")?;
    let text = format!("# pearlctl config export: the desired state pearld ran, its run-time changes included\n{}", document_to_yaml(&doc));
    let Some(path) = output else {
        print!("{text}");
        return Ok(());
    };
    let failed = |e: std::io::Error| Failure::new(DAEMON, format!("--output {path}: {e}"));
    let tmp = Path::new(path).with_extension("pearlctl-export.tmp");
    std::fs::write(&tmp, text).map_err(failed)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        failed(e)
    })?;
    eprintln!("wrote {path}");
    Ok(())
}
