//! The desired state and how it changes at run time: an edit is made to the configuration
//! document, validated whole like a file, stored ahead of being applied, and applied to the
//! running node; if anything refuses, the edit is taken back and the stored and running state
//! stay as they were.

use crate::store::{Store, VrChange};
use pearl_control::{config_after_vr_edit, config_from_document_since, Config, ConfigError, Unchanged, VrEdit, VrIndex};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, Weak};

pub struct Desired {
    /// Shared with readers: `GET /v1/config` and a change's answer take it without a copy of
    /// thousands of VRs.
    pub doc: Arc<Value>,
    /// Where relative file names in the document (FRR configurations) are resolved.
    pub base_dir: PathBuf,
    pub store: Store,
    /// The claims across VRs of the running configuration (the one it names: a `Weak` keeps
    /// its address from being reused), against which a one-VR change is checked in time
    /// proportional to that VR. Brought along by each change that lands ([`Desired::advance`]);
    /// a refused one leaves it as it is.
    index: Option<(Weak<Config>, VrIndex)>,
    /// The store holds a proposed change that has not landed (yet): it is written ahead of
    /// applying it, so a crash mid-change comes back with the old or the new state whole.
    ahead: bool,
}

/// Why a change was refused.
#[derive(Debug)]
pub enum ChangeError {
    /// The request itself is malformed: which field, and what is wrong.
    BadRequest { field: String, message: String },
    /// The resulting configuration is invalid (names the field).
    Invalid(ConfigError),
    /// Something named does not exist.
    NotFound(String),
    /// Valid, but the running node cannot take it (e.g. a VR's interfaces changed in place).
    Conflict(String),
    /// The state could not be stored.
    Storage(String),
    /// A bug stopped the change midway (a panic, whose message this is); it was taken back.
    Panicked(String),
}

impl std::fmt::Display for ChangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChangeError::BadRequest { field, message } if field.is_empty() => write!(f, "{message}"),
            ChangeError::BadRequest { field, message } => write!(f, "{field}: {message}"),
            ChangeError::Invalid(e) => write!(f, "{e}"),
            ChangeError::NotFound(m) | ChangeError::Conflict(m) | ChangeError::Storage(m) => write!(f, "{m}"),
            ChangeError::Panicked(m) => write!(f, "a bug stopped the change ({m}); it was taken back, nothing was changed or stored"),
        }
    }
}

