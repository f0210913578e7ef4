//! A one-VR edit validated against the running configuration's [`VrIndex`]: the VR it adds
//! or changes is parsed alone and its claims looked up, so that with thousands of VRs the
//! change is checked in time proportional to that VR, not to the node. Only an edit found valid
//! takes this way; any doubt (an error, whose words and field the whole validation chooses, or
//! VRs the index cannot speak for) goes the way of [`config_from_document_since`], so either
//! way the answer is the whole validation's.

use crate::access::parse_api;
use crate::at::At;
use crate::document::{config_from_document_since, Unchanged, VrEdit};
use crate::error::ConfigError;
use crate::grammar::{read, ApiSpec};
use crate::model::{Config, Placement};
use crate::parse::parse_lone_vr;
use crate::vr_index::VrIndex;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// As [`config_from_document_since`] with `Unchanged::AllBut(edit)`, `index` being
/// `running`'s (`VrIndex::of`, kept up to date by the caller).
pub fn config_after_vr_edit(doc: &Value, base_dir: &Path, running: &Config, edit: VrEdit, index: &VrIndex) -> Result<Config, ConfigError> {
    match admitted(doc, base_dir, running, edit, index) {
        Some(config) => Ok(config),
        None => config_from_document_since(doc, base_dir, running, Unchanged::AllBut(edit)),
    }
}

