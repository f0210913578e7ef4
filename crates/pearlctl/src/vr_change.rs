//! `pearlctl vr create|delete|set|migrate`: VRs made, removed and changed while the others forward.
//! pearld validates the whole resulting configuration and applies it atomically, so a refusal
//! (which names the field) leaves everything as it was.

use crate::client::Client;
use crate::failure::Failure;
use crate::settings::{self, DEFINING, SETTABLE};
use crate::vr;
use serde_json::{json, Map, Value};

/// `vr create -f FILE`: one VR as an item of the configuration's `vrs:` list (YAML or JSON).
pub fn create_from_file(client: &Client, file: &str, json: bool) -> Result<(), Failure> {
    let bad = |why: String| Failure::usage(format!("-f {file}: {why}"));
    let text = std::fs::read_to_string(file).map_err(|e| bad(e.to_string()))?;
    let doc = pearl_control::document_from_yaml(&text).map_err(|e| bad(e.to_string()))?;
    let one = match &doc {
        Value::Object(o) if o.contains_key("vrs") => match doc["vrs"].as_array().map(Vec::as_slice) {
            Some([vr]) => vr.clone(),
            _ => return Err(bad("holds a configuration; give one VR (one item of its vrs: list)".into())),
        },
        Value::Array(a) if a.len() == 1 => a[0].clone(),
        Value::Object(_) => doc,
        _ => return Err(bad("give one VR: a mapping with name, interfaces, …".into())),
    };
    create_vr(client, &one, json)
}

/// `vr create NAME --interface name=eth0,port=p0,mac=02:…,address=10.1.0.1/24 … [KEY=VALUE…]`.
pub fn create(client: &Client, name: &str, interfaces: &[String], words: &[String], json: bool) -> Result<(), Failure> {
    if interfaces.is_empty() {
        return Err(Failure::usage("vr create NAME needs --interface name=I,port=P,mac=M[,address=A/L…] (or -f FILE)"));
    }
    let mut vr = Map::new();
    vr.insert("name".into(), name.into());
    vr.insert("interfaces".into(), interfaces.iter().map(|s| interface(s)).collect::<Result<Vec<_>, _>>()?.into());
    let keys: Vec<&str> = SETTABLE.iter().chain(DEFINING).copied().collect();
    settings::apply(&mut vr, words, &json!({}), &keys)?;
    create_vr(client, &Value::Object(vr), json)
}

fn create_vr(client: &Client, vr: &Value, json: bool) -> Result<(), Failure> {
    let made = client.call("POST", "/v1/vrs", Some(vr))?;
    if json {
        println!("{made}");
    } else {
        println!("created VR {} (id {}, namespace {})", text(&made["name"]), made["id"], text(&made["namespace"]));
    }
    Ok(())
}

/// `name=eth0,port=p0,mac=02:00:00:00:01:00,address=10.1.0.1/24,address=2001:db8::1/64`.
fn interface(spec: &str) -> Result<Value, Failure> {
    let mut i = json!({"addresses": []});
    for part in spec.split(',') {
        match part.split_once('=') {
            Some(("address", a)) => i["addresses"].as_array_mut().expect("array").push(a.into()),
            Some((k @ ("name" | "port" | "mac"), v)) => i[k] = v.into(),
            _ => {
                return Err(Failure::usage(format!(
                    "--interface {spec:?}: {part:?} is not name=, port=, mac= or address= \
                     (e.g. name=eth0,port=p0,mac=02:00:00:00:01:00,address=10.1.0.1/24)"
                )))
            }
        }
    }
    Ok(i)
}

pub fn delete(client: &Client, name: &str, json: bool) -> Result<(), Failure> {
    let done = client.call("DELETE", &vr::path(name, ""), None).map_err(vr::unknown(name))?;
    if json {
        println!("{done}");
    } else {
        println!("deleted VR {name}");
    }
    Ok(())
}

/// `vr set NAME KEY=VALUE…`: one PATCH of the keys given.
pub fn set(client: &Client, name: &str, words: &[String], json: bool) -> Result<(), Failure> {
    if words.is_empty() {
        return Err(Failure::usage(format!("vr set {name} needs KEY=VALUE (keys: {}, limits.NAME, resources.NAME)", SETTABLE.join(", "))));
    }
    // A single limit or resource changes against the VR's current ones.
    let one_at_a_time = words.iter().any(|w| w.starts_with("limits.") || w.starts_with("resources."));
    let current = if one_at_a_time { vr::get(client, name)? } else { json!({}) };
    let mut patch = Map::new();
    settings::apply(&mut patch, words, &current, SETTABLE)?;
    let changed = client.call("PATCH", &vr::path(name, ""), Some(&Value::Object(patch.clone()))).map_err(vr::unknown(name))?;
    if json {
        println!("{changed}");
    } else {
        println!("changed VR {name}: {}", patch.keys().cloned().collect::<Vec<_>>().join(", "));
    }
    Ok(())
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// `vr migrate NAME --to fast|kernel`.
pub fn migrate(client: &Client, name: &str, to: &str, json: bool) -> Result<(), Failure> {
    let moved = client.call("POST", &vr::path(name, "/migrate"), Some(&json!({ "to": to }))).map_err(vr::unknown(name))?;
    if json {
        println!("{moved}");
    } else {
        println!(
            "moved VR {name} from the {} data plane to the {} one in {} ms",
            text(&moved["from"]),
            text(&moved["to"]),
            moved["duration_ms"]
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interface_spec_is_an_interface_of_the_configuration() {
        let i = interface("name=eth0,port=p0,mac=02:00:00:00:01:00,address=10.1.0.1/24,address=2001:db8::1/64").unwrap();
        assert_eq!(i, json!({"name": "eth0", "port": "p0", "mac": "02:00:00:00:01:00", "addresses": ["10.1.0.1/24", "2001:db8::1/64"]}));
        assert!(interface("name=eth0,speed=10").unwrap_err().message.contains("\"speed=10\" is not name="));
    }
}