/// What a change does to the document. A change to one VR edits the document in place and
/// validates only that VR anew: with thousands of VRs, a copy of the document per change
/// (and freeing the old one) took longer than everything else validation does.
pub enum Edit<'e> {
    /// Anything, made to a copy of the whole document (`PUT /v1/config`).
    Whole(EditFn<'e>),
    /// A VR appended; refused if one of its name exists.
    AddVr(Value),
    /// VR `name` removed.
    RemoveVr(&'e str),
    /// VR `name`'s entry changed, and nothing else.
    Vr(&'e str, EditFn<'e>),
}

/// An edit of a JSON value: the whole document, or one VR's entry.
pub type EditFn<'e> = Box<dyn FnOnce(&mut Value) -> Result<(), ChangeError> + 'e>;

/// How to take back a proposed change, which is already in the document; dropped (on the
/// dropper thread: it may hold a whole document) once the change is applied.
pub enum Undo {
    Replace(Arc<Value>),
    Pop,
    Insert(usize, Value),
    Restore(usize, Value),
}

impl Desired {
    pub fn new(doc: Value, base_dir: PathBuf, store: Store) -> Desired {
        Desired { doc: Arc::new(doc), base_dir, store, index: None, ahead: false }
    }

    /// Keeps the index of `running`, which the document configures: made anew unless the one
    /// kept is `running`'s (at start, and after a whole new document, it is made here).
    pub fn keep_index(&mut self, running: &Arc<Config>) {
        if self.index.as_ref().is_none_or(|(of, _)| of.as_ptr() != Arc::as_ptr(running)) {
            self.index = Some((Arc::downgrade(running), VrIndex::of(running, &self.doc)));
        }
    }

    /// Brings the index from `before` to `after`, which the change `undo` takes back made of
    /// it and the node now runs; made anew from `after` where it cannot follow (a whole new
    /// document, or an index not of `before`).
    pub fn advance(&mut self, before: &Arc<Config>, after: &Arc<Config>, undo: &Undo) {
        let entries = self.doc["vrs"].as_array().map(Vec::as_slice).unwrap_or_default();
        let leaves = match undo {
            Undo::Pop => before.vrs.len() + 1,
            Undo::Insert(..) => before.vrs.len().wrapping_sub(1),
            Undo::Restore(..) => before.vrs.len(),
            Undo::Replace(_) => usize::MAX,
        };
        let kept = self.index.as_mut().filter(|(of, _)| {
            of.as_ptr() == Arc::as_ptr(before) && !Arc::ptr_eq(before, after) && after.vrs.len() == leaves && entries.len() == leaves
        });
        let Some((of, index)) = kept else {
            self.index = None;
            return self.keep_index(after);
        };
        match undo {
            Undo::Pop => index.insert(before.vrs.len(), &after.vrs[before.vrs.len()], &entries[before.vrs.len()]),
            Undo::Insert(i, gone) => index.remove(*i, &before.vrs[*i], gone),
            Undo::Restore(i, was) => {
                index.remove(*i, &before.vrs[*i], was);
                index.insert(*i, &after.vrs[*i], &entries[*i]);
            }
            Undo::Replace(_) => unreachable!("a whole new document leaves no VR count to match"),
        }
        *of = Arc::downgrade(after);
    }

    /// Makes `edit` to the document; returns how to take it back. Refused with the document as
    /// it was (an edit of one VR's entry that panics is taken back before the panic goes on).
    pub fn make(&mut self, running: &Arc<Config>, edit: Edit<'_>) -> Result<Undo, ChangeError> {
        self.keep_index(running);
        let index = &self.index.as_ref().expect("kept").1;
        // The index has the position; the document, which it configures, should agree.
        let at = |name: &str| match index.position(name) {
            Some(i) if self.doc["vrs"][i]["name"] == name => Some(i),
            Some(_) => vr_index(&self.doc, name).ok(),
            None => None,
        };
        Ok(match edit {
            Edit::Whole(f) => {
                let mut doc = Value::clone(&self.doc);
                f(&mut doc)?;
                Undo::Replace(std::mem::replace(&mut self.doc, Arc::new(doc)))
            }
            Edit::AddVr(vr) => {
                let name = vr["name"].as_str().unwrap_or_default().to_string();
                if at(&name).is_some() {
                    return Err(ChangeError::BadRequest { field: "name".into(), message: format!("a VR named {name:?} exists") });
                }
                vrs_mut(Arc::make_mut(&mut self.doc)).push(vr);
                Undo::Pop
            }
            Edit::RemoveVr(name) => {
                let i = at(name).ok_or_else(|| not_found(name))?;
                Undo::Insert(i, vrs_mut(Arc::make_mut(&mut self.doc)).remove(i))
            }
            Edit::Vr(name, f) => {
                let i = at(name).ok_or_else(|| not_found(name))?;
                let entry = &mut vrs_mut(Arc::make_mut(&mut self.doc))[i];
                let was = entry.clone();
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(entry))) {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        *entry = was;
                        return Err(e);
                    }
                    Err(panic) => {
                        *entry = was;
                        std::panic::resume_unwind(panic);
                    }
                }
                Undo::Restore(i, was)
            }
        })
    }

    /// Validates the document as the change `undo` takes back made it; returns what it
    /// configures. `running` is what the document configured before: the VRs the edit leaves
    /// as they were are not parsed again. Refused, the change is the caller's to take back.
    pub fn check(&mut self, running: &Arc<Config>, undo: &Undo) -> Result<Config, ConfigError> {
        let edit = match undo {
            Undo::Replace(_) => None,
            Undo::Pop => Some(VrEdit::Added),
            Undo::Insert(i, _) => Some(VrEdit::Removed(*i)),
            Undo::Restore(i, _) => Some(VrEdit::Changed(*i)),
        };
        let index = &self.index.as_ref().expect("kept by make").1;
        let config = match (undo, edit) {
            (Undo::Replace(old), _) => config_from_document_since(&self.doc, &self.base_dir, running, Unchanged::Document(old))?,
            (_, Some(edit)) => config_after_vr_edit(&self.doc, &self.base_dir, running, edit, index)?,
            (_, None) => unreachable!("only a whole new document has no one VR edited"),
        };
        // A one-VR edit leaves the other entries' ids as they were written.
        let touched = match edit {
            None => 0..config.vrs.len(),
            Some(VrEdit::Added) => config.vrs.len().saturating_sub(1)..config.vrs.len(),
            Some(VrEdit::Changed(i)) => i..i + 1,
            Some(VrEdit::Removed(_)) => 0..0,
        };
        pin_ids(Arc::make_mut(&mut self.doc), &config, touched);
        Ok(config)
    }

    /// Stores the document as the proposed change `undo` takes back left it: a change to one
    /// VR as that VR's entry, anything else whole.
    pub fn store(&mut self, undo: &Undo) -> std::io::Result<()> {
        // Even a write that fails may have reached the disk in part.
        self.ahead = true;
        let vrs = self.doc["vrs"].as_array().map(Vec::as_slice).unwrap_or_default();
        let change = match undo {
            Undo::Pop => vrs.last().map(VrChange::Put),
            Undo::Insert(_, gone) => gone["name"].as_str().map(VrChange::Delete),
            Undo::Restore(i, was) => vrs.get(*i).filter(|now| now["name"] == was["name"]).map(VrChange::Put),
            Undo::Replace(_) => None,
        };
        match change {
            Some(change) => self.store.record(&self.doc, change),
            None => self.store.save(&self.doc),
        }
    }

    /// Whether the proposed change `undo` takes back may change who holds which token: the
    /// tokens are gathered from the whole document, which with thousands of VRs takes longer
    /// than the rest of a change that leaves them alone.
    pub fn moves_tokens(&self, undo: &Undo) -> bool {
        let vrs = self.doc["vrs"].as_array().map(Vec::as_slice).unwrap_or_default();
        let holds = |vr: &Value| vr.get("token").is_some();
        match undo {
            Undo::Pop => vrs.last().is_none_or(holds),
            Undo::Insert(_, gone) => holds(gone),
            Undo::Restore(i, was) => holds(was) || vrs.get(*i).is_none_or(|now| holds(now) || now["name"] != was["name"]),
            Undo::Replace(_) => true,
        }
    }

    /// Stores the document again if a change taken back was stored ahead of being applied.
    pub fn restore(&mut self) {
        if std::mem::take(&mut self.ahead) {
            if let Err(e) = self.store.save(&self.doc) {
                tracing::error!(
                    "restoring the stored state after a refused change: {e}; the change refused is stored and a restart would apply it"
                );
            }
        }
    }

    /// The change proposed last landed: the store holds the state in force.
    pub fn landed(&mut self) {
        self.ahead = false;
    }

    /// Takes back a proposed change.
    pub fn revert(&mut self, undo: Undo) {
        match undo {
            Undo::Replace(old) => self.doc = old,
            Undo::Pop => drop(vrs_mut(Arc::make_mut(&mut self.doc)).pop()),
            Undo::Insert(i, vr) => vrs_mut(Arc::make_mut(&mut self.doc)).insert(i, vr),
            Undo::Restore(i, vr) => vrs_mut(Arc::make_mut(&mut self.doc))[i] = vr,
        }
    }
}

