//! `pearlctl impair VR IF [delay=20ms] [jitter=5ms] [loss=1%] [duplicate=0.5%] [rate=10mbit] | off`:
//! what the link out of a VR interface does to packets. The settings given replace the link's
//! (as `tc qdisc replace` would); `off` lifts them; none shows them.

use crate::client::{segment, Client};
use crate::failure::Failure;
use serde_json::{Map, Value};

pub fn set(client: &Client, name: &str, interface: &str, settings: &[String], json: bool) -> Result<(), Failure> {
    if settings.is_empty() {
        return show(client, name, interface, json);
    }
    let body = body(settings)?;
    let path = format!("/v1/vrs/{}/interfaces/{}/impair", segment(name), segment(interface));
    let v = client.call("PUT", &path, Some(&body))?;
    if json {
        println!("{v}");
    } else {
        println!("{name} {interface}: {}", describe(&v["impair"]));
    }
    Ok(())
}

/// `impair VR IF` with no settings: the link's current ones.
fn show(client: &Client, name: &str, interface: &str, json: bool) -> Result<(), Failure> {
    // Not through `vr`, which shows impairments with `describe` from here.
    let vr = client.get(&format!("/v1/vrs/{}", segment(name)))?;
    let found = vr["interfaces"].as_array().into_iter().flatten().find(|i| i["name"] == interface);
    let Some(found) = found else {
        return Err(Failure::new(crate::failure::NOT_FOUND, format!("VR {name:?} has no interface {interface:?}")));
    };
    if json {
        println!("{}", serde_json::json!({"vr": name, "interface": interface, "impair": found["impair"]}));
    } else {
        println!("{name} {interface}: {}", describe(&found["impair"]));
    }
    Ok(())
}

/// The request body: `{}` for `off`, else one field per setting, in the configuration's units.
fn body(settings: &[String]) -> Result<Value, Failure> {
    let mut fields = Map::new();
    if settings.iter().any(|s| s == "off") {
        if settings.len() > 1 {
            return Err(Failure::usage("`off` lifts every impairment; give it alone"));
        }
        return Ok(Value::Object(fields));
    }
    for s in settings {
        let Some((key, value)) = s.split_once('=') else {
            return Err(Failure::usage(format!("{s:?}: expected KEY=VALUE")));
        };
        let (field, number) = match key {
            "delay" | "delay_ms" => ("delay_ms", duration_ms(value)),
            "jitter" | "jitter_ms" => ("jitter_ms", duration_ms(value)),
            "loss" | "loss_percent" => ("loss_percent", percent(value)),
            "duplicate" | "dup" | "duplicate_percent" => ("duplicate_percent", percent(value)),
            "rate" | "rate_mbps" => ("rate_mbps", rate_mbps(value)),
            _ => return Err(Failure::usage(format!("{key:?}: unknown setting (delay, jitter, loss, duplicate, rate)"))),
        };
        let number = number.ok_or_else(|| Failure::usage(format!("{s:?}: {value:?} is not a {}", unit_of(field))))?;
        fields.insert(field.to_string(), Value::from(number));
    }
    Ok(Value::Object(fields))
}

fn unit_of(field: &str) -> &'static str {
    match field {
        "delay_ms" | "jitter_ms" => "duration (20ms, 1.5s, 500us; a bare number is ms)",
        "rate_mbps" => "rate (10mbit, 1gbit, 500kbit; a bare number is Mb/s)",
        _ => "percentage (1% or 1)",
    }
}

fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

fn duration_ms(v: &str) -> Option<f64> {
    let v = v.to_ascii_lowercase();
    for (suffix, scale) in [("ms", 1.0), ("us", 1e-3), ("µs", 1e-3), ("s", 1e3)] {
        if let Some(n) = v.strip_suffix(suffix) {
            return number(n).map(|n| n * scale);
        }
    }
    number(&v)
}

fn percent(v: &str) -> Option<f64> {
    number(v.strip_suffix('%').unwrap_or(v))
}

fn rate_mbps(v: &str) -> Option<f64> {
    let v = v.to_ascii_lowercase();
    for (suffix, scale) in [("gbit", 1e3), ("mbit", 1.0), ("kbit", 1e-3), ("mbps", 1.0), ("gbps", 1e3), ("kbps", 1e-3)] {
        if let Some(n) = v.strip_suffix(suffix) {
            return number(n).map(|n| n * scale);
        }
    }
    number(&v)
}

/// `delay 20 ms ± 5 ms, loss 1 %` or `not impaired`.
pub fn describe(impair: &Value) -> String {
    let f = |k: &str| impair[k].as_f64();
    let mut parts = Vec::new();
    match (f("delay_ms"), f("jitter_ms")) {
        (Some(d), Some(j)) => parts.push(format!("delay {d} ms ± {j} ms")),
        (Some(d), None) => parts.push(format!("delay {d} ms")),
        (None, Some(j)) => parts.push(format!("delay 0 ms ± {j} ms")),
        (None, None) => {}
    }
    if let Some(l) = f("loss_percent") {
        parts.push(format!("loss {l} %"));
    }
    if let Some(d) = f("duplicate_percent") {
        parts.push(format!("duplicate {d} %"));
    }
    if let Some(r) = f("rate_mbps") {
        parts.push(format!("rate {r} Mb/s"));
    }
    if parts.is_empty() {
        "not impaired".to_string()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn settings_become_the_configurations_fields() {
        let b = body(&args("delay=20ms jitter=1.5ms loss=1% duplicate=0.5 rate=1gbit")).unwrap();
        assert_eq!(b, json!({"delay_ms": 20.0, "jitter_ms": 1.5, "loss_percent": 1.0, "duplicate_percent": 0.5, "rate_mbps": 1000.0}));
        assert_eq!(body(&args("delay=1.5s rate=500kbit")).unwrap(), json!({"delay_ms": 1500.0, "rate_mbps": 0.5}));
        assert_eq!(body(&args("delay=250us")).unwrap(), json!({"delay_ms": 0.25}));
        assert_eq!(body(&args("off")).unwrap(), json!({}));
    }

    #[test]
    fn bad_settings_are_usage_errors_naming_them() {
        for (s, want) in [
            ("delay=fast", "\"delay=fast\": \"fast\" is not a duration"),
            ("latency=20ms", "\"latency\": unknown setting"),
            ("delay", "\"delay\": expected KEY=VALUE"),
            ("off delay=20ms", "`off` lifts every impairment"),
            ("loss=lots%", "is not a percentage"),
        ] {
            let f = body(&args(s)).unwrap_err();
            assert_eq!(f.code, 2, "{s}");
            assert!(f.message.contains(want), "{s}: {}", f.message);
        }
    }

    #[test]
    fn descriptions_read_as_a_sentence() {
        assert_eq!(describe(&json!({"delay_ms": 20.0, "jitter_ms": 5.0, "loss_percent": 1.0})), "delay 20 ms ± 5 ms, loss 1 %");
        assert_eq!(describe(&json!({})), "not impaired");
    }
}
