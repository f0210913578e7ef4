//! `pearlctl net apply|list|show|destroy` and `pearlctl link set`: virtual networks, made from
//! one file and destroyed as one (`/v1/nets`).

use crate::client::Client;
use crate::failure::Failure;
use serde_json::Value;

/// `net apply -f FILE [--name NAME]`: the file is a net (`name:`, `vrs:`, `links:`, `hosts:`),
/// or a configuration whose `nets:` holds it.
pub fn apply(client: &Client, file: &str, name: Option<&str>, json: bool) -> Result<(), Failure> {
    let bad = |why: String| Failure::usage(format!("-f {file}: {why}"));
    let text = std::fs::read_to_string(file).map_err(|e| bad(e.to_string()))?;
    let doc = pearl_control::document_from_yaml(&text).map_err(|e| bad(e.to_string()))?;
    let (name, spec) = match doc.get("nets").and_then(Value::as_object) {
        Some(nets) => {
            let picked = match name {
                Some(n) => nets.get_key_value(n),
                None if nets.len() == 1 => nets.iter().next(),
                None => return Err(bad("holds several nets; say which with --name".into())),
            };
            let (n, s) = picked.ok_or_else(|| bad(format!("no net {:?} under nets:", name.unwrap_or_default())))?;
            (n.clone(), s.clone())
        }
        None => {
            let named = doc.get("name").and_then(Value::as_str);
            let n = name.or(named).ok_or_else(|| bad("give the net a name: (or --name)".into()))?;
            (n.to_string(), doc.clone())
        }
    };
    let shown = client.call("PUT", &format!("/v1/nets/{name}"), Some(&spec))?;
    if json {
        println!("{shown}");
    } else {
        eprintln!("net {name} applied");
    }
    Ok(())
}

pub fn list(client: &Client, json: bool) -> Result<(), Failure> {
    let all = client.get("/v1/nets")?;
    if json {
        println!("{all}");
        return Ok(());
    }
    println!("{:<10} {:>4} {:>6} {:>6} {:>5}", "NET", "VRS", "HOSTS", "LINKS", "DOWN");
    for n in all["nets"].as_array().into_iter().flatten() {
        let count = |k: &str| n[k].as_array().map_or(0, Vec::len);
        let down = n["links"].as_array().into_iter().flatten().filter(|l| l["state"] == "down").count();
        println!(
            "{:<10} {:>4} {:>6} {:>6} {:>5}",
            n["name"].as_str().unwrap_or_default(),
            count("vrs"),
            count("hosts"),
            count("links"),
            down
        );
    }
    Ok(())
}

pub fn show(client: &Client, name: &str, json: bool) -> Result<(), Failure> {
    let n = client.get(&format!("/v1/nets/{name}"))?;
    if json {
        println!("{n}");
        return Ok(());
    }
    let words =
        |k: &str, f: &str| n[k].as_array().into_iter().flatten().map(|v| v[f].as_str().unwrap_or_default().to_string()).collect::<Vec<_>>();
    println!("net {name}");
    // On a cluster each VR is where it runs: {name, node, state}.
    let vr = |v: &Value| match v.as_str() {
        Some(name) => name.to_string(),
        None => format!(
            "{} on {} ({})",
            v["name"].as_str().unwrap_or_default(),
            v["node"].as_str().unwrap_or("?"),
            v["state"].as_str().unwrap_or_default()
        ),
    };
    println!("  vrs:   {}", n["vrs"].as_array().into_iter().flatten().map(vr).collect::<Vec<_>>().join(", "));
    println!("  hosts: {}", words("hosts", "name").join(", "));
    println!(
        "  {:<16} {:<14} {:<14} {:<5} {:<5} {:>8} {:>8} {:>10} {:>10}",
        "LINK", "A", "B", "KIND", "STATE", "CHANGES", "DROPPED", "A→B PKTS", "B→A PKTS"
    );
    for l in n["links"].as_array().into_iter().flatten() {
        let s = |k: &str| l[k].as_str().unwrap_or_default().to_string();
        println!(
            "  {:<16} {:<14} {:<14} {:<5} {:<5} {:>8} {:>8} {:>10} {:>10}",
            s("name"),
            s("a"),
            s("b"),
            l["vni"].as_u64().map_or_else(|| s("kind"), |v| format!("vxlan {v}")),
            s("state"),
            // Numbers, not JSON values: a value's Display ignores the column's width.
            l["carrier_changes"].as_u64().map_or("-".into(), |n| n.to_string()),
            l["dropped"].as_u64().map_or("-".into(), |n| n.to_string()),
            l["traffic"]["a_to_b"]["packets"].as_u64().map_or("-".into(), |n| n.to_string()),
            l["traffic"]["b_to_a"]["packets"].as_u64().map_or("-".into(), |n| n.to_string())
        );
    }
    Ok(())
}

pub fn destroy(client: &Client, name: &str, json: bool) -> Result<(), Failure> {
    let gone = client.call("DELETE", &format!("/v1/nets/{name}"), None)?;
    if json {
        println!("{gone}");
    } else {
        eprintln!("net {name} destroyed");
    }
    Ok(())
}

/// `link set NET A-B up|down`.
pub fn link_set(client: &Client, net: &str, link: &str, state: &str, json: bool) -> Result<(), Failure> {
    let body = serde_json::json!({"state": state});
    let shown = client.call("PUT", &format!("/v1/nets/{net}/links/{link}"), Some(&body))?;
    if json {
        println!("{shown}");
    } else {
        eprintln!("link {link} of net {net}: {state}");
    }
    Ok(())
}
