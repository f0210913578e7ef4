//! `pearld --config FILE [--api SOCKET]`: runs PEARL in the foreground, logging to stderr, until
//! SIGTERM or SIGINT. The configuration is validated whole before anything is created.

mod api;
mod node;
mod ports;
mod slowpath;
mod stats;
mod vmm;

use pearl_control::parse_config;
use node::Node;
use std::process::ExitCode;
use std::sync::Arc;

const DEFAULT_API: &str = "/run/pearl/pearl.sock";
const USAGE: &str = "usage: pearld --config FILE [--api SOCKET]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pearld: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut config_path = None;
    let mut api_path = DEFAULT_API.to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--config" => config_path = Some(args.next().ok_or("--config needs a file")?),
            "--api" => api_path = args.next().ok_or("--api needs a socket path")?,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unexpected argument {other:?}\n{USAGE}")),
        }
    }
    let config_path = config_path.ok_or(USAGE)?;
    let text = std::fs::read_to_string(&config_path).map_err(|e| format!("{config_path}: {e}"))?;
    let config = parse_config(&text).map_err(|e| format!("{config_path}: {e}"))?;

    // Block the stop signals before any thread starts, so every thread inherits the mask and
    // the main thread alone receives them with sigwait.
    let signals = stop_signals();
    // SAFETY: a valid, initialised signal set.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut()) };

    let node = Arc::new(Node::start(&config).map_err(|e| format!("{config_path}: {e}"))?);
    let api = match api::serve(&api_path, Arc::clone(&node)) {
        Ok(api) => api,
        Err(e) => {
            if let Ok(node) = Arc::try_unwrap(node) {
                node.stop();
            }
            return Err(format!("--api {api_path}: {e}"));
        }
    };
    eprintln!(
        "pearld: running {} VR(s) on {} port(s) with {} worker(s); API on {api_path}",
        config.vrs.len(),
        config.ports.len(),
        config.workers
    );
    let mut sig = 0;
    // SAFETY: waits on the set blocked above.
    unsafe { libc::sigwait(&signals, &mut sig) };
    eprintln!("pearld: signal {sig}, stopping");
    api.stop();
    match Arc::try_unwrap(node) {
        Ok(node) => node.stop(),
        Err(_) => return Err("internal: the API still holds the node".into()),
    }
    Ok(())
}

fn stop_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set before sigaddset uses it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        set
    }
}
