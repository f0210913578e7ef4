//! `pearlctl`: talks to a running pearld over its API socket.
//!
//!   pearlctl [--socket PATH] stats [--json]
//!
//! Exit codes: 0 done, 1 the daemon could not be reached or refused, 2 bad usage.

use serde_json::Value;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

const DEFAULT_SOCKET: &str = "/run/pearl/pearl.sock";
const USAGE: &str = "usage: pearlctl [--socket PATH] stats [--json]";

fn main() -> ExitCode {
    let mut socket = DEFAULT_SOCKET.to_string();
    let mut json = false;
    let mut command = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--socket" => match args.next() {
                Some(s) => socket = s,
                None => return usage("--socket needs a path"),
            },
            "--json" => json = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            c if command.is_none() && !c.starts_with('-') => command = Some(c.to_string()),
            other => return usage(&format!("unexpected argument {other:?}")),
        }
    }
    match command.as_deref() {
        Some("stats") => match get(&socket, "/v1/stats") {
            Ok(v) if json => {
                println!("{v}");
                ExitCode::SUCCESS
            }
            Ok(v) => {
                print_stats(&v);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("pearlctl: {e}");
                ExitCode::from(1)
            }
        },
        Some(other) => usage(&format!("unknown command {other:?}")),
        None => usage("a command is required"),
    }
}

fn usage(why: &str) -> ExitCode {
    eprintln!("pearlctl: {why}\n{USAGE}");
    ExitCode::from(2)
}

fn get(socket: &str, path: &str) -> Result<Value, String> {
    let mut s = UnixStream::connect(socket).map_err(|e| format!("cannot reach pearld at {socket}: {e}"))?;
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").map_err(|e| e.to_string())?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).map_err(|e| e.to_string())?;
    let (head, body) = reply.split_once("\r\n\r\n").ok_or("malformed reply from pearld")?;
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        return Err(format!("pearld answered {status}: {body}"));
    }
    serde_json::from_str(body).map_err(|e| format!("malformed JSON from pearld: {e}"))
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn print_stats(v: &Value) {
    println!("{:<10} {:>12} {:>12} {:>12} {:>10} {:>10}", "port", "rx pkts", "tx pkts", "tx errors", "unclaimed", "malformed");
    for p in v["ports"].as_array().into_iter().flatten() {
        let malformed: u64 = p["malformed"].as_object().into_iter().flatten().filter_map(|(_, n)| n.as_u64()).sum();
        println!(
            "{:<10} {:>12} {:>12} {:>12} {:>10} {:>10}",
            p["name"].as_str().unwrap_or("?"),
            n(&p["rx_packets"]),
            n(&p["tx_packets"]),
            n(&p["tx_errors"]),
            n(&p["unclaimed"]),
            malformed
        );
    }
    println!();
    println!("{:<10} {:>12} {:>12} {:>12} {:>10}  exceptions", "vr", "rx pkts", "forwarded", "queue drops", "slow drops");
    for vr in v["vrs"].as_array().into_iter().flatten() {
        let exceptions: Vec<String> = vr["exceptions"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, n)| n.as_u64() != Some(0))
            .map(|(k, n)| format!("{k}={n}"))
            .collect();
        println!(
            "{:<10} {:>12} {:>12} {:>12} {:>10}  {}",
            vr["name"].as_str().unwrap_or("?"),
            n(&vr["rx_packets"]),
            n(&vr["forwarded_packets"]),
            n(&vr["queue_drops"]),
            n(&vr["exception_drops"]),
            exceptions.join(" ")
        );
    }
}
