//! The configuration as a document: the YAML tree as JSON, which the API edits and the store
//! keeps. A document becomes a `Config` by the same validation a file goes through, so a
//! change made at run time is held to exactly the rules of the file.

use crate::error::ConfigError;
use crate::model::Config;
use crate::parse::parse_yaml_in;
use crate::tree::{to_json, to_yaml};
use serde_json::{Map, Value};
use std::path::Path;
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
    // JSON is YAML: the document goes through the file's validation unchanged, as the tree
    // the file's text would parse into (no text in between: thousands of VRs are megabytes).
    parse_yaml_in(&to_yaml(doc), base_dir)
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn a_document_becomes_the_tree_its_json_text_parses_into() {
        let mut docs: Vec<Value> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .map(|p| document_from_yaml(&std::fs::read_to_string(p).unwrap()).unwrap())
            .collect();
        assert!(docs.len() >= 2);
        docs.push(document_from_yaml(TEXT).unwrap());
        docs.push(serde_json::json!({"a": [1.5, -7, 18446744073709551615u64, "0x10", "10", true, null, {"yes": "no"}]}));
        for doc in docs {
            let parsed = YamlLoader::load_from_str(&doc.to_string()).unwrap();
            assert_eq!(to_yaml(&doc), parsed[0], "{doc}");
        }
    }
}
