//! Two configuration documents compared as a person reads them: VRs and ports by name (and
//! which keys of an entry differ), the other keys by key. What tells a refused start what the
//! file and the stored state disagree on, and the audit which VRs a whole document touched.

use serde_json::Value;
use std::collections::HashMap;

/// One thing that differs between a first and a second document.
#[derive(Debug, PartialEq, Eq)]
pub enum Diff<'a> {
    /// Entry `name` of list `list` (`vrs`, `ports`) is in one document only.
    Only { list: &'a str, name: &'a str, in_first: bool },
    /// Entry `name` of list `list` is in both, with these keys differing.
    Changed { list: &'a str, name: &'a str, keys: Vec<&'a str> },
    /// A key outside the named lists differs.
    Key(&'a str),
}

/// What differs, in the order of the keys, the second document's entries first. An `id` only
/// one side states is no difference: the daemon pins ids on entries that give none.
pub fn compare<'a>(first: &'a Value, second: &'a Value) -> Vec<Diff<'a>> {
    let mut out = Vec::new();
    let keys = |d: &'a Value| d.as_object().into_iter().flat_map(|m| m.keys().map(String::as_str));
    let mut all: Vec<&str> = keys(first).chain(keys(second)).collect();
    all.sort_unstable();
    all.dedup();
    for key in all {
        let (f, s) = (first.get(key).unwrap_or(&Value::Null), second.get(key).unwrap_or(&Value::Null));
        match (named(f), named(s)) {
            (Some(f), Some(s)) => by_name(key, &f, &s, &mut out),
            _ if f != s => out.push(Diff::Key(key)),
            _ => {}
        }
    }
    out
}

/// The entries of a list whose every item has a name (VRs, ports), by name.
fn named(v: &Value) -> Option<Vec<(&str, &Value)>> {
    match v {
        Value::Null => Some(Vec::new()),
        Value::Array(items) => items.iter().map(|i| Some((i.get("name")?.as_str()?, i))).collect(),
        _ => None,
    }
}

fn by_name<'a>(list: &'a str, first: &[(&'a str, &'a Value)], second: &[(&'a str, &'a Value)], out: &mut Vec<Diff<'a>>) {
    // By name through a map: documents of thousands of VRs are compared at start.
    let firsts: HashMap<&str, &Value> = first.iter().copied().collect();
    let seconds: HashMap<&str, &Value> = second.iter().copied().collect();
    for &(name, s) in second {
        match firsts.get(name) {
            None => out.push(Diff::Only { list, name, in_first: false }),
            Some(f) => {
                let keys = changed_keys(f, s);
                if !keys.is_empty() {
                    out.push(Diff::Changed { list, name, keys });
                }
            }
        }
    }
    for &(name, _) in first {
        if !seconds.contains_key(name) {
            out.push(Diff::Only { list, name, in_first: true });
        }
    }
}

fn changed_keys<'a>(first: &'a Value, second: &'a Value) -> Vec<&'a str> {
    let (Some(f), Some(s)) = (first.as_object(), second.as_object()) else {
        return if first == second { Vec::new() } else { vec!["the entry"] };
    };
    let mut keys: Vec<&str> =
        f.keys().chain(s.keys()).map(String::as_str).filter(|k| *k != "id" || (f.contains_key("id") && s.contains_key("id"))).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter().filter(|k| f.get(*k) != s.get(*k)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_are_matched_by_name_and_ids_only_one_side_states_are_no_difference() {
        let first = json!({"workers": 1, "ports": [{"name": "p0", "interface": "a"}], "vrs": [{"name": "red", "kind": "kernel"}, {"name": "blue"}]});
        let second = json!({"workers": 2, "ports": [{"name": "p0", "interface": "b"}, {"name": "p1"}],
                            "vrs": [{"name": "red", "kind": "kernel", "id": 3, "routes": []}, {"name": "green", "id": 4}]});
        assert_eq!(
            compare(&first, &second),
            [
                Diff::Changed { list: "ports", name: "p0", keys: vec!["interface"] },
                Diff::Only { list: "ports", name: "p1", in_first: false },
                Diff::Changed { list: "vrs", name: "red", keys: vec!["routes"] },
                Diff::Only { list: "vrs", name: "green", in_first: false },
                Diff::Only { list: "vrs", name: "blue", in_first: true },
                Diff::Key("workers"),
            ]
        );
        assert!(compare(&first, &first).is_empty());
        let renumbered = json!({"vrs": [{"name": "red", "id": 1}]});
        assert_eq!(
            compare(&renumbered, &json!({"vrs": [{"name": "red", "id": 2}]}))[0],
            Diff::Changed { list: "vrs", name: "red", keys: vec!["id"] }
        );
    }
}
