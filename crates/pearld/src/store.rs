//! Durable desired state: the configuration document with every change made at run time,
//! written ahead of applying it, so that a pearld killed at any moment comes back with the last
//! state it accepted.
//!
//! The document is a snapshot (temporary file, fsync, atomic rename, fsync of the directory)
//! and a journal of the VR entries put or deleted since, one line each, appended and synced.
//! With thousands of VRs the snapshot is megabytes, and writing it per change was most of what
//! a change cost; a change to one VR appends one line. The journal is folded into a new
//! snapshot once it is as long as the snapshot, so a change costs O(1) amortised.
//!
//! The stored document remembers which configuration file it grew from (path and a hash of
//! its text): started again on the same file, pearld restores the stored state; on an edited
//! file, the file wins and says so.

use serde_json::{json, Value};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct Store {
    path: PathBuf,
    journal: PathBuf,
    config_path: String,
    config_hash: String,
    /// The journal, open for appending since its last line was synced.
    appending: Option<File>,
    journal_bytes: u64,
    snapshot_bytes: u64,
    /// Numbers the changes: the snapshot names the last it holds and each journal line its
    /// own, so that lines a snapshot holds already (pearld killed between writing it and
    /// emptying the journal) are not applied twice.
    generation: u64,
}

/// A change to the document that touches one VR's entry and nothing else.
pub enum VrChange<'a> {
    /// This entry replaces the VR of its name, or is appended if there is none.
    Put(&'a Value),
    /// The VR of this name is gone.
    Delete(&'a str),
}

/// The name the files of `config_path`'s store start with, and the path it is known by.
fn stem_of(config_path: &Path) -> (String, String) {
    let abs = fs::canonicalize(config_path).unwrap_or_else(|_| config_path.to_path_buf());
    let config_path = abs.to_string_lossy().into_owned();
    (format!("desired-{:016x}", fnv1a(config_path.as_bytes())), config_path)
}

/// The lock file of `config_path`'s store under `state_dir`: whoever holds it writes the store.
pub fn lock_path(state_dir: &Path, config_path: &Path) -> std::path::PathBuf {
    state_dir.join(format!("{}.lock", stem_of(config_path).0))
}

impl Store {
    /// Opens the store of configuration file `config_path` (text `config_text`) under
    /// `state_dir`; returns the stored document if it grew from this very text.
    pub fn open(state_dir: &Path, config_path: &Path, config_text: &str) -> io::Result<(Store, Option<Value>)> {
        fs::create_dir_all(state_dir).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", state_dir.display())))?;
        let (stem, config_path) = stem_of(config_path);
        let mut store = Store {
            path: state_dir.join(format!("{stem}.json")),
            journal: state_dir.join(format!("{stem}.journal")),
            config_path,
            config_hash: format!("{:016x}", fnv1a(config_text.as_bytes())),
            appending: None,
            journal_bytes: 0,
            snapshot_bytes: 0,
            generation: 0,
        };
        let saved = match fs::read(&store.path) {
            Ok(bytes) => serde_json::from_slice::<Value>(&bytes).ok(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", store.path.display()))),
        };
        let restored = match saved {
            Some(mut v) if v["config_hash"] == store.config_hash.as_str() => {
                store.generation = v["generation"].as_u64().unwrap_or(0);
                let mut doc = v["document"].take();
                store.replay(&mut doc)?;
                Some(doc)
            }
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

    /// Stores `doc` whole, durably, before the caller acts on it; the journal starts empty.
    pub fn save(&mut self, doc: &Value) -> io::Result<()> {
        let tmp = self.path.with_extension("json.tmp");
        let f = File::create(&tmp).map_err(|e| at(e, &tmp))?;
        // Written as it is serialized: a copy of a document of thousands of VRs (or of its
        // text) would cost as much as the writing.
        let mut w = Counted { inner: BufWriter::new(f), bytes: 0 };
        let write = |w: &mut Counted<BufWriter<File>>| -> io::Result<()> {
            write!(
                w,
                "{{\"config_path\":{},\"config_hash\":{},\"generation\":{},\"document\":",
                json!(self.config_path),
                json!(self.config_hash),
                self.generation
            )?;
            serde_json::to_writer(&mut *w, doc)?;
            w.write_all(b"}\n")?;
            w.flush()
        };
        write(&mut w).map_err(|e| at(e, &tmp))?;
        w.inner.get_ref().sync_all().map_err(|e| at(e, &tmp))?;
        fs::rename(&tmp, &self.path).map_err(|e| at(e, &self.path))?;
        sync_dir(&self.path)?;
        self.snapshot_bytes = w.bytes;
        // The snapshot holds every line of the journal now (their generations say so if the
        // journal outlives this).
        self.appending = None;
        match fs::remove_file(&self.journal) {
            Ok(()) => sync_dir(&self.journal)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(at(e, &self.journal)),
        }
        self.journal_bytes = 0;
        Ok(())
    }

    /// Stores `doc`, which `change` made of the document stored last, durably, before the
    /// caller acts on it: one line of the journal, or a new snapshot once the journal is as long
    /// as the snapshot.
    pub fn record(&mut self, doc: &Value, change: VrChange<'_>) -> io::Result<()> {
        self.generation += 1;
        let line = match change {
            VrChange::Put(entry) => json!({"generation": self.generation, "put": entry}),
            VrChange::Delete(name) => json!({"generation": self.generation, "delete": name}),
        };
        let mut text = serde_json::to_vec(&line)?;
        text.push(b'\n');
        if self.journal_bytes + text.len() as u64 > self.snapshot_bytes.max(MIN_JOURNAL_BYTES) {
            return self.save(doc);
        }
        if self.appending.is_none() {
            let f = OpenOptions::new().create(true).append(true).open(&self.journal).map_err(|e| at(e, &self.journal))?;
            // The journal's name must survive a crash as well as its lines.
            sync_dir(&self.journal)?;
            self.appending = Some(f);
        }
        let f = self.appending.as_mut().expect("opened above");
        let written = f.write_all(&text).and_then(|()| f.sync_data());
        if let Err(e) = written {
            // A line half written would hide the lines after it: the whole document is stored
            // instead, which empties the journal.
            self.appending = None;
            return self.save(doc).map_err(|_| at(e, &self.journal));
        }
        self.journal_bytes += text.len() as u64;
        Ok(())
    }

    /// Applies the journal's lines newer than the snapshot to `doc`. A last line cut short
    /// (pearld killed while appending it) was never acknowledged, and is left out.
    fn replay(&mut self, doc: &mut Value) -> io::Result<()> {
        let f = match File::open(&self.journal) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(at(e, &self.journal)),
        };
        for line in BufReader::new(f).lines() {
            let Ok(line) = serde_json::from_str::<Value>(&line.map_err(|e| at(e, &self.journal))?) else {
                tracing::warn!("{}: a change cut short by a crash is left out", self.journal.display());
                break;
            };
            let generation = line["generation"].as_u64().unwrap_or(0);
            if generation <= self.generation {
                continue;
            }
            self.generation = generation;
            let Some(vrs) = doc.get_mut("vrs").and_then(Value::as_array_mut) else { continue };
            if let Some(entry) = line.get("put") {
                match vrs.iter().position(|v| v["name"] == entry["name"]) {
                    Some(i) => vrs[i] = entry.clone(),
                    None => vrs.push(entry.clone()),
                }
            } else if let Some(name) = line.get("delete") {
                vrs.retain(|v| v["name"] != *name);
            }
        }
        Ok(())
    }
}

/// A journal shorter than this is never folded: with a handful of VRs the snapshot is small,
/// and appending stays cheaper than rewriting it.
const MIN_JOURNAL_BYTES: u64 = 64 << 10;

fn at(e: io::Error, p: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", p.display()))
}

/// Makes a name made or removed in `path`'s directory survive a crash.
fn sync_dir(path: &Path) -> io::Result<()> {
    let Some(dir) = path.parent() else { return Ok(()) };
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| at(e, dir))
}

/// A writer that counts what passes through it.
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// FNV-1a: names and fingerprints, not security.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let dir = std::env::temp_dir().join(format!("pearl-store-test-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("c.yaml"), "vrs: []").unwrap();
            Dir(dir)
        }

        fn open(&self) -> (Store, Option<Value>) {
            Store::open(&self.0, &self.0.join("c.yaml"), "vrs: []").unwrap()
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn names(doc: &Value) -> Vec<(&str, u64)> {
        doc["vrs"].as_array().unwrap().iter().map(|v| (v["name"].as_str().unwrap(), v["id"].as_u64().unwrap_or(0))).collect()
    }

    #[test]
    fn a_saved_document_comes_back_only_for_the_same_file_text() {
        let dir = Dir::new("text");
        let (mut store, none) = dir.open();
        assert!(none.is_none());
        store.save(&json!({"vrs": [{"name": "red"}]})).unwrap();
        let (_, back) = dir.open();
        assert_eq!(back.unwrap()["vrs"][0]["name"], "red");
        let (_, edited) = Store::open(&dir.0, &dir.0.join("c.yaml"), "vrs: [] # edited").unwrap();
        assert!(edited.is_none(), "an edited file wins over the stored state");
    }

    #[test]
    fn changes_journaled_after_a_snapshot_come_back_in_order() {
        let dir = Dir::new("journal");
        let (mut store, _) = dir.open();
        let mut doc = json!({"vrs": [{"name": "a", "id": 0}, {"name": "b", "id": 1}]});
        store.save(&doc).unwrap();
        let c = json!({"name": "c", "id": 2});
        doc["vrs"].as_array_mut().unwrap().push(c.clone());
        store.record(&doc, VrChange::Put(&c)).unwrap();
        doc["vrs"].as_array_mut().unwrap().remove(0);
        store.record(&doc, VrChange::Delete("a")).unwrap();
        let b = json!({"name": "b", "id": 7});
        doc["vrs"][0] = b.clone();
        store.record(&doc, VrChange::Put(&b)).unwrap();
        let snapshot_len = fs::metadata(store.path()).unwrap().len();
        assert!(store.journal.exists(), "one VR's change is a line of the journal");
        let (_, back) = dir.open();
        assert_eq!(names(&back.unwrap()), [("b", 7), ("c", 2)]);
        assert_eq!(fs::metadata(store.path()).unwrap().len(), snapshot_len, "the snapshot was not rewritten");
    }

    #[test]
    fn a_line_cut_short_is_left_out_and_lines_a_snapshot_holds_are_not_applied_again() {
        let dir = Dir::new("torn");
        let (mut store, _) = dir.open();
        let mut doc = json!({"vrs": []});
        store.save(&doc).unwrap();
        let a = json!({"name": "a", "id": 1});
        doc["vrs"].as_array_mut().unwrap().push(a.clone());
        store.record(&doc, VrChange::Put(&a)).unwrap();
        let journal = fs::read(&store.journal).unwrap();
        // Killed while appending the next line.
        let mut torn = journal.clone();
        torn.extend_from_slice(br#"{"generation":2,"put":{"name":"#);
        fs::write(&store.journal, &torn).unwrap();
        let (_, back) = dir.open();
        assert_eq!(names(&back.unwrap()), [("a", 1)]);
        // Killed after a snapshot holding `a` (then deleted) was written, before the journal
        // that put `a` was removed: `a` stays deleted.
        doc["vrs"].as_array_mut().unwrap().clear();
        store.record(&doc, VrChange::Delete("a")).unwrap();
        store.save(&doc).unwrap();
        fs::write(&store.journal, &journal).unwrap();
        let (_, back) = dir.open();
        assert_eq!(names(&back.unwrap()), []);
    }

    #[test]
    fn a_journal_as_long_as_the_snapshot_is_folded_into_a_new_one() {
        let dir = Dir::new("fold");
        let (mut store, _) = dir.open();
        let mut doc = json!({"vrs": []});
        store.save(&doc).unwrap();
        let mut folds = 0;
        for i in 0..1000 {
            let vr = json!({"name": format!("vr{i}"), "id": i, "padding": "x".repeat(200)});
            doc["vrs"].as_array_mut().unwrap().push(vr.clone());
            let before = store.journal_bytes;
            store.record(&doc, VrChange::Put(&vr)).unwrap();
            folds += usize::from(store.journal_bytes < before);
            assert!(store.journal_bytes <= store.snapshot_bytes.max(MIN_JOURNAL_BYTES));
        }
        // 250 kB of changes: folded at 64 kB, then each time the journal caught up with the
        // snapshot (about 130 and 260 kB).
        assert!((1..=3).contains(&folds), "{folds} folds");
        let (_, back) = dir.open();
        assert_eq!(back.unwrap(), doc);
    }
}
