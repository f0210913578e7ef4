//! The desired state and how it changes at run time: an edit is made to a copy of the
//! configuration document, validated whole like a file, stored ahead of being applied, and
//! applied to the running node; if anything refuses, the stored and running state stay as
//! they were.

use crate::store::Store;
use pearl_control::{config_from_document_since, ConfigError};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

pub struct Desired {
    /// Shared with readers: `GET /v1/config` and a change's answer take it without a copy of
    /// thousands of VRs.
    pub doc: Arc<Value>,
    /// Where relative file names in the document (FRR configurations) are resolved.
    pub base_dir: PathBuf,
    pub store: Store,
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
    /// Valid, but the running node cannot take it (e.g. ports cannot change at run time).
    Conflict(String),
    /// The state could not be stored.
    Storage(String),
}

impl std::fmt::Display for ChangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChangeError::BadRequest { field, message } if field.is_empty() => write!(f, "{message}"),
            ChangeError::BadRequest { field, message } => write!(f, "{field}: {message}"),
            ChangeError::Invalid(e) => write!(f, "{e}"),
            ChangeError::NotFound(m) | ChangeError::Conflict(m) | ChangeError::Storage(m) => write!(f, "{m}"),
        }
    }
}

impl Desired {
    /// Validates `edit` applied to a copy of the document; returns the new document and what
    /// it configures. `running` is what the current document configures: the VRs the edit
    /// leaves as they were are not parsed again.
    pub fn propose(
        &self,
        running: &pearl_control::Config,
        edit: impl FnOnce(&mut Value) -> Result<(), ChangeError>,
    ) -> Result<(Value, pearl_control::Config), ChangeError> {
        let mut doc = Value::clone(&self.doc);
        edit(&mut doc)?;
        let config = config_from_document_since(&doc, &self.base_dir, (&self.doc, running)).map_err(ChangeError::Invalid)?;
        pin_ids(&mut doc, &config);
        Ok((doc, config))
    }
}

/// Writes into each VR of `doc` that states no id the one `config` (parsed from `doc`) gave
/// it. A given id is the lowest free one in the order of the list, so unwritten it would change
/// when a VR listed earlier goes, and the node would take the VR for another one.
pub fn pin_ids(doc: &mut Value, config: &pearl_control::Config) {
    let Some(vrs) = doc.get_mut("vrs").and_then(Value::as_array_mut) else { return };
    for (vr, parsed) in vrs.iter_mut().zip(&config.vrs) {
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
    doc["vrs"]
        .as_array()
        .and_then(|vrs| vrs.iter().position(|v| v["name"] == name))
        .ok_or_else(|| ChangeError::NotFound(format!("no VR named {name:?}")))
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
        pin_ids(&mut doc, &config);
        assert_eq!(vrs(&doc), [("a".into(), Some(1)), ("b".into(), Some(0)), ("c".into(), Some(2))]);
        // Without "a", the ids stay: "c" would have been given 1.
        doc["vrs"].as_array_mut().unwrap().remove(0);
        let config = config_from_document(&doc, std::path::Path::new("/")).unwrap();
        assert_eq!(config.vrs.iter().map(|v| v.id).collect::<Vec<_>>(), [0, 2]);
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
