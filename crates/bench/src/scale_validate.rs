//! Validating a one-VR change on a node of N VRs (issue 15: a VR created at run time within
//! 20 ms), as pearld validates one: the document edited in place, then checked against the
//! running configuration. The median of adding one VR to N and removing it again, the way
//! before the index of cross-VR claims (`config_from_document_since`, which runs the checks
//! across VRs over all of them) and with it (`config_after_vr_edit`), alternately, so that a
//! noisy machine weighs on both alike.

use crate::report::median;
use pearl_control::{config_after_vr_edit, config_from_document, config_from_document_since, Config, Unchanged, VrEdit, VrIndex};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;

/// Medians over the repeats, in milliseconds.
pub struct Validation {
    pub add_ms: f64,
    pub remove_ms: f64,
    pub indexed_add_ms: f64,
    pub indexed_remove_ms: f64,
    /// Bringing the index up to date after a change.
    pub index_update_ms: f64,
    /// Making the index of N VRs anew (after a whole new document).
    pub index_build_ms: f64,
}

/// VR `v` of the node: fast, two interfaces on the two ports, MACs of its own, id pinned.
fn entry(v: usize) -> Value {
    let mac = |i: usize| format!("02:00:{:02x}:{:02x}:01:{i:02x}", v >> 8, v & 0xff);
    let interface = |i: usize| json!({"name": format!("eth{i}"), "port": format!("p{i}"), "mac": mac(i), "addresses": [format!("10.{}.0.1/24", i + 1)]});
    json!({"name": format!("vr{v}"), "id": v, "kind": "fast", "interfaces": [interface(0), interface(1)]})
}

/// `repeat` times: one VR added to `vrs`, then removed, each validated both ways.
pub fn timed(vrs: usize, repeat: usize) -> Result<Validation, String> {
    let here = Path::new(".");
    let ports: Vec<Value> = (0..2).map(|i| json!({"name": format!("p{i}"), "interface": format!("pv{i}"), "driver": "memory"})).collect();
    let mut doc = json!({"ports": ports, "vrs": (0..vrs).map(entry).collect::<Vec<_>>()});
    let base = config_from_document(&doc, here).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let mut index = VrIndex::of(&base, &doc);
    let index_build_ms = t.elapsed().as_secs_f64() * 1e3;
    let (mut adds, mut removes, mut indexed_adds, mut indexed_removes, mut updates) = (vec![], vec![], vec![], vec![], vec![]);
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    for _ in 0..repeat {
        // Without the index.
        vrs_of(&mut doc).push(entry(vrs));
        let t = Instant::now();
        let grown = config_from_document_since(&doc, here, &base, Unchanged::AllBut(VrEdit::Added)).map_err(|e| e.to_string())?;
        adds.push(ms(t));
        let gone = vrs_of(&mut doc).pop().expect("added");
        let t = Instant::now();
        let back = config_from_document_since(&doc, here, &grown, Unchanged::AllBut(VrEdit::Removed(vrs))).map_err(|e| e.to_string())?;
        removes.push(ms(t));
        drop((grown, back));
        // With it, kept up to date as pearld keeps it.
        vrs_of(&mut doc).push(gone);
        let t = Instant::now();
        let grown = config_after_vr_edit(&doc, here, &base, VrEdit::Added, &index).map_err(|e| e.to_string())?;
        indexed_adds.push(ms(t));
        let t = Instant::now();
        index.insert(vrs, &grown.vrs[vrs], &doc["vrs"][vrs]);
        updates.push(ms(t));
        let gone = vrs_of(&mut doc).pop().expect("added");
        let t = Instant::now();
        let back = config_after_vr_edit(&doc, here, &grown, VrEdit::Removed(vrs), &index).map_err(|e| e.to_string())?;
        indexed_removes.push(ms(t));
        index.remove(vrs, &grown.vrs[vrs], &gone);
        check_same(&back, &base)?;
    }
    Ok(Validation {
        add_ms: median(adds),
        remove_ms: median(removes),
        indexed_add_ms: median(indexed_adds),
        indexed_remove_ms: median(indexed_removes),
        index_update_ms: median(updates),
        index_build_ms,
    })
}

fn vrs_of(doc: &mut Value) -> &mut Vec<Value> {
    doc["vrs"].as_array_mut().expect("vrs")
}

fn check_same(a: &Config, b: &Config) -> Result<(), String> {
    (a == b).then_some(()).ok_or_else(|| "adding and removing a VR did not give the node back".to_string())
}
