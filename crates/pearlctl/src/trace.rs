//! `pearlctl trace VR [--count N] [--match FILTER] [--port P] [--timeout S] [--json] [--pcapng FILE]`:
//! pearld follows the VR's next packets through the pipeline and answers each one's stages;
//! printed as text (a block of lines a packet), as pearld's JSON, or written as pcapng with each
//! packet's trace in its comment.

use crate::cli::TraceArgs;
use crate::client::Client;
use crate::failure::{Failure, DAEMON};
use crate::pcapng::Pcapng;
use crate::{filter, vr};
use serde_json::{Map, Value};
use std::time::Duration;

/// How long past the trace's own wait pearld may take to answer.
const GRACE: Duration = Duration::from_secs(10);
const DEFAULT_TIMEOUT: u64 = 10;

pub fn run(client: &Client, a: &TraceArgs) -> Result<(), Failure> {
    let name = a.vr.as_str();
    let timeout = a.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let mut body = Map::new();
    body.insert("seconds".into(), timeout.into());
    if let Some(n) = a.count {
        body.insert("count".into(), n.into());
    }
    if let Some(p) = &a.port {
        body.insert("port".into(), p.clone().into());
    }
    if let Some(m) = &a.filter {
        let words: Vec<String> = m.split_whitespace().map(String::from).collect();
        body.insert("match".into(), filter::rule(&words).map_err(|f| Failure::usage(format!("--match: {}", f.message)))?);
    }
    let path = vr::path(name, "/trace");
    let reply = client.fetch("POST", &path, Some(&Value::Object(body)), Some(Duration::from_secs(timeout) + GRACE)).map_err(|f| {
        match f.field.as_deref() {
            Some("path") => Failure::new(DAEMON, "this pearld does not trace (it has no /v1/vrs/NAME/trace); run a newer pearld"),
            // A port or a match field pearld refused: its own message names it.
            Some("name") | None => vr::unknown(name)(f),
            Some(_) => f,
        }
    })?;
    let v: Value = serde_json::from_slice(&reply.body).map_err(|_| Failure::new(DAEMON, "pearld answered the trace with invalid JSON"))?;
    let packets = v["packets"].as_array().cloned().unwrap_or_default();
    if let Some(file) = &a.pcapng {
        let mut f = Pcapng::new(256);
        for p in &packets {
            let frame = unhex(p["frame"].as_str().unwrap_or_default());
            f.packet(p["time_ns"].as_u64().unwrap_or(0), &frame, p["len"].as_u64().unwrap_or(0) as u32, &lines(p).join("\n"));
        }
        std::fs::write(file, f.into_bytes()).map_err(|e| Failure::new(DAEMON, format!("--pcapng {file}: {e}")))?;
        eprintln!("pearlctl: traced {} packet(s) of VR {name} to {file}", packets.len());
    }
    if a.json.json {
        println!("{v}");
    } else if a.pcapng.is_none() {
        for (i, p) in packets.iter().enumerate() {
            println!("packet {}:", i + 1);
            for l in lines(p) {
                println!("  {l}");
            }
        }
        let asked = a.count.unwrap_or(10);
        if (packets.len() as u64) < asked {
            eprintln!("pearlctl: {} of {asked} packet(s) in {timeout} s", packets.len());
        }
    }
    Ok(())
}

fn lines(p: &Value) -> Vec<String> {
    p["text"].as_array().into_iter().flatten().filter_map(|l| l.as_str().map(String::from)).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()).collect()
}
