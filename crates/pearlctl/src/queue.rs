//! `pearlctl queue list|set`: a VR's output queues (WDRR weight and length in packets).

use crate::client::Client;
use crate::failure::Failure;
use crate::settings;
use crate::table::Table;
use crate::vr;
use serde_json::{json, Value};

pub fn list(client: &Client, name: &str, json: bool) -> Result<(), Failure> {
    let queues = vr::get(client, name)?["queues"].clone();
    if json {
        println!("{}", json!({ "queues": queues }));
    } else {
        print!("{}", render(&queues));
    }
    Ok(())
}

/// `queue set VR WEIGHT:LENGTH…`: replaces every queue of the VR.
pub fn set(client: &Client, name: &str, specs: &[String], json: bool) -> Result<(), Failure> {
    let queues = settings::queues(specs.iter().flat_map(|s| s.split(',')))?;
    let v = client.call("PUT", &vr::path(name, "/queues"), Some(&queues)).map_err(vr::unknown(name))?;
    if json {
        println!("{v}");
    } else {
        print!("{}", render(&v["queues"]));
    }
    Ok(())
}

fn render(queues: &Value) -> String {
    let mut t = Table::new(&["queue", "weight", "length"], 0);
    for (i, q) in queues.as_array().into_iter().flatten().enumerate() {
        let n = |k: &str| q[k].as_u64().map_or("default".to_string(), |v| v.to_string());
        t.row(vec![i.to_string(), n("weight"), n("length")]);
    }
    t.render()
}
