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
//! The stored document remembers which configuration file it grew from: its path, a hash of
//! the file's document (comments and layout aside) and a hash of the document as first stored
//! from it, which tells whether anything was changed at run time since (`file_vs_state` has
//! the rule these feed).

use crate::file_vs_state::{differences, document_hash, Stored};
use serde_json::{json, Value};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct Store {
    path: PathBuf,
    journal: PathBuf,
    config_path: String,
    /// The file's text's hash: all a state saved by an older pearld has to go by.
    config_hash: String,
    /// The file's document's hash.
    file_hash: String,
    /// The hash of the document as first stored from that file; none once the stored state is
    /// kept over a file that differs from it (`--state-wins`).
    from_file_hash: Option<String>,
    /// The next snapshot is the document started from the file: its hash is `from_file_hash`.
    from_file_next: bool,
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
    /// Opens the store of configuration file `config_path` (text `config_text`, document
    /// `file_doc`) under `state_dir`; returns the stored state, if any, and how it stands to the
    /// file. Until [`Store::start_from_file`] or [`Store::keep_over_stale_file`], it goes on as
    /// the state of the file it grew from.
    pub fn open(state_dir: &Path, config_path: &Path, config_text: &str, file_doc: &Value) -> io::Result<(Store, Option<Stored>)> {
        fs::create_dir_all(state_dir).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", state_dir.display())))?;
        let (stem, config_path) = stem_of(config_path);
        let mut store = Store {
            path: state_dir.join(format!("{stem}.json")),
            journal: state_dir.join(format!("{stem}.journal")),
            config_path,
            config_hash: format!("{:016x}", fnv1a(config_text.as_bytes())),
            file_hash: format!("{:016x}", document_hash(file_doc)),
            from_file_hash: None,
            from_file_next: true,
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
        let Some(mut saved) = saved else { return Ok((store, None)) };
        store.generation = saved["generation"].as_u64().unwrap_or(0);
        let mut doc = saved["document"].take();
        store.replay(&mut doc)?;
        let file_unchanged = match saved["file_hash"].as_str() {
            Some(hash) => hash == store.file_hash,
            // Saved by a pearld that kept only the text's hash.
            None => saved["config_hash"] == store.config_hash.as_str(),
        };
        let from_file_hash = saved["from_file_hash"].as_str().map(str::to_string);
        let as_file_said = match &from_file_hash {
            Some(h) => *h == format!("{:016x}", document_hash(&doc)),
            // Saved by an older pearld, or kept over a stale file: what the file says now, if
            // anything, and the state from it from now on.
            None => differences(file_doc, &doc).is_empty(),
        };
        store.from_file_next = from_file_hash.is_none() && as_file_said;
        store.from_file_hash = from_file_hash;
        Ok((store, Some(Stored { doc, file_unchanged, as_file_said })))
    }

    /// The node starts from the file's document: the next snapshot is what the file says.
    pub fn start_from_file(&mut self) {
        self.from_file_next = true;
    }

    /// The node starts from the stored state although the file differs from it: from now on the
    /// state grew from this file, and holds changes it does not have.
    pub fn keep_over_stale_file(&mut self) {
        (self.from_file_hash, self.from_file_next) = (None, false);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores `doc` whole, durably, before the caller acts on it; the journal starts empty.
    pub fn save(&mut self, doc: &Value) -> io::Result<()> {
        if std::mem::take(&mut self.from_file_next) {
            self.from_file_hash = Some(format!("{:016x}", document_hash(doc)));
        }
        let tmp = self.path.with_extension("json.tmp");
        let f = File::create(&tmp).map_err(|e| at(e, &tmp))?;
        // Written as it is serialized: a copy of a document of thousands of VRs (or of its
        // text) would cost as much as the writing.
        let mut w = Counted { inner: BufWriter::new(f), bytes: 0 };
        let write = |w: &mut Counted<BufWriter<File>>| -> io::Result<()> {
            write!(
                w,
                "{{\"config_path\":{},\"config_hash\":{},\"file_hash\":{},\"from_file_hash\":{},\"generation\":{},\"document\":",
                json!(self.config_path),
                json!(self.config_hash),
                json!(self.file_hash),
                json!(self.from_file_hash),
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
            let (store, stored) = self.open_file("vrs: []");
            (store, stored.map(|s| s.doc))
        }

        fn open_file(&self, text: &str) -> (Store, Option<Stored>) {
            let doc = pearl_control::document_from_yaml(text).unwrap();
            Store::open(&self.0, &self.0.join("c.yaml"), text, &doc).unwrap()
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
    fn the_stored_state_says_whether_the_file_or_the_run_time_changed_it() {
        let dir = Dir::new("text");
        let (mut store, none) = dir.open();
        assert!(none.is_none());
        let started = json!({"vrs": [{"name": "red", "id": 0}]});
        store.save(&started).unwrap();
        let (mut store, back) = dir.open_file("vrs: []   # a comment\n");
        let back = back.unwrap();
        assert!(back.file_unchanged, "a comment is no change of the file");
        assert!(back.as_file_said, "nothing was changed at run time");
        assert_eq!(back.doc, started);
        let (_, edited) = dir.open_file("workers: 2\nvrs: []");
        let edited = edited.unwrap();
        assert!(!edited.file_unchanged && edited.as_file_said);
        let blue = json!({"name": "blue", "id": 1});
        let mut changed = started.clone();
        changed["vrs"].as_array_mut().unwrap().push(blue.clone());
        store.record(&changed, VrChange::Put(&blue)).unwrap();
        let (mut store, both) = dir.open_file("workers: 2\nvrs: []");
        let both = both.unwrap();
        assert!(!both.file_unchanged && !both.as_file_said, "the journal's change is a run-time change");
        assert_eq!(both.doc, changed);
        // Kept over the edited file (--state-wins): its state, which the file does not say.
        store.keep_over_stale_file();
        store.save(&changed).unwrap();
        let (_, kept) = dir.open_file("workers: 2\nvrs: []");
        let kept = kept.unwrap();
        assert!(kept.file_unchanged && !kept.as_file_said);
        // Started from the file again (--config-wins): what the file says, nothing more.
        let (mut store, _) = dir.open_file("workers: 3\nvrs: []");
        store.start_from_file();
        store.save(&started).unwrap();
        let (_, fresh) = dir.open_file("workers: 3\nvrs: []");
        let fresh = fresh.unwrap();
        assert!(fresh.file_unchanged && fresh.as_file_said);
    }

    #[test]
    fn a_state_saved_with_only_the_texts_hash_comes_back_on_that_text() {
        let dir = Dir::new("legacy");
        let (store, _) = dir.open();
        let doc = json!({"vrs": [{"name": "red", "id": 0}]});
        let old = json!({"config_path": store.config_path, "config_hash": store.config_hash, "generation": 0, "document": doc});
        fs::write(store.path(), old.to_string()).unwrap();
        let same = dir.open_file("vrs: []").1.unwrap();
        assert!(same.file_unchanged && !same.as_file_said, "the red VR is not in the file: a run-time change");
        assert!(!dir.open_file("vrs: [] # edited").1.unwrap().file_unchanged, "the text's hash is all it has");
        let (mut store, as_file) = dir.open_file("vrs: [{name: red}]");
        assert!(as_file.unwrap().as_file_said, "the state is what the file says");
        store.save(&doc).unwrap();
        let (_, edited) = dir.open_file("vrs: [{name: red}]\nworkers: 2");
        assert!(edited.unwrap().as_file_said, "…and the file's from then on, its edits the operator's");
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
