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

/// `route add VR PREFIX [via] NEXT_HOP`.
pub fn add(client: &Client, name: &str, prefix: &str, next_hop: &[String], json: bool) -> Result<(), Failure> {
    let via = gateway(next_hop)?;
    let v = client.call("POST", &vr::path(name, "/routes"), Some(&json!({"prefix": prefix, "via": via}))).map_err(vr::unknown(name))?;
    if json {
        println!("{v}");
    } else {
        println!("added route {prefix} via {via} to VR {name}");
    }
    Ok(())
}

/// The next hop of `route add`'s last words: `via NEXT_HOP` or `NEXT_HOP`.
fn gateway(words: &[String]) -> Result<&str, Failure> {
    match words {
        [via, gateway] if via == "via" => Ok(gateway),
        [gateway] if gateway != "via" => Ok(gateway),
        _ => Err(Failure::usage(format!("route add VR PREFIX [via] NEXT_HOP: not a next hop: {:?}", words.join(" ")))),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_add_takes_the_next_hop_after_via_or_alone() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(gateway(&words(&["via", "10.0.0.1"])).unwrap(), "10.0.0.1");
        assert_eq!(gateway(&words(&["10.0.0.1"])).unwrap(), "10.0.0.1");
        for bad in [&["by", "10.0.0.1"][..], &["via"]] {
            assert_eq!(gateway(&words(bad)).unwrap_err().code, crate::failure::USAGE, "{bad:?}");
        }
    }
}