fn vrs_mut(doc: &mut Value) -> &mut Vec<Value> {
    if !doc["vrs"].is_array() {
        doc["vrs"] = Value::Array(Vec::new());
    }
    doc["vrs"].as_array_mut().expect("array")
}

/// Writes into each VR of `doc` that states no id the one `config` (parsed from `doc`) gave
/// it. A given id is the lowest free one in the order of the list, so unwritten it would change
/// when a VR listed earlier goes, and the node would take the VR for another one.
pub fn pin_ids(doc: &mut Value, config: &Config, entries: std::ops::Range<usize>) {
    let Some(vrs) = doc.get_mut("vrs").and_then(Value::as_array_mut) else { return };
    let start = entries.start;
    for (vr, parsed) in vrs.iter_mut().zip(&config.vrs).take(entries.end).skip(start) {
        if let Some(m) = vr.as_object_mut().filter(|m| !m.contains_key("id")) {
            m.insert("id".into(), parsed.id.into());
        }
    }
}

/// Gives each VR of `new` that states no id the one the VR of that name has in `old`, unless
/// `new` states it for another VR: a whole new document keeps the VRs it keeps as they are.
pub fn carry_ids(old: &Value, new: &mut Value) {
    let had: std::collections::HashMap<&str, &Value> =
        old["vrs"].as_array().into_iter().flatten().filter_map(|v| Some((v["name"].as_str()?, v.get("id")?))).collect();
    let Some(vrs) = new.get_mut("vrs").and_then(Value::as_array_mut) else { return };
    let stated: std::collections::HashSet<Value> = vrs.iter().filter_map(|v| v.get("id").cloned()).collect();
    for vr in vrs {
        let Some(id) = vr["name"].as_str().and_then(|n| had.get(n)).copied() else { continue };
        if let Some(m) = vr.as_object_mut().filter(|m| !m.contains_key("id") && !stated.contains(id)) {
            m.insert("id".into(), id.clone());
        }
    }
}

/// The index of VR `name` in the document's `vrs`.
pub fn vr_index(doc: &Value, name: &str) -> Result<usize, ChangeError> {
    doc["vrs"].as_array().and_then(|vrs| vrs.iter().position(|v| v["name"] == name)).ok_or_else(|| not_found(name))
}

