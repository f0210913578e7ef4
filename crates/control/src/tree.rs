//! YAML trees as JSON values: the document the API edits and the parser reads is the YAML tree
//! as JSON.

use crate::error::ConfigError;
use serde_json::{Map, Number, Value};
use yaml_rust2::Yaml;

pub(crate) fn to_json(y: &Yaml, path: &str) -> Result<Value, ConfigError> {
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
        Yaml::Array(a) => Value::Array(a.iter().enumerate().map(|(i, v)| to_json(v, &format!("{path}[{i}]"))).collect::<Result<_, _>>()?),
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
