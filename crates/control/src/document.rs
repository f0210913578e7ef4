//! The configuration as a document: the YAML tree as JSON, which the API edits and the store
//! keeps. A document becomes a `Config` by the same validation a file goes through, so a
//! change made at run time is held to exactly the rules of the file.

use crate::error::ConfigError;
use crate::model::{Config, Placement, VrConfig};
use crate::parse::{parse_value_in, parse_value_reusing, Reused};
use crate::tree::to_json;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use yaml_rust2::YamlLoader;

/// The YAML text as a JSON document (mapping keys become strings).
pub fn document_from_yaml(text: &str) -> Result<Value, ConfigError> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| ConfigError::at("", format!("YAML: {e}")))?;
    match docs.as_slice() {
        [doc] => to_json(doc, ""),
        [] => Ok(Value::Object(Map::new())),
        _ => Err(ConfigError::at("", "expected exactly one YAML document")),
    }
}

/// Validates a document whole; file names in it are relative to `base_dir`.
pub fn config_from_document(doc: &Value, base_dir: &Path) -> Result<Config, ConfigError> {
    if !doc.is_object() {
        return Err(ConfigError::at("", "the configuration must be a mapping (ports, vrs, workers)"));
    }
    // The file goes through this validation too, as the document its text is.
    parse_value_in(doc, base_dir)
}

/// Which VR entries of a document are as they were when the running configuration was
/// validated from it.
pub enum Unchanged<'a> {
    /// Those equal to their entry in this earlier document, if everything around the VRs
    /// (ports, workers, node, api) is equal too.
    Document(&'a Value),
    /// All but one, as this edit of one VR's entry says; nothing around the VRs changed.
    AllBut(VrEdit),
}

/// An edit of the running configuration's document that touches one VR's entry: the entries
/// of the others are where the running configuration has their VRs, but for the shift a
/// removal makes.
#[derive(Clone, Copy, Debug)]
pub enum VrEdit {
    /// A VR appended.
    Added,
    /// The VR at this position changed.
    Changed(usize),
    /// The VR at this position removed.
    Removed(usize),
}

impl VrEdit {
    /// The position in the running configuration of the VR whose entry is at `i` now, unless it
    /// is the one edited.
    fn was_at(self, i: usize) -> Option<usize> {
        match self {
            VrEdit::Added => Some(i),
            VrEdit::Changed(c) => (i != c).then_some(i),
            VrEdit::Removed(r) => Some(if i < r { i } else { i + 1 }),
        }
    }

    /// How many VRs the edit leaves, from `running` VRs.
    pub(crate) fn leaves(self, running: usize) -> usize {
        match self {
            VrEdit::Added => running + 1,
            VrEdit::Changed(_) => running,
            VrEdit::Removed(_) => running.saturating_sub(1),
        }
    }
}

/// As [`config_from_document`], validating again only what changed since `running` was
/// validated: with thousands of VRs, a change to one would otherwise parse every VR's every
/// field again. A VR is taken as it was when `unchanged` says its entry is; the checks across
/// VRs (names, ids, MACs, tokens, placement, ports, leaks, NAT) still run over all of them.
/// VRs that read files (a plugin's module, a control plane's configuration) are validated anew
/// each time, since the files may have changed, as are `auto` VRs, whose kind the whole node's
/// placement decides.
pub fn config_from_document_since(doc: &Value, base_dir: &Path, running: &Config, unchanged: Unchanged<'_>) -> Result<Config, ConfigError> {
    let (Some(new), Some(entries)) = (doc.as_object(), doc["vrs"].as_array()) else { return config_from_document(doc, base_dir) };
    let reusable = |vr: &'_ Arc<VrConfig>| vr.plugin.is_none() && vr.control_plane.is_none() && vr.placement != Placement::Auto;
    let was: Vec<Option<&Arc<VrConfig>>> = match unchanged {
        Unchanged::Document(earlier) => {
            let Some(old) = earlier.as_object() else { return config_from_document(doc, base_dir) };
            let around_same = new.keys().chain(old.keys()).filter(|k| *k != "vrs").all(|k| new.get(k) == old.get(k));
            let old_entries: HashMap<&str, &Value> = earlier["vrs"].as_array().into_iter().flatten().filter_map(named).collect();
            let old_vrs: HashMap<&str, &Arc<VrConfig>> = running.vrs.iter().map(|v| (v.name.as_str(), v)).collect();
            let same = |entry: &Value| {
                let (name, _) = named(entry).filter(|_| around_same)?;
                let vr = *old_vrs.get(name)?;
                old_entries.get(name).is_some_and(|old| *old == entry).then_some(vr)
            };
            entries.iter().map(same).collect()
        }
        Unchanged::AllBut(edit) => {
            if entries.len() != edit.leaves(running.vrs.len()) {
                return config_from_document(doc, base_dir);
            }
            (0..entries.len()).map(|i| edit.was_at(i).and_then(|j| running.vrs.get(j))).collect()
        }
    };
    // A reused VR's entry is not read again, but for its token.
    let reused: Vec<Option<Reused<'_>>> = entries
        .iter()
        .zip(was)
        .map(|(entry, was)| was.filter(|vr| reusable(vr)).map(|vr| Reused { vr, token: entry.get("token").and_then(Value::as_str) }))
        .collect();
    parse_value_reusing(doc, base_dir, &reused)
}

