//! A document as YAML text that [`crate::document_from_yaml`] reads back to the same document:
//! `pearlctl config export`, which makes a configuration file of the running desired state.
//! Block style, as the files are written by hand; a string is plain only where YAML would read
//! it back as that very string, else quoted (JSON's escapes are YAML's).

use serde_json::Value;
use yaml_rust2::Yaml;

/// The document as YAML text, one key per line.
pub fn document_to_yaml(doc: &Value) -> String {
    let mut out = String::new();
    match doc {
        Value::Object(m) if !m.is_empty() => block(doc, 0, &mut out),
        _ => {
            out += &inline(doc);
            out.push('\n');
        }
    }
    out
}

/// A non-empty mapping or list, each line indented by `indent` spaces.
fn block(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                out.push_str(&pad);
                out.push_str(&scalar(k));
                out.push(':');
                nested(v, indent + 2, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        // The mapping's first key on the dash's line, the others below it.
                        let mut inner = String::new();
                        block(item, indent + 2, &mut inner);
                        out.push_str(&pad);
                        out.push_str("- ");
                        out.push_str(&inner[indent + 2..]);
                    }
                    _ => {
                        out.push_str(&pad);
                        out.push('-');
                        nested(item, indent + 2, out);
                    }
                }
            }
        }
        _ => unreachable!("block() is given mappings and lists"),
    }
}

/// What follows a key's colon or a dash: a value on the same line, or a block on the next.
fn nested(v: &Value, indent: usize, out: &mut String) {
    let is_block = match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    };
    if is_block {
        out.push('\n');
        block(v, indent, out);
    } else {
        out.push(' ');
        out.push_str(&inline(v));
        out.push('\n');
    }
}

/// A scalar, an empty mapping or an empty list, on one line.
fn inline(v: &Value) -> String {
    match v {
        Value::String(s) => scalar(s),
        Value::Null => "null".into(),
        // Numbers and flags as JSON writes them, which YAML reads alike (a float keeps its point).
        _ => v.to_string(),
    }
}

/// `s` plain if YAML reads it back as this string, else double-quoted.
fn scalar(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
        && matches!(Yaml::from_str(s), Yaml::String(_));
    if plain {
        s.to_string()
    } else {
        Value::String(s.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{config_from_document, document_from_yaml};
    use proptest::prelude::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn a_document_reads_as_a_hand_written_file() {
        let doc = json!({"workers": 1, "ports": [{"name": "p0", "interface": "pe0"}],
                         "vrs": [{"name": "red", "id": 0, "interfaces": [{"name": "eth0", "port": "p0", "mac": "02:00:00:00:01:00",
                                  "addresses": ["10.0.0.1/24"]}], "routes": [], "limits": {}}]});
        let text = document_to_yaml(&doc);
        assert_eq!(
            text,
            "ports:\n  - interface: pe0\n    name: p0\nvrs:\n  - id: 0\n    interfaces:\n      - addresses:\n          - 10.0.0.1/24\n        \
             mac: \"02:00:00:00:01:00\"\n        name: eth0\n        port: p0\n    limits: {}\n    name: red\n    routes: []\nworkers: 1\n"
        );
        assert_eq!(document_from_yaml(&text).unwrap(), doc);
    }

    /// Strings YAML would read as something else if they were written plain.
    const TRICKY: &[&str] =
        &["true", "null", "~", "0x1f", "0o17", "+5", "1e3", ".inf", "-", "- a", "a: b", "#c", "", " x", "é", "a\nb", "\"q\"", "y", "1.0"];

    fn string() -> impl Strategy<Value = String> {
        prop_oneof![proptest::sample::select(TRICKY).prop_map(str::to_string), "[ -~\\n\\té]{0,8}", "[a-z0-9_./-]{1,8}"]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            string().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::btree_map(string(), inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A valid node: ports, VRs of each kind with interfaces, addresses, routes and queues.
    fn node() -> impl Strategy<Value = Value> {
        let vr = (proptest::sample::select(&["fast", "kernel", "shared"][..]), 1u8..4, proptest::option::of(1u16..500));
        (1u8..3, proptest::collection::btree_map(0u8..40, vr, 0..6)).prop_map(|(workers, vrs)| {
            let vrs: Vec<Value> = vrs
                .into_iter()
                .enumerate()
                .map(|(i, (name, (kind, queues, rate)))| {
                    let mut v = json!({
                        "name": format!("vr{name}"),
                        "id": i,
                        "kind": kind,
                        "interfaces": [{"name": "eth0", "port": "p0", "mac": format!("02:{i:02x}:00:00:00:00"), "addresses": [format!("10.{i}.0.1/24")]},
                                       {"name": "eth1", "port": "p1", "mac": format!("02:{i:02x}:00:00:00:01"), "addresses": [format!("10.{i}.1.1/24")]}],
                        "routes": [{"prefix": format!("198.51.{i}.0/24"), "via": format!("10.{i}.1.2")}],
                    });
                    if kind == "fast" {
                        v["queues"] = (0..queues).map(|q| json!({"weight": q + 1, "length": 256})).collect();
                    }
                    if let Some(r) = rate {
                        v["limits"] = json!({"rate_mbps": r});
                    }
                    v
                })
                .collect();
            json!({"workers": workers, "ports": [{"name": "p0", "interface": "pe0", "rx": "af_packet"}, {"name": "p1", "interface": "pe1"}], "vrs": vrs})
        })
    }

    proptest! {
        #[test]
        fn any_document_reads_back_the_same(doc in proptest::collection::btree_map(string(), value(), 0..6)) {
            let doc = Value::Object(doc.into_iter().collect());
            let text = document_to_yaml(&doc);
            prop_assert_eq!(document_from_yaml(&text).map_err(|e| e.to_string()), Ok(doc), "{}", text);
        }

        #[test]
        fn a_valid_node_reads_back_to_the_same_configuration(doc in node()) {
            let here = Path::new(".");
            let config = config_from_document(&doc, here).map_err(|e| e.to_string());
            prop_assert!(config.is_ok(), "{:?}", config);
            let back = document_from_yaml(&document_to_yaml(&doc)).unwrap();
            prop_assert_eq!(&back, &doc);
            prop_assert_eq!(config_from_document(&back, here).map_err(|e| e.to_string()), config);
        }
    }
}
