//! `pearlctl`: the command-line client of a running pearld, over its API (a Unix socket by
//! default, or TCP with `--url`).

mod args;
mod client;
mod exec;
mod failure;
mod stats;
mod table;
mod vr;

use failure::Failure;
use std::process::ExitCode;

const USAGE: &str = "\
usage: pearlctl [--socket PATH | --url http://HOST:PORT] COMMAND
  stats [--json] [--watch]    live counters; --watch refreshes every second until Ctrl-C
                              (with --json: one JSON line per second)
  vr list [--json]            the VRs: kind, code option, ports
  vr show NAME [--json]       one VR: interfaces, routes, queues, limits
  exec VR -- CMD [ARG...]     run CMD inside the VR's network namespace
--socket defaults to /run/pearl/pearl.sock.
exit codes: 0 done, 1 pearld unreachable or refused, 2 bad usage, 3 no such VR";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.report(USAGE),
    }
}

fn run() -> Result<(), Failure> {
    let a = args::parse(std::env::args().skip(1))?;
    if a.help {
        println!("{USAGE}");
        return Ok(());
    }
    let words: Vec<&str> = a.words.iter().map(String::as_str).collect();
    if a.watch && words != ["stats"] {
        return Err(Failure::usage("--watch goes with stats only"));
    }
    if a.rest.is_some() && words.first() != Some(&"exec") {
        return Err(Failure::usage("`--` goes with exec only"));
    }
    match words[..] {
        ["stats"] => stats::run(&a.target, a.json, a.watch),
        ["vr", "list"] => vr::list(&a.target, a.json),
        ["vr", "show", name] => vr::show(&a.target, name, a.json),
        ["vr", "show"] => Err(Failure::usage("vr show needs a VR name (`pearlctl vr list` shows them)")),
        ["vr", other, ..] => Err(Failure::usage(format!("unknown vr command {other:?}; use vr list or vr show NAME"))),
        ["vr"] => Err(Failure::usage("vr needs list or show NAME")),
        ["exec", vr] => {
            if a.json {
                return Err(Failure::usage("exec prints what its command prints; --json does not apply"));
            }
            match a.rest.as_deref() {
                Some([_, ..]) => Err(exec::run(&a.target, vr, a.rest.as_deref().unwrap_or_default())),
                _ => Err(Failure::usage(format!("exec needs a command after --: pearlctl exec {vr} -- ip addr"))),
            }
        }
        ["exec"] => Err(Failure::usage("exec needs a VR and a command: pearlctl exec VR -- CMD")),
        ["exec", ..] => Err(Failure::usage("put the command after --: pearlctl exec VR -- CMD [ARG...]")),
        [] => Err(Failure::usage("a command is required")),
        [other, ..] => Err(Failure::usage(format!("unknown command {other:?}"))),
    }
}
