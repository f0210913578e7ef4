//! `pearlctl vr list` and `pearlctl vr show NAME`: what the VRs are (kind, code option, ports,
//! interfaces, routes, queues, limits), from `GET /v1/vrs`.

use crate::client::{segment, Client};
use crate::failure::{Failure, NOT_FOUND};
use crate::table::Table;
use serde_json::Value;

/// `query` picks the VRs (`?name=…&limit=…`, or "" for all).
pub fn list(client: &Client, query: &str, json: bool) -> Result<(), Failure> {
    let v = client.get(&format!("/v1/vrs{query}"))?;
    if json {
        println!("{v}");
        return Ok(());
    }
    let mut t = Table::new(&["vr", "kind", "code", "ports", "id", "interfaces", "routes", "queues"], 4);
    for vr in v["vrs"].as_array().into_iter().flatten() {
        t.row(vec![
            text(&vr["name"]),
            text(&vr["kind"]),
            program(vr),
            strings(&vr["ports"]).join(","),
            vr["id"].to_string(),
            len(&vr["interfaces"]),
            len(&vr["routes"]),
            len(&vr["queues"]),
        ]);
    }
    print!("{}", t.render());
    let (shown, total) = (v["vrs"].as_array().map_or(0, Vec::len), v["vrs_total"].as_u64().unwrap_or(0));
    if (shown as u64) < total {
        println!("{shown} of {total} VRs (--offset and --limit page through them)");
    }
    Ok(())
}

/// The API path of VR `name`, plus `rest`.
pub fn path(name: &str, rest: &str) -> String {
    format!("/v1/vrs/{}{rest}", segment(name))
}

/// A 404 about VR `name` said as what to do about it.
pub fn unknown(name: &str) -> impl Fn(Failure) -> Failure + '_ {
    move |f| {
        if f.code == NOT_FOUND {
            Failure::new(NOT_FOUND, format!("no VR named {name:?}; `pearlctl vr list` shows the VRs"))
        } else {
            f
        }
    }
}

/// Fetches one VR; a name pearld does not know is `NOT_FOUND`, with the way to list them.
pub fn get(client: &Client, name: &str) -> Result<Value, Failure> {
    client.get(&path(name, "")).map_err(unknown(name))
}

pub fn show(client: &Client, name: &str, json: bool) -> Result<(), Failure> {
    let vr = get(client, name)?;
    if json {
        println!("{vr}");
    } else {
        print!("{}", describe(&vr));
    }
    Ok(())
}

/// What decides the VR's packets: its code option, or how its plugin is hosted.
fn program(vr: &Value) -> String {
    match vr["code"].as_str() {
        Some(code) => code.to_string(),
        None if vr["plugin"]["process"].is_array() => "process".to_string(),
        None if vr["plugin"]["xdp"].is_string() => "xdp".to_string(),
        None => "wasm".to_string(),
    }
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or("").to_string()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().map(text).collect()
}

fn len(v: &Value) -> String {
    v.as_array().map_or(0, Vec::len).to_string()
}

