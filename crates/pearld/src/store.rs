//! Durable desired state: the configuration document with every change made at run time,
//! written ahead of applying it (temporary file, fsync, atomic rename, fsync of the directory),
//! so that a pearld killed at any moment comes back with the last state it accepted.
//!
//! The stored document remembers which configuration file it grew from (path and a hash of
//! its text): started again on the same file, pearld restores the stored state; on an edited
//! file, the file wins and says so.

use serde_json::{json, Value};
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct Store {
    path: PathBuf,
    config_path: String,
    config_hash: String,
}

impl Store {
    /// Opens the store of configuration file `config_path` (text `config_text`) under
    /// `state_dir`; returns the stored document if it grew from this very text.
    pub fn open(state_dir: &Path, config_path: &Path, config_text: &str) -> io::Result<(Store, Option<Value>)> {
        fs::create_dir_all(state_dir).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", state_dir.display())))?;
        let abs = fs::canonicalize(config_path).unwrap_or_else(|_| config_path.to_path_buf());
        let config_path = abs.to_string_lossy().into_owned();
        let path = state_dir.join(format!("desired-{:016x}.json", fnv1a(config_path.as_bytes())));
        let store = Store { path, config_path, config_hash: format!("{:016x}", fnv1a(config_text.as_bytes())) };
        let saved = match fs::read(&store.path) {
            Ok(bytes) => serde_json::from_slice::<Value>(&bytes).ok(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", store.path.display()))),
        };
        let restored = match saved {
            Some(v) if v["config_hash"] == store.config_hash.as_str() => Some(v["document"].clone()),
            Some(_) => {
                tracing::warn!("{} changed since the stored state was saved; starting from the file", store.config_path);
                None
            }
            None => None,
        };
        Ok((store, restored))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores `doc` durably before the caller acts on it.
    pub fn save(&self, doc: &Value) -> io::Result<()> {
        let tmp = self.path.with_extension("json.tmp");
        let at = |e: io::Error, p: &Path| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
        let f = File::create(&tmp).map_err(|e| at(e, &tmp))?;
        // Written as it is serialized: with thousands of VRs the document is megabytes, and a
        // copy of it (or its text) per change would be most of a change's cost.
        let mut w = BufWriter::new(f);
        let write = |w: &mut BufWriter<File>| -> io::Result<()> {
            write!(w, "{{\"config_path\":{},\"config_hash\":{},\"document\":", json!(self.config_path), json!(self.config_hash))?;
            serde_json::to_writer(&mut *w, doc)?;
            w.write_all(b"}\n")?;
            w.flush()
        };
        write(&mut w).map_err(|e| at(e, &tmp))?;
        w.get_ref().sync_all().map_err(|e| at(e, &tmp))?;
        fs::rename(&tmp, &self.path).map_err(|e| at(e, &self.path))?;
        if let Some(dir) = self.path.parent() {
            File::open(dir).and_then(|d| d.sync_all()).map_err(|e| at(e, dir))?;
        }
        Ok(())
    }
}

/// FNV-1a: names and fingerprints, not security.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_document_comes_back_only_for_the_same_file_text() {
        let dir = std::env::temp_dir().join(format!("pearl-store-test-{}", std::process::id()));
        let cfg = dir.join("c.yaml");
        fs::create_dir_all(&dir).unwrap();
        fs::write(&cfg, "vrs: []").unwrap();
        let (store, none) = Store::open(&dir, &cfg, "vrs: []").unwrap();
        assert!(none.is_none());
        store.save(&json!({"vrs": [{"name": "red"}]})).unwrap();
        let (_, back) = Store::open(&dir, &cfg, "vrs: []").unwrap();
        assert_eq!(back.unwrap()["vrs"][0]["name"], "red");
        let (_, edited) = Store::open(&dir, &cfg, "vrs: [] # edited").unwrap();
        assert!(edited.is_none(), "an edited file wins over the stored state");
        fs::remove_dir_all(&dir).unwrap();
    }
}