fn named(entry: &Value) -> Option<(&str, &Value)> {
    Some((entry.get("name")?.as_str()?, entry))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::parse::parse_config_in;

    const TEXT: &str = r#"
ports:
  - {name: p0, interface: pe0}
  - {name: p1, interface: pe1}
vrs:
  - name: red
    interfaces:
      - {name: eth0, port: p0, mac: "02:00:00:00:01:00", addresses: [10.1.0.1/24]}
      - {name: eth1, port: p1, mac: "02:00:00:00:01:01", addresses: [10.2.0.1/24]}
    match: [{ethertype: 0x88b5}]
"#;

    #[test]
    fn a_document_validates_like_the_file_it_came_from() {
        let doc = document_from_yaml(TEXT).unwrap();
        assert_eq!(doc["vrs"][0]["match"][0]["ethertype"], 0x88b5);
        let here = Path::new(".");
        assert_eq!(config_from_document(&doc, here).unwrap(), parse_config_in(TEXT, here).unwrap());
    }

    #[test]
    fn an_edited_document_is_refused_naming_the_field() {
        let mut doc = document_from_yaml(TEXT).unwrap();
        doc["vrs"][0]["interfaces"][1]["mac"] = "02:00:00:00:01:00".into();
        let e = config_from_document(&doc, Path::new(".")).unwrap_err().to_string();
        assert!(e.starts_with("vrs[0].interfaces[1].mac: duplicate of vrs[0].interfaces[0].mac"), "{e}");
    }

    /// A node of VRs drawn from small pools of names, MACs and tokens (so that edits collide),
    /// with ids pinned as the daemon pins them.
    fn node(vrs: &[(u8, u8, Option<u8>)], workers: u8) -> Value {
        let vrs: Vec<Value> = vrs.iter().enumerate().map(|(id, &(name, mac, token))| vr(name, mac, token, Some(id as u16))).collect();
        serde_json::json!({
            "workers": workers,
            "api": {"admin_token": "a".repeat(32)},
            "ports": [{"name": "p0", "interface": "pe0", "driver": "memory"}, {"name": "p1", "interface": "pe1", "driver": "memory"}],
            "vrs": vrs,
        })
    }

    /// VR `v{name}` with one interface of MAC `…:{mac}`; small pools of names, MACs, ids and
    /// tokens make edits collide.
    pub(crate) fn vr(name: u8, mac: u8, token: Option<u8>, id: Option<u16>) -> Value {
        let mut v = serde_json::json!({
            "name": format!("v{name}"),
            "interfaces": [{"name": "eth0", "port": "p0", "mac": format!("02:00:00:00:00:{mac:02x}"), "addresses": ["10.1.0.1/24"]}],
        });
        if let Some(t) = token {
            v["token"] = format!("{t}").repeat(32).into();
        }
        if let Some(id) = id {
            v["id"] = id.into();
        }
        v
    }

    /// One edit of the kind the API makes: a VR added, removed or changed, or the node's
    /// surroundings changed.
    #[derive(Debug, Clone)]
    enum Edit {
        Add { name: u8, mac: u8, token: Option<u8> },
        Remove(usize),
        SetMac(usize, u8),
        SetToken(usize, Option<u8>),
        Rename(usize, u8),
        Workers(u8),
        DropPort,
    }

    fn edit() -> impl proptest::strategy::Strategy<Value = Edit> {
        use proptest::prelude::*;
        prop_oneof![
            (0u8..12, 0u8..12, proptest::option::of(1u8..6)).prop_map(|(name, mac, token)| Edit::Add { name, mac, token }),
            (0usize..8).prop_map(Edit::Remove),
            (0usize..8, 0u8..12).prop_map(|(i, m)| Edit::SetMac(i, m)),
            (0usize..8, proptest::option::of(1u8..6)).prop_map(|(i, t)| Edit::SetToken(i, t)),
            (0usize..8, 0u8..12).prop_map(|(i, n)| Edit::Rename(i, n)),
            (1u8..3).prop_map(Edit::Workers),
            Just(Edit::DropPort),
        ]
    }

    fn apply(doc: &mut Value, e: &Edit) {
        let vrs = doc["vrs"].as_array_mut().unwrap();
        let n = vrs.len();
        match *e {
            Edit::Add { name, mac, token } => vrs.push(vr(name, mac, token, None)),
            Edit::Remove(i) if i < n => drop(vrs.remove(i)),
            Edit::SetMac(i, m) if i < n => vrs[i]["interfaces"][0]["mac"] = format!("02:00:00:00:00:{m:02x}").into(),
            Edit::SetToken(i, Some(t)) if i < n => vrs[i]["token"] = format!("{t}").repeat(32).into(),
            Edit::SetToken(i, None) if i < n => drop(vrs[i].as_object_mut().unwrap().remove("token")),
            Edit::Rename(i, m) if i < n => vrs[i]["name"] = format!("v{m}").into(),
            Edit::Workers(w) => doc["workers"] = w.into(),
            Edit::DropPort => drop(doc["ports"].as_array_mut().unwrap().pop()),
            _ => {}
        }
    }

    proptest::proptest! {
        /// Re-validating only what an edit touched accepts and refuses exactly what validating
        /// the whole document does, with the same words, and configures the same node.
        #[test]
        fn validating_since_a_running_node_agrees_with_validating_whole(
            names in proptest::collection::hash_set(0u8..12, 1..7),
            with_token in proptest::collection::vec(proptest::bool::ANY, 7),
            workers in 1u8..3,
            edits in proptest::collection::vec(edit(), 1..4),
        ) {
            let here = Path::new(".");
            // A valid running node: MACs and tokens apart; the edits make them collide.
            let vrs: Vec<(u8, u8, Option<u8>)> =
                names.iter().enumerate().map(|(i, &n)| (n, i as u8, with_token[i].then_some(i as u8 + 1))).collect();
            let running_doc = node(&vrs, workers);
            let running = config_from_document(&running_doc, here).unwrap();
            let mut doc = running_doc.clone();
            for e in &edits {
                apply(&mut doc, e);
            }
            let whole = config_from_document(&doc, here).map_err(|e| e.to_string());
            let since = config_from_document_since(&doc, here, &running, Unchanged::Document(&running_doc)).map_err(|e| e.to_string());
            proptest::prop_assert_eq!(since, whole);
        }
    }

    proptest::proptest! {
        /// Told which one entry an edit touched, validation agrees with validating whole.
        #[test]
        fn validating_one_vrs_change_agrees_with_validating_whole(
            names in proptest::collection::hash_set(0u8..12, 1..7),
            with_token in proptest::collection::vec(proptest::bool::ANY, 7),
            e in proptest::strategy::Strategy::prop_filter(edit(), "one VR's", |e| !matches!(e, Edit::Workers(_) | Edit::DropPort)),
        ) {
            let here = Path::new(".");
            let vrs: Vec<(u8, u8, Option<u8>)> =
                names.iter().enumerate().map(|(i, &n)| (n, i as u8, with_token[i].then_some(i as u8 + 1))).collect();
            let running_doc = node(&vrs, 1);
            let running = config_from_document(&running_doc, here).unwrap();
            let mut doc = running_doc.clone();
            let n = vrs.len();
            // An edit of a VR that is not there leaves the document as it was.
            let touched = match e {
                Edit::Add { .. } => VrEdit::Added,
                Edit::Remove(i) if i < n => VrEdit::Removed(i),
                Edit::Remove(i) | Edit::SetMac(i, _) | Edit::SetToken(i, _) | Edit::Rename(i, _) => VrEdit::Changed(i),
                Edit::Workers(_) | Edit::DropPort => unreachable!(),
            };
            apply(&mut doc, &e);
            let whole = config_from_document(&doc, here).map_err(|e| e.to_string());
            let since = config_from_document_since(&doc, here, &running, Unchanged::AllBut(touched)).map_err(|e| e.to_string());
            proptest::prop_assert_eq!(since, whole);
        }
    }

    #[test]
    fn the_entries_of_vrs_taken_as_they_were_are_not_read_again() {
        let here = Path::new(".");
        let doc = node(&[(1, 1, None), (2, 2, None)], 1);
        let running = config_from_document(&doc, here).unwrap();
        let mut next = doc.clone();
        next["vrs"][1]["interfaces"][0]["mac"] = "02:00:00:00:00:09".into();
        // The edit says only vrs[1] changed: vrs[0]'s entry, were it read, would be refused.
        next["vrs"][0]["mtus"] = 1.into();
        let since = config_from_document_since(&next, here, &running, Unchanged::AllBut(VrEdit::Changed(1))).unwrap();
        assert!(Arc::ptr_eq(&since.vrs[0], &running.vrs[0]));
        assert_eq!(config_from_document(&next, here).unwrap_err().path, "vrs[0].mtus");
    }

    #[test]
    fn a_vr_whose_control_plane_file_went_away_is_refused_at_the_next_change() {
        let dir = std::env::temp_dir().join(format!("pearl-since-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("frr.conf"), "ip route 10.9.0.0/16 10.1.0.2\n").unwrap();
        let mut doc = node(&[(1, 1, None), (2, 2, None)], 1);
        doc["vrs"][0]["control_plane"] = serde_json::json!({"frr": {"daemons": ["staticd"], "config": "frr.conf"}});
        let running = config_from_document(&doc, &dir).unwrap();
        std::fs::remove_file(dir.join("frr.conf")).unwrap();
        let mut next = doc.clone();
        next["vrs"][1]["interfaces"][0]["mac"] = "02:00:00:00:00:09".into();
        let e = config_from_document_since(&next, &dir, &running, Unchanged::Document(&doc)).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.starts_with("vrs[0].control_plane.frr.config"), "{e}");
    }
}
