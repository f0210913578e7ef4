//! The configuration as a document: the YAML tree as JSON, which the API edits and the store
//! keeps. A document becomes a `Config` by the same validation a file goes through, so a
//! change made at run time is held to exactly the rules of the file.

use crate::error::ConfigError;
use crate::model::Config;
use crate::parse::parse_config_in;
use serde_json::{Map, Number, Value};
use std::path::Path;
use yaml_rust2::{Yaml, YamlLoader};

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
    // JSON is YAML, so the document goes through the file's parser unchanged.
    parse_config_in(&doc.to_string(), base_dir)
}

fn to_json(y: &Yaml, path: &str) -> Result<Value, ConfigError> {
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::Number((*i).into()),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| ConfigError::at(path, format!("{r} is not a number JSON can hold")))?,
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(a) => Value::Array(
            a.iter().enumerate().map(|(i, v)| to_json(v, &format!("{path}[{i}]"))).collect::<Result<_, _>>()?,
        ),
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    _ => return Err(ConfigError::at(path, "mapping keys must be plain words")),
                };
                let child = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                m.insert(key, to_json(v, &child)?);
            }
            Value::Object(m)
        }
        Yaml::Alias(_) | Yaml::BadValue => return Err(ConfigError::at(path, "unsupported YAML value")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
