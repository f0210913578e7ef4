//! Names of the running node for shell completion: VRs, a VR's interfaces, ports. clap's dynamic
//! completion (`COMPLETE=bash pearlctl`, the script `pearlctl completions bash` prints) runs
//! pearlctl with the words typed so far; these ask pearld, at the `--socket` or `--url` among those
//! words, or PEARL_SOCKET/PEARL_URL, or the default socket. An unreachable pearld completes
//! nothing rather than print an error into the shell's line.

use crate::client::{segment, Client};
use crate::target::{Target, DEFAULT_SOCKET};
use clap_complete::engine::CompletionCandidate;
use serde_json::Value;
use std::ffi::OsStr;

/// The words being completed: what the shell passes after `--`.
fn words() -> Vec<String> {
    std::env::args().skip_while(|a| a != "--").skip(1).collect()
}

/// The value of option `name` among `words` (`--name VALUE` or `--name=VALUE`).
fn option(words: &[String], name: &str) -> Option<String> {
    let flag = format!("--{name}");
    let joined = format!("{flag}=");
    words.iter().enumerate().find_map(|(i, w)| match w.strip_prefix(&joined) {
        Some(v) => Some(v.to_string()),
        None if *w == flag => words.get(i + 1).cloned(),
        None => None,
    })
}

fn client(words: &[String]) -> Option<Client> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let target = match option(words, "url").or_else(|| env("PEARL_URL")) {
        Some(url) => Target::from_url(&url, option(words, "ca").or_else(|| env("PEARL_CA")).as_deref()).ok()?,
        None => Target::Unix(option(words, "socket").or_else(|| env("PEARL_SOCKET")).unwrap_or_else(|| DEFAULT_SOCKET.into())),
    };
    Some(Client::new(target, option(words, "token").or_else(|| env("PEARL_TOKEN"))))
}

fn vr_list(words: &[String], containing: &str) -> Vec<Value> {
    let Some(c) = client(words) else { return Vec::new() };
    let query = if containing.is_empty() { String::new() } else { format!("?name={}", segment(containing)) };
    c.get(&format!("/v1/vrs{query}")).ok().and_then(|v| v["vrs"].as_array().cloned()).unwrap_or_default()
}

fn candidates<'a>(names: impl Iterator<Item = &'a str>, current: &str) -> Vec<CompletionCandidate> {
    names.filter(|n| n.starts_with(current)).map(CompletionCandidate::new).collect()
}

/// The node's VRs whose names start with what was typed.
pub fn vrs(current: &OsStr) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    let vrs = vr_list(&words(), &current);
    candidates(vrs.iter().filter_map(|v| v["name"].as_str()), &current)
}

/// The interfaces of the VR named among the words typed (the first word that names one).
pub fn interfaces(current: &OsStr) -> Vec<CompletionCandidate> {
    let words = words();
    let vrs = vr_list(&words, "");
    let Some(vr) = vrs.iter().find(|v| words.iter().any(|w| v["name"].as_str() == Some(w))) else { return Vec::new() };
    let names = vr["interfaces"].as_array().into_iter().flatten().filter_map(|i| i["name"].as_str());
    candidates(names, &current.to_string_lossy())
}

/// The node's port names.
fn port_names() -> Vec<String> {
    let Some(c) = client(&words()) else { return Vec::new() };
    let stats = c.get("/v1/stats").unwrap_or_default();
    let ports = stats["ports"].as_array().cloned().unwrap_or_default();
    ports.iter().filter_map(|p| p["name"].as_str().map(str::to_owned)).collect()
}

/// The node's ports whose names start with what was typed.
pub fn ports(current: &OsStr) -> Vec<CompletionCandidate> {
    candidates(port_names().iter().map(String::as_str), &current.to_string_lossy())
}

/// A filter's `in_port=` key completes to the node's ports; other keys are left to the user.
pub fn filter_keys(current: &OsStr) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    let Some(port) = current.strip_prefix("in_port=") else { return Vec::new() };
    let names: Vec<String> = port_names().iter().map(|p| format!("in_port={p}")).collect();
    candidates(names.iter().map(String::as_str), &format!("in_port={port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_is_the_one_typed_on_the_line() {
        let words: Vec<String> = ["pearlctl", "--socket", "/tmp/a.sock", "vr", "show", ""].map(String::from).into();
        assert_eq!(option(&words, "socket").as_deref(), Some("/tmp/a.sock"));
        let words: Vec<String> = ["pearlctl", "--url=http://127.0.0.1:8080", "impair"].map(String::from).into();
        assert_eq!(option(&words, "url").as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(option(&words, "socket"), None);
    }
}