fn describe(vr: &Value) -> String {
    let mut out = format!(
        "{} (id {}): {} VR, {}, namespace {}\n",
        text(&vr["name"]),
        vr["id"],
        text(&vr["kind"]),
        match vr["code"].as_str() {
            Some(code) => format!("code option {code}"),
            None => format!("{} plugin", program(vr)),
        },
        text(&vr["namespace"])
    );
    if vr["placement"] == "auto" {
        out += &format!("  placed by the node (placement auto): {} data plane\n", text(&vr["data_plane"]));
    }
    let mut interfaces = Table::new(&["  interface", "port", "mac", "addresses"], 4);
    for i in vr["interfaces"].as_array().into_iter().flatten() {
        interfaces.row(vec![format!("  {}", text(&i["name"])), text(&i["port"]), text(&i["mac"]), strings(&i["addresses"]).join(", ")]);
    }
    out += &interfaces.render();
    for i in vr["interfaces"].as_array().into_iter().flatten().filter(|i| i["impair"].as_object().is_some_and(|o| !o.is_empty())) {
        out += &format!("  link out of {}: {}\n", text(&i["name"]), crate::impair::describe(&i["impair"]));
    }
    let routes: Vec<String> = vr["routes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| format!("  route {} via {} dev {}\n", text(&r["prefix"]), text(&r["via"]), text(&r["interface"])))
        .collect();
    out += &routes.concat();
    let neighbors: Vec<String> = vr["neighbors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| format!("  neighbor {} lladdr {} dev {}\n", text(&n["ip"]), text(&n["mac"]), text(&n["interface"])))
        .collect();
    out += &neighbors.concat();
    for (i, q) in vr["queues"].as_array().into_iter().flatten().enumerate() {
        out += &format!("  queue {i}: weight {}, length {}\n", q["weight"], q["length"]);
    }
    for m in vr["match_rules"].as_array().into_iter().flatten() {
        out += &format!("  match rule: priority {} → queue {}\n", m["priority"], m["queue"]);
    }
    let l = &vr["limits"];
    let rate = l["rate_mbps"].as_u64().map_or("unlimited".to_string(), |r| format!("{r} Mb/s"));
    out += &format!(
        "  limits: rate {rate}, {} FIB entries, {} filters, {} % CPU, {} MiB, {} punted frames/s per class\n",
        l["fib_entries"], l["filters"], l["cpu_percent"], l["memory_mb"], l["punt_pps"]
    );
    let cp = &vr["control_plane"];
    if let Some(frr) = cp["frr"].as_object() {
        out += &format!("  control plane: FRR ({}) from {}\n", strings(&frr["daemons"]).join(", "), text(&frr["config"]));
    } else if let Some(bird) = cp["bird"].as_object() {
        out += &format!("  control plane: BIRD from {} (birdc -s {})\n", text(&bird["config"]), text(&bird["socket"]));
    } else if cp["command"].is_array() {
        out += &format!("  control plane: {}\n", strings(&cp["command"]).join(" "));
    }
    for p in vr["processes"].as_array().into_iter().flatten() {
        let state = if p["running"] == true { format!("running as pid {}", p["pid"]) } else { "down, restarting".into() };
        let exit = p["last_exit"].as_str().map_or(String::new(), |e| format!(", last exit: {e}"));
        out += &format!("  process {}: {state}, restarted {} times{exit}\n", text(&p["name"]), p["restarts"]);
    }
    if vr["health"].is_object() {
        out += &crate::health::describe(&vr["health"], cp["frr"].is_object() || cp["bird"].is_object());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_vr_is_described_line_by_line() {
        let vr = json!({
            "name": "red", "id": 0, "kind": "fast", "code": "ip", "namespace": "red", "ports": ["p0"],
            "interfaces": [{"name": "eth0", "port": "p0", "mac": "02:00:00:00:01:00", "addresses": ["10.1.0.1/24"]}],
            "routes": [{"prefix": "198.51.100.0/24", "via": "10.1.0.2", "interface": "eth0"}],
            "neighbors": [], "match_rules": [], "queues": [{"weight": 1, "length": 256}],
            "limits": {"fib_entries": 1000, "filters": 10, "cpu_percent": 100, "memory_mb": 512, "punt_pps": 20000},
            "control_plane": {"command": ["lab-speaker", "--as", "65001"]},
            "processes": [{"name": "lab-speaker", "pid": 4242, "running": true, "restarts": 3, "last_exit": "exit status: 1"}],
        });
        let text = describe(&vr);
        assert!(text.starts_with("red (id 0): fast VR, code option ip, namespace red\n"), "{text}");
        assert!(text.contains("  eth0       p0    02:00:00:00:01:00  10.1.0.1/24\n"), "{text}");
        assert!(text.contains("  route 198.51.100.0/24 via 10.1.0.2 dev eth0\n"), "{text}");
        assert!(text.contains("  limits: rate unlimited, 1000 FIB entries"), "{text}");
        assert!(text.contains("20000 punted frames/s per class\n"), "{text}");
        assert!(text.contains("  process lab-speaker: running as pid 4242, restarted 3 times, last exit: exit status: 1\n"), "{text}");
    }
}