/// The configuration `edit` makes, if the index shows it valid.
fn admitted(doc: &Value, base_dir: &Path, running: &Config, edit: VrEdit, index: &VrIndex) -> Option<Config> {
    let entries = doc["vrs"].as_array()?;
    if entries.len() != edit.leaves(running.vrs.len()) || index.len() != running.vrs.len() {
        return None;
    }
    let (at, replaced) = match edit {
        VrEdit::Added => (running.vrs.len(), None),
        VrEdit::Changed(c) | VrEdit::Removed(c) => (c, Some(running.vrs.get(c)?)),
    };
    if !index.all_reusable_but(replaced.map(Arc::as_ref)) {
        return None;
    }
    // The API section is read again, as the whole validation would: its TLS files may have
    // changed.
    let (admin, api_tls) = match doc.get("api") {
        Some(api) => {
            let at = At::Root;
            let at = at.key("api");
            let spec: Option<ApiSpec> = read(api, at).ok()?;
            spec.map(|s| parse_api(&s, at, base_dir)).transpose().ok()?.unwrap_or_default()
        }
        None => (None, None),
    };
    let mut vrs = running.vrs.clone();
    if let VrEdit::Removed(r) = edit {
        // Fewer VRs claim less; only a VR importing routes from the one removed loses anything.
        if index.imported_from(&vrs[r].name) {
            return None;
        }
        vrs.remove(r);
    } else {
        let entry = entries.get(at)?;
        let free_id = index.lowest_free_id(replaced.map(|v| v.id))?;
        let vr = Arc::new(parse_lone_vr(entry, at, running, admin, base_dir, free_id).ok()?);
        let token = entry.get("token").and_then(Value::as_str);
        if vr.placement == Placement::Auto
            || !index.admits(&vr, token, replaced.map(Arc::as_ref), running)
            || crate::distribution::check_ports(std::slice::from_ref(&vr), running.ports.len(), running.workers).is_err()
        {
            return None;
        }
        match edit {
            VrEdit::Added => vrs.push(vr),
            _ => vrs[at] = vr,
        }
    }
    Some(Config { workers: running.workers, node: running.node, ports: running.ports.clone(), vrs, api_tls })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::config_from_document;
    use crate::document::tests::vr;
    use proptest::prelude::*;
    use serde_json::json;

    const NAT_PORTS: [&str; 3] = ["20000-20999", "20500-21499", "30000-30999"];
    const DISTRIBUTIONS: [&str; 3] = ["flow", "round_robin", "proportional"];

    fn node(names: &[u8], tokens: &[bool], workers: u8) -> Value {
        let vrs: Vec<Value> =
            names.iter().enumerate().map(|(i, &n)| vr(n, i as u8, tokens[i].then_some(i as u8 + 1), Some(i as u16))).collect();
        json!({
            "workers": workers,
            "api": {"admin_token": "a".repeat(32)},
            "ports": [{"name": "p0", "interface": "pe0", "driver": "memory"}, {"name": "p1", "interface": "pe1", "driver": "memory"}],
            "vrs": vrs,
        })
    }

    /// One edit of the kind the API makes to one VR's entry.
    #[derive(Debug, Clone)]
    enum Edit {
        Add { name: u8, mac: u8, token: Option<u8>, id: Option<u8>, rule: Option<(u8, u8)>, leak: Option<u8> },
        Remove(usize),
        Change(usize, Change),
    }

    #[derive(Debug, Clone)]
    enum Change {
        Mac(u8),
        Token(Option<u8>),
        Rename(u8),
        Id(Option<u8>),
        /// A `udp_dst` rule (port, priority), or none.
        Rule(Option<(u8, u8)>),
        Leak(Option<u8>),
        Kernel(bool),
        Nat(Option<usize>),
        Distribution(usize),
        Port(u8),
    }

    fn rule() -> impl Strategy<Value = Option<(u8, u8)>> {
        proptest::option::of((0u8..2, 0u8..2))
    }

    fn leak() -> impl Strategy<Value = Option<u8>> {
        proptest::option::weighted(0.3, 0u8..12)
    }

    fn edit() -> impl Strategy<Value = Edit> {
        let change = prop_oneof![
            (0u8..14).prop_map(Change::Mac),
            proptest::option::of(1u8..6).prop_map(Change::Token),
            (0u8..12).prop_map(Change::Rename),
            proptest::option::of(0u8..10).prop_map(Change::Id),
            rule().prop_map(Change::Rule),
            leak().prop_map(Change::Leak),
            any::<bool>().prop_map(Change::Kernel),
            proptest::option::of(0usize..3).prop_map(Change::Nat),
            (0usize..3).prop_map(Change::Distribution),
            (0u8..2).prop_map(Change::Port),
        ];
        prop_oneof![
            3 => (0u8..12, 0u8..14, proptest::option::of(1u8..6), proptest::option::of(0u8..10), rule(), leak())
                .prop_map(|(name, mac, token, id, rule, leak)| Edit::Add { name, mac, token, id, rule, leak }),
            2 => (0usize..9).prop_map(Edit::Remove),
            5 => (0usize..9, change).prop_map(|(i, c)| Edit::Change(i, c)),
        ]
    }

    /// Makes `e` to `doc`; returns what it touched, as pearld tells it, and the entry it
    /// replaced or removed. An edit of a VR that is not there does nothing.
    fn apply(doc: &mut Value, e: &Edit) -> Option<(VrEdit, Option<Value>)> {
        let vrs = doc["vrs"].as_array_mut().unwrap();
        let (i, change) = match e {
            &Edit::Add { name, mac, token, id, rule, leak } => {
                vrs.push(vr(name, mac, token, id.map(u16::from)));
                set(vrs.last_mut().unwrap(), &Change::Rule(rule));
                set(vrs.last_mut().unwrap(), &Change::Leak(leak));
                return Some((VrEdit::Added, None));
            }
            &Edit::Remove(i) => {
                let was = (i < vrs.len()).then(|| vrs.remove(i))?;
                return Some((VrEdit::Removed(i), Some(was)));
            }
            Edit::Change(i, change) => (*i, change),
        };
        let was = vrs.get(i)?.clone();
        set(&mut vrs[i], change);
        Some((VrEdit::Changed(i), Some(was)))
    }

    /// Makes `change` to a VR's `entry`.
    fn set(entry: &mut Value, change: &Change) {
        let interface = |port: &Value, mac: &Value| json!([{"name": "eth0", "port": port, "mac": mac, "addresses": ["10.1.0.1/24"]}]);
        let (key, value) = match *change {
            Change::Mac(m) => ("interfaces", Some(interface(&entry["interfaces"][0]["port"], &format!("02:00:00:00:00:{m:02x}").into()))),
            Change::Token(t) => ("token", t.map(|t| format!("{t}").repeat(32).into())),
            Change::Rename(n) => ("name", Some(format!("v{n}").into())),
            Change::Id(id) => ("id", id.map(Value::from)),
            Change::Rule(r) => ("match", r.map(|(v, p)| json!([{"udp_dst": 4000 + u32::from(v), "priority": p}]))),
            Change::Leak(from) => ("leak", from.map(|f| json!([{"from": format!("v{f}"), "prefixes": ["198.51.100.0/24"]}]))),
            Change::Kernel(k) => ("kind", k.then(|| "kernel".into())),
            Change::Nat(n) => ("nat", n.map(|n| json!({"address": "10.1.0.1", "ports": NAT_PORTS[n]}))),
            Change::Distribution(d) => ("distribution", Some(DISTRIBUTIONS[d].into())),
            Change::Port(p) => ("interfaces", Some(interface(&format!("p{p}").into(), &entry["interfaces"][0]["mac"]))),
        };
        let entry = entry.as_object_mut().unwrap();
        match value {
            Some(v) => drop(entry.insert(key.into(), v)),
            None => drop(entry.remove(key)),
        }
    }

    /// Brings `index`, `running`'s, to `new`, which `edit` made of it (`doc` configures it).
    fn advance(index: &mut VrIndex, running: &Config, new: &Config, edit: VrEdit, was: Option<&Value>, doc: &Value) {
        let was = was.unwrap_or(&Value::Null);
        match edit {
            VrEdit::Added => index.insert(running.vrs.len(), new.vrs.last().unwrap(), doc["vrs"].as_array().unwrap().last().unwrap()),
            VrEdit::Removed(r) => index.remove(r, &running.vrs[r], was),
            VrEdit::Changed(c) => {
                index.remove(c, &running.vrs[c], was);
                index.insert(c, &new.vrs[c], &doc["vrs"][c]);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// Along a sequence of one-VR edits, each kept if valid and taken back if not, the index
        /// kept from edit to edit validates exactly as the whole validation does (the same
        /// configuration, or the same words naming the same field), and stays the index a
        /// configuration's VRs make anew.
        #[test]
        fn a_kept_index_validates_an_edit_sequence_as_the_whole_validation_does(
            names in proptest::collection::hash_set(0u8..12, 1..7),
            tokens in proptest::collection::vec(any::<bool>(), 7),
            workers in 1u8..3,
            edits in proptest::collection::vec(edit(), 1..12),
        ) {
            let here = Path::new(".");
            let names: Vec<u8> = names.into_iter().collect();
            let mut doc = node(&names, &tokens, workers);
            let mut running = config_from_document(&doc, here).unwrap();
            let mut index = VrIndex::of(&running, &doc);
            for e in &edits {
                let mut next = doc.clone();
                let Some((touched, was)) = apply(&mut next, e) else { continue };
                let whole = config_from_document(&next, here).map_err(|e| e.to_string());
                // No VR here reads files or is placed `auto`: the index decides every valid
                // edit itself.
                let quick = admitted(&next, here, &running, touched, &index).ok_or(());
                prop_assert_eq!(quick, whole.clone().map_err(|_| ()), "admitted by the index");
                let checked = config_after_vr_edit(&next, here, &running, touched, &index).map_err(|e| e.to_string());
                prop_assert_eq!(&checked, &whole);
                if let Ok(new) = checked {
                    // The id a VR was given is written down, as pearld does (`pin_ids`).
                    for (entry, vr) in next["vrs"].as_array_mut().unwrap().iter_mut().zip(&new.vrs) {
                        entry.as_object_mut().unwrap().entry("id").or_insert(vr.id.into());
                    }
                    advance(&mut index, &running, &new, touched, was.as_ref(), &next);
                    prop_assert_eq!(&index, &VrIndex::of(&new, &next));
                    (running, doc) = (new, next);
                }
            }
        }
    }

    #[test]
    fn a_valid_add_change_and_removal_are_admitted_by_the_index() {
        let here = Path::new(".");
        let doc = node(&[0, 1, 2], &[true, false, true], 1);
        let running = config_from_document(&doc, here).unwrap();
        let index = VrIndex::of(&running, &doc);
        let mut added = doc.clone();
        added["vrs"].as_array_mut().unwrap().push(vr(7, 9, Some(5), None));
        let config = admitted(&added, here, &running, VrEdit::Added, &index).expect("admitted");
        assert_eq!((config.vrs[3].id, &config), (3, &config_from_document(&added, here).unwrap()));
        let mut changed = doc.clone();
        changed["vrs"][1]["match"] = json!([{"udp_dst": 4000}]);
        changed["vrs"][1]["name"] = "v9".into();
        assert!(admitted(&changed, here, &running, VrEdit::Changed(1), &index).is_some());
        let mut removed = doc.clone();
        removed["vrs"].as_array_mut().unwrap().remove(0);
        assert!(admitted(&removed, here, &running, VrEdit::Removed(0), &index).is_some());
        assert_eq!(index.position("v2"), Some(2));
    }
}
