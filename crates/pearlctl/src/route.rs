//! `pearlctl route list|add|del`: a VR's static routes. They go into the VR's namespace, whose
//! kernel routes pearld mirrors into the VR's fast path.

use crate::client::{segment, Client};
use crate::failure::Failure;
use crate::table::Table;
use crate::vr;
use serde_json::json;

pub fn list(client: &Client, name: &str, json: bool) -> Result<(), Failure> {
    let v = client.get(&vr::path(name, "/routes")).map_err(vr::unknown(name))?;
    if json {
        println!("{v}");
        return Ok(());
    }
    let mut t = Table::new(&["prefix", "via"], 2);
    for r in v["routes"].as_array().into_iter().flatten() {
        t.row(vec![r["prefix"].as_str().unwrap_or("").into(), r["via"].as_str().unwrap_or("").into()]);
    }
    print!("{}", t.render());
    Ok(())
}

/// `route add VR PREFIX via GATEWAY`.
pub fn add(client: &Client, name: &str, prefix: &str, via: &str, json: bool) -> Result<(), Failure> {
    let v = client.call("POST", &vr::path(name, "/routes"), Some(&json!({"prefix": prefix, "via": via}))).map_err(vr::unknown(name))?;
    if json {
        println!("{v}");
    } else {
        println!("added route {prefix} via {via} to VR {name}");
    }
    Ok(())
}

pub fn del(client: &Client, name: &str, prefix: &str, json: bool) -> Result<(), Failure> {
    let (address, length) = prefix
        .split_once('/')
        .filter(|(_, l)| l.parse::<u8>().is_ok())
        .ok_or_else(|| Failure::usage(format!("route del: {prefix:?} is not ADDRESS/LENGTH (e.g. 198.51.100.0/24)")))?;
    let v = client.call("DELETE", &vr::path(name, &format!("/routes/{}/{length}", segment(address))), None)?;
    if json {
        println!("{v}");
    } else {
        println!("removed route {prefix} from VR {name}");
    }
    Ok(())
}
