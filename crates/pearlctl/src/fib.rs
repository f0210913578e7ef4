//! `pearlctl fib VR [--family v4|v6] [PREFIX]` and `pearlctl fib VR lookup ADDR`: a VR's
//! fast-path FIB as the workers read it. The listing pages through the API (a full table is a
//! million routes), printing each page as it comes.

use crate::client::{segment, Client};
use crate::failure::Failure;
use crate::table::Table;
use crate::vr;
use serde_json::{json, Value};

/// Routes asked for per request: the API's bound on a page.
const PAGE: u64 = 10_000;

pub fn run(client: &Client, name: &str, what: &[String], family: Option<&str>, json: bool) -> Result<(), Failure> {
    match what {
        [verb, address] if verb == "lookup" => lookup(client, name, address, json),
        [verb] if verb == "lookup" => Err(Failure::usage("fib VR lookup ADDR: give the address to look up")),
        [] => list(client, name, None, family, json),
        [prefix] => list(client, name, Some(prefix), family, json),
        _ => Err(Failure::usage(format!("fib VR [PREFIX] | fib VR lookup ADDR: unexpected {:?}", what.join(" ")))),
    }
}

fn list(client: &Client, name: &str, prefix: Option<&str>, family: Option<&str>, json: bool) -> Result<(), Failure> {
    let mut query = format!("?limit={PAGE}");
    if let Some(f) = family {
        query += &format!("&family={f}");
    }
    if let Some(p) = prefix {
        query += &format!("&prefix={}", segment(p));
    }
    let (mut after, mut all, mut first) = (None::<String>, Vec::new(), None::<Value>);
    loop {
        let more = after.as_ref().map_or(String::new(), |a| format!("&after={}", segment(a)));
        let page = client.get(&vr::path(name, &format!("/fib{query}{more}"))).map_err(vr::unknown(name))?;
        let routes = page["routes"].as_array().cloned().unwrap_or_default();
        if json {
            all.extend(routes);
        } else {
            if first.is_none() {
                println!("VR {name}: {} IPv{} routes in the fast path", page["total"], &page["family"].as_str().unwrap_or("v4")[1..]);
            }
            print!("{}", render(&routes, first.is_none()));
        }
        first.get_or_insert_with(|| page.clone());
        match page["next"].as_str() {
            Some(n) => after = Some(n.to_string()),
            None => break,
        }
    }
    if json {
        let p = first.unwrap_or_default();
        println!("{}", json!({"vr": p["vr"], "family": p["family"], "total": p["total"], "routes": all}));
    }
    Ok(())
}

fn lookup(client: &Client, name: &str, address: &str, json: bool) -> Result<(), Failure> {
    let v = client.get(&vr::path(name, &format!("/fib/lookup?address={}", segment(address)))).map_err(vr::unknown(name))?;
    if json {
        println!("{v}");
    } else if v["route"].is_null() {
        println!("{address}: no route in VR {name}'s fast path (the packet goes to the VR's kernel)");
    } else {
        print!("{}", render(std::slice::from_ref(&v["route"]), true));
    }
    Ok(())
}

/// One row per next hop (an equal-cost route has several), the prefix on its first.
fn render(routes: &[Value], header: bool) -> String {
    let mut t = Table::new(&["prefix", "origin", "next hop", "interface", "port", "mac", "resolved"], 7);
    let text = |v: &Value| v.as_str().unwrap_or("-").to_string();
    for r in routes {
        for (i, nh) in r["next_hops"].as_array().into_iter().flatten().enumerate() {
            let (prefix, origin) = if i == 0 { (text(&r["prefix"]), text(&r["origin"])) } else { (String::new(), String::new()) };
            let resolved = if nh["resolved"].as_bool() == Some(true) { "yes" } else { "no" };
            t.row(vec![prefix, origin, text(&nh["kind"]), text(&nh["interface"]), text(&nh["port"]), text(&nh["mac"]), resolved.into()]);
        }
    }
    let out = t.render();
    match header {
        true => out,
        // Later pages: the columns of the first page's header are only approximately theirs.
        false => out.split_once('\n').map_or(String::new(), |(_, rest)| rest.to_string()),
    }
}