fn not_found(name: &str) -> ChangeError {
    ChangeError::NotFound(format!("no VR named {name:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pearl_control::config_from_document;
    use serde_json::json;

    fn vrs(doc: &Value) -> Vec<(String, Option<u64>)> {
        doc["vrs"].as_array().unwrap().iter().map(|v| (v["name"].as_str().unwrap().into(), v["id"].as_u64())).collect()
    }

    #[test]
    fn given_ids_are_written_down_and_stated_ones_left_alone() {
        let ports = json!([{"name": "p0", "interface": "veth0", "driver": "memory"}]);
        let interface = |mac: &str| json!([{"name": "eth0", "port": "p0", "mac": mac}]);
        let mut doc = json!({"ports": ports, "vrs": [
            {"name": "a", "interfaces": interface("02:00:00:00:00:01")},
            {"name": "b", "id": 0, "interfaces": interface("02:00:00:00:00:02")},
            {"name": "c", "interfaces": interface("02:00:00:00:00:03")},
        ]});
        let config = config_from_document(&doc, std::path::Path::new("/")).unwrap();
        pin_ids(&mut doc, &config, 0..3);
        assert_eq!(vrs(&doc), [("a".into(), Some(1)), ("b".into(), Some(0)), ("c".into(), Some(2))]);
        // Without "a", the ids stay: "c" would have been given 1.
        doc["vrs"].as_array_mut().unwrap().remove(0);
        let config = config_from_document(&doc, std::path::Path::new("/")).unwrap();
        assert_eq!(config.vrs.iter().map(|v| v.id).collect::<Vec<_>>(), [0, 2]);
    }

    /// The index `Desired` keeps follows the changes that land (one VR's or a whole
    /// document), is left alone by a refused one, and is at each step the index made anew.
    #[test]
    fn the_kept_index_follows_the_changes_that_land() {
        let dir = std::env::temp_dir().join(format!("pearl-desired-index-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("c.yaml"), "vrs: []").unwrap();
        let (store, _) = Store::open(&dir, &dir.join("c.yaml"), "vrs: []", &serde_json::json!({"vrs": []})).unwrap();
        let vr = |name: &str, mac: u8| json!({"name": name, "interfaces": [{"name": "eth0", "port": "p0", "mac": format!("02:00:00:00:00:{mac:02x}")}]});
        let doc = json!({"ports": [{"name": "p0", "interface": "veth0", "driver": "memory"}], "vrs": [vr("a", 1), vr("b", 2)]});
        let mut running = Arc::new(config_from_document(&doc, &dir).unwrap());
        let mut desired = Desired::new(doc, dir.clone(), store);
        desired.keep_index(&running);
        let rename = |to: &'static str| -> EditFn<'static> {
            Box::new(move |v: &mut Value| {
                v["name"] = to.into();
                Ok(())
            })
        };
        let drop_last: EditFn<'static> = Box::new(|d: &mut Value| {
            d["vrs"].as_array_mut().unwrap().pop();
            Ok(())
        });
        let edits: Vec<(Edit<'_>, bool)> = vec![
            (Edit::AddVr(vr("c", 3)), true),
            (Edit::AddVr(vr("d", 1)), false),
            (Edit::Vr("a", rename("c")), false),
            (Edit::Vr("a", rename("z")), true),
            (Edit::RemoveVr("b"), true),
            (Edit::Whole(drop_last), true),
            (Edit::AddVr(vr("e", 4)), true),
        ];
        for (edit, lands) in edits {
            let undo = desired.make(&running, edit);
            let proposed = undo.and_then(|undo| match desired.check(&running, &undo) {
                Ok(config) => Ok((undo, config)),
                Err(e) => {
                    desired.revert(undo);
                    Err(ChangeError::Invalid(e))
                }
            });
            match proposed {
                Ok((undo, config)) => {
                    assert!(lands);
                    let after = Arc::new(config);
                    desired.advance(&running, &after, &undo);
                    running = after;
                }
                Err(e) => assert!(!lands, "{e}"),
            }
            let (of, index) = desired.index.as_ref().unwrap();
            assert_eq!(of.as_ptr(), Arc::as_ptr(&running));
            assert_eq!(index, &VrIndex::of(&running, &desired.doc));
        }
        assert_eq!(vrs(&desired.doc), [("z".into(), Some(0)), ("e".into(), Some(1))]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_whole_new_document_keeps_the_ids_of_the_vrs_it_keeps_unless_it_states_them_elsewhere() {
        let old = json!({"vrs": [{"name": "a", "id": 4}, {"name": "b", "id": 7}, {"name": "c", "id": 9}]});
        let mut new = json!({"vrs": [{"name": "b"}, {"name": "x", "id": 9}, {"name": "c"}, {"name": "a", "id": 1}, {"name": "n"}]});
        carry_ids(&old, &mut new);
        assert_eq!(
            vrs(&new),
            [("b".into(), Some(7)), ("x".into(), Some(9)), ("c".into(), None), ("a".into(), Some(1)), ("n".into(), None)]
        );
    }
}
