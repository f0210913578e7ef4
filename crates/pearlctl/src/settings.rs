//! `KEY=VALUE` words of `vr set` and `vr create`, as the keys of a VR in the configuration:
//!
//!   queues=3:256,1:256          weight:length per queue (length optional: `queues=3,1`)
//!   limits.rate_mbps=100        one limit (`none` lifts the rate cap); others stay as they are
//!   resources.pps=500000        one resource asked for, likewise
//!   routes=[{prefix: 198.51.100.0/24, via: 10.2.0.2}]
//!                               any key as YAML (flow style), as in the configuration file
//!   KEY=none                    removes the key (back to its default)

use crate::failure::Failure;
use serde_json::{json, Map, Value};

/// What `vr set` may change on a running VR.
pub use pearl_control::SETTABLE_VR_KEYS as SETTABLE;
/// What `vr create` may state besides the settable keys and interfaces.
pub const DEFINING: &[&str] = &["kind", "id"];

/// Keys whose entries a `KEY.NAME=` word changes one at a time.
const ONE_AT_A_TIME: [&str; 2] = ["limits", "resources"];

/// Applies `words` to `vr` (a VR's keys). `current` is the VR as it is (its `limits` and
/// `resources`, which `limits.X=` and `resources.X=` words change one entry at a time);
/// `keys` are the keys allowed.
pub fn apply(vr: &mut Map<String, Value>, words: &[String], current: &Value, keys: &[&str]) -> Result<(), Failure> {
    for word in words {
        let (key, text) = word
            .split_once('=')
            .ok_or_else(|| Failure::usage(format!("{word:?}: give KEY=VALUE (keys: {}, limits.NAME, resources.NAME)", keys.join(", "))))?;
        if let Some((whole, entry)) = key.split_once('.').filter(|(w, _)| ONE_AT_A_TIME.contains(w)) {
            if !keys.contains(&whole) {
                return Err(Failure::usage(format!("{key} cannot be set here")));
            }
            let now = vr.get(whole).cloned().filter(Value::is_object).unwrap_or_else(|| current[whole].clone());
            let mut l = now.as_object().cloned().unwrap_or_default();
            match value(text)? {
                Value::Null => l.remove(entry),
                v => l.insert(entry.to_string(), v),
            };
            vr.insert(whole.into(), Value::Object(l));
            continue;
        }
        if !keys.contains(&key) {
            return Err(Failure::usage(format!(
                "{key:?} is not a key this command sets; use one of: {}, limits.NAME, resources.NAME",
                keys.join(", ")
            )));
        }
        let v = if key == "queues" && text != "none" { queues(text.split(','))? } else { value(text)? };
        vr.insert(key.to_string(), v);
    }
    Ok(())
}

/// A value as YAML; `none` is null.
pub fn value(text: &str) -> Result<Value, Failure> {
    if text == "none" {
        return Ok(Value::Null);
    }
    pearl_control::document_from_yaml(text).map_err(|e| Failure::usage(format!("{text:?} is not a YAML value: {e}")))
}

/// `WEIGHT[:LENGTH]` each.
pub fn queues<'a>(specs: impl Iterator<Item = &'a str>) -> Result<Value, Failure> {
    let number = |s: &str, what: &str, spec: &str| {
        s.parse::<u64>()
            .map_err(|_| Failure::usage(format!("queue {spec:?}: the {what} {s:?} is not a number (WEIGHT:LENGTH, e.g. 3:256)")))
    };
    let mut out = Vec::new();
    for spec in specs {
        let (w, l) = match spec.split_once(':') {
            Some((w, l)) => (w, Some(l)),
            None => (spec, None),
        };
        let mut q = json!({"weight": number(w, "weight", spec)?});
        if let Some(l) = l {
            q["length"] = number(l, "length", spec)?.into();
        }
        out.push(q);
    }
    if out.is_empty() {
        return Err(Failure::usage("give at least one queue as WEIGHT:LENGTH"));
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn words_become_a_vrs_keys() {
        let mut vr = Map::new();
        let limits = json!({"limits": {"rate_mbps": 50, "filters": 10}, "resources": {"pps": 10}});
        let mut set = words("queues=3:256,1 limits.rate_mbps=100 limits.filters=none resources.bandwidth_mbps=20");
        set.push("routes=[{prefix: 10.9.0.0/16, via: 10.1.0.2}]".into());
        apply(&mut vr, &set, &limits, SETTABLE).unwrap();
        assert_eq!(vr["queues"], json!([{"weight": 3, "length": 256}, {"weight": 1}]));
        assert_eq!(vr["limits"], json!({"rate_mbps": 100}));
        assert_eq!(vr["resources"], json!({"pps": 10, "bandwidth_mbps": 20}));
        assert_eq!(vr["routes"], json!([{"prefix": "10.9.0.0/16", "via": "10.1.0.2"}]));
        apply(&mut vr, &words("match=none"), &limits, SETTABLE).unwrap();
        assert_eq!(vr["match"], Value::Null);
    }

    #[test]
    fn mistakes_are_usage_errors_that_say_what_to_write() {
        for (bad, says) in [
            ("queues", "give KEY=VALUE"),
            ("kind=kernel", "not a key this command sets"),
            ("queues=3:x", "the length \"x\" is not a number"),
            ("routes=[unclosed", "not a YAML value"),
        ] {
            let f = apply(&mut Map::new(), &words(bad), &json!({}), SETTABLE).unwrap_err();
            assert_eq!(f.code, crate::failure::USAGE);
            assert!(f.message.contains(says), "{bad}: {}", f.message);
        }
    }
}
