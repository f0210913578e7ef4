//! `pearlctl node`: what the node has to grant VRs, what it granted, what is free, and each VR's
//! requests (`GET /v1/node`); `pearlctl node stop` (`POST /v1/node/stop`).

use crate::client::Client;
use crate::failure::{self, Failure};
use crate::table::Table;
use crate::target::Target;
use serde_json::Value;
use std::time::{Duration, Instant};

pub fn show(client: &Client, json: bool) -> Result<(), Failure> {
    let node = client.get("/v1/node")?;
    if json {
        println!("{node}");
    } else {
        print!("{}", describe(&node));
    }
    Ok(())
}

/// `node list`: the cluster's nodes (`GET /v1/cluster/nodes`).
pub fn list(client: &Client, json: bool) -> Result<(), Failure> {
    let all = client.get("/v1/cluster/nodes")?;
    if json {
        println!("{all}");
        return Ok(());
    }
    let mut t = Table::new(&["node", "state", "lease age", "vrs", "running", "underlay", "workers free", "pps free"], 2);
    for n in all["nodes"].as_array().into_iter().flatten() {
        let s = |v: &Value| v.as_str().map_or_else(|| v.as_u64().map_or("-".to_string(), |n| n.to_string()), String::from);
        let mut name = s(&n["name"]);
        if all["scheduler"] == n["name"] {
            name.push_str(" (scheduler)");
        }
        t.row(vec![
            name,
            s(&n["state"]),
            n["lease_age_s"].as_u64().map_or("-".into(), |a| format!("{a} s")),
            n["vrs"].as_array().map_or(0, Vec::len).to_string(),
            s(&n["running"]),
            s(&n["underlay"]["address"]),
            s(&n["free"]["workers"]),
            s(&n["free"]["pps"]),
        ]);
    }
    print!("{}", t.render());
    Ok(())
}

/// Asks pearld to remove everything it made and exit, and waits until it has: on its Unix
/// socket, until pearld lets go of the socket's lock (it holds it until it exits), so that a
/// script going on after it finds nothing of PEARL's left; over TCP, until the API is gone.
pub fn stop(client: &Client, json: bool) -> Result<(), Failure> {
    let answer = client.call("POST", "/v1/node/stop", None)?;
    let deadline = Instant::now() + Duration::from_secs(120);
    let lock = match client.target() {
        Target::Unix(socket) => std::fs::File::open(format!("{socket}.lock")).ok(),
        Target::Tcp(..) => None,
    };
    let gone = || match &lock {
        Some(file) => file.try_lock_shared().is_ok(),
        None => client.get("/healthz").is_err(),
    };
    while !gone() {
        if Instant::now() > deadline {
            return Err(Failure::new(failure::DAEMON, "pearld was asked to stop but is still running after 120 s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if json {
        println!("{answer}");
    } else {
        println!("stopped: {} VR(s) and everything PEARL made removed; pearld exited", answer["vrs"]);
    }
    Ok(())
}

fn amount(v: &Value) -> String {
    v.as_u64().map_or_else(|| "unbounded".to_string(), |n| n.to_string())
}

fn describe(node: &Value) -> String {
    let mut t = Table::new(&["resource", "capacity", "granted", "free"], 1);
    for (resource, capacity) in node["capacity"].as_object().into_iter().flatten() {
        t.row(vec![resource.clone(), amount(capacity), amount(&node["granted"][resource]), amount(&node["free"][resource])]);
    }
    let slots = &node["fast_slots"];
    t.row(vec!["fast_slots".into(), amount(&slots["capacity"]), amount(&slots["used"]), amount(&slots["free"])]);
    let mut out = t.render();
    let asking: Vec<&Value> =
        node["vrs"].as_array().into_iter().flatten().filter(|v| v["resources"].as_object().is_some_and(|o| !o.is_empty())).collect();
    if !asking.is_empty() {
        out += "\n";
        let mut vrs = Table::new(&["vr", "data plane", "workers", "granted"], 4).text_last();
        for v in asking {
            let granted: Vec<String> = v["resources"].as_object().into_iter().flatten().map(|(r, a)| format!("{r}={a}")).collect();
            let workers: Vec<String> = v["workers"].as_array().into_iter().flatten().map(ToString::to_string).collect();
            vrs.row(vec![
                v["name"].as_str().unwrap_or("").into(),
                v["kind"].as_str().unwrap_or("").into(),
                workers.join(","),
                granted.join(" "),
            ]);
        }
        out += &vrs.render();
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_node_is_described_resource_by_resource_then_vr_by_vr() {
        let node = json!({
            "capacity": {"pps": 950000, "filters": null}, "granted": {"pps": 1000, "filters": 8}, "free": {"pps": 949000, "filters": null},
            "fast_slots": {"capacity": 2, "used": 1, "free": 1},
            "vrs": [{"name": "red", "kind": "fast", "resources": {"pps": 1000, "filters": 8}, "workers": [1]}, {"name": "blue", "kind": "kernel", "resources": {}}],
        });
        let text = super::describe(&node);
        assert!(text.contains("pps") && text.contains("949000") && text.contains("unbounded"), "{text}");
        assert!(text.contains("red") && text.contains("pps=1000") && !text.contains("blue"), "{text}");
        assert!(text.lines().any(|l| l.starts_with("red") && l.split_whitespace().nth(2) == Some("1")), "{text}");
        assert!(text.lines().any(|l| l.starts_with("fast_slots") && l.contains('2') && l.contains('1')), "{text}");
    }
}
