//! `pearlctl filter list|add|del`: a VR's classifier rules, its `match` list. Conditions are
//! the configuration's keys (`udp_dst=4000`, `ethertype=0x88b5`, `ip_dst=10.9.0.0/16`,
//! `vlan=0x10/0xff0` for value/mask) plus `priority=N` and `queue=N`; a `code: filter` VR's
//! rules add their action: `out=IFACE [mac=NEXT_HOP]`, `slow` or `drop`.

use crate::client::Client;
use crate::failure::Failure;
use crate::table::Table;
use crate::vr;
use serde_json::{json, Map, Value};

pub fn list(client: &Client, name: &str, json: bool) -> Result<(), Failure> {
    let v = client.get(&vr::path(name, "/filters")).map_err(vr::unknown(name))?;
    if json {
        println!("{v}");
        return Ok(());
    }
    let mut t = Table::new(&["index", "priority", "queue", "action", "conditions"], 0).text_last();
    for (i, r) in v["match"].as_array().into_iter().flatten().enumerate() {
        let n = |k: &str| r.get(k).map_or("default".to_string(), Value::to_string);
        let word = |(k, v): (&str, &Value)| if v == &Value::Bool(true) { k.to_string() } else { format!("{k}={}", condition_text(v)) };
        let action: Vec<String> = ACTION_KEYS.iter().filter_map(|&k| Some(word((k, r.get(k)?)))).collect();
        let action = if action.is_empty() { "queue".to_string() } else { action.join(" ") };
        let conditions: Vec<String> = r
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !matches!(k.as_str(), "priority" | "queue") && !ACTION_KEYS.contains(&k.as_str()))
            .map(|(k, v)| word((k, v)))
            .collect();
        t.row(vec![i.to_string(), n("priority"), n("queue"), action, conditions.join(" ")]);
    }
    print!("{}", t.render());
    Ok(())
}

pub fn add(client: &Client, name: &str, words: &[String], json: bool) -> Result<(), Failure> {
    let rule = rule(words)?;
    let v = client.call("POST", &vr::path(name, "/filters"), Some(&rule)).map_err(vr::unknown(name))?;
    if json {
        println!("{v}");
    } else {
        let index = v["match"].as_array().map_or(0, |l| l.len().saturating_sub(1));
        println!("added rule {index} to VR {name}");
    }
    Ok(())
}

pub fn del(client: &Client, name: &str, index: &str, json: bool) -> Result<(), Failure> {
    let i: usize = index
        .parse()
        .map_err(|_| Failure::usage(format!("filter del: {index:?} is not a rule index (`pearlctl filter list {name}` shows them)")))?;
    let v = client.call("DELETE", &vr::path(name, &format!("/filters/{i}")), None)?;
    if json {
        println!("{v}");
    } else {
        println!("removed rule {i} from VR {name}");
    }
    Ok(())
}

/// `KEY=VALUE` words as one rule: numbers (decimal or 0x) as numbers, `V/M` of two numbers as
/// `{value, mask}`, anything else (addresses, prefixes, port names) as text.
pub(crate) fn rule(words: &[String]) -> Result<Value, Failure> {
    if words.is_empty() {
        return Err(Failure::usage("filter add VR needs conditions, e.g. udp_dst=4000 [priority=N] [queue=N]"));
    }
    let mut r = Map::new();
    for w in words {
        if matches!(w.as_str(), "slow" | "drop") {
            r.insert(w.clone(), true.into());
            continue;
        }
        let (k, v) =
            w.split_once('=').ok_or_else(|| Failure::usage(format!("{w:?}: give KEY=VALUE, e.g. udp_dst=4000 or ethertype=0x88b5")))?;
        let masked = v.split_once('/').and_then(|(a, b)| Some(json!({"value": number(a)?, "mask": number(b)?})));
        let value = number(v).map(Value::from).or(masked).unwrap_or_else(|| v.into());
        r.insert(k.to_string(), value);
    }
    Ok(Value::Object(r))
}

/// A `code: filter` VR's rule's action, which `list` shows apart from the conditions.
const ACTION_KEYS: [&str; 4] = ["out", "mac", "slow", "drop"];

fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn condition_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(o) => format!("{}/{}", o.get("value").unwrap_or(&Value::Null), o.get("mask").unwrap_or(&Value::Null)),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_become_a_rule_of_the_configuration() {
        let words: Vec<String> = ["udp_dst=4000", "ethertype=0x88b5", "ip_dst=10.9.0.0/16", "vlan=0x10/0xff0", "in_port=p0", "priority=20"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            rule(&words).unwrap(),
            json!({"udp_dst": 4000, "ethertype": 0x88b5, "ip_dst": "10.9.0.0/16", "vlan": {"value": 16, "mask": 0xff0},
                   "in_port": "p0", "priority": 20})
        );
        assert_eq!(rule(&["udp_dst".to_string()]).unwrap_err().code, crate::failure::USAGE);
        let filter: Vec<String> = ["udp_dst=5000", "out=eth1", "mac=02:00:00:00:00:02"].map(String::from).to_vec();
        assert_eq!(rule(&filter).unwrap(), json!({"udp_dst": 5000, "out": "eth1", "mac": "02:00:00:00:00:02"}));
        assert_eq!(rule(&["ip_proto=1".to_string(), "drop".to_string()]).unwrap(), json!({"ip_proto": 1, "drop": true}));
    }
}
