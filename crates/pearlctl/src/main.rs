//! `pearlctl`: the command-line client of a running pearld, over its API (a Unix socket by
//! default, or TCP with `--url`).

mod args;
mod capture;
mod client;
mod exec;
mod failure;
mod filter;
mod queue;
mod route;
mod settings;
mod stats;
mod table;
mod vr;
mod vr_change;

use args::Args;
use failure::Failure;
use std::process::ExitCode;

const USAGE: &str = "\
usage: pearlctl [--socket PATH | --url http://HOST:PORT] [--token TOKEN] COMMAND
  stats [--json] [--watch]        live counters; --watch refreshes every second until Ctrl-C
                                  (with --json: one JSON line per second)
  vr list [--json]                the VRs: kind, code option, ports
  vr show NAME [--json]           one VR: interfaces, routes, queues, limits
  vr create -f FILE               a VR from a YAML or JSON file: one item of the config's vrs: list
  vr create NAME --interface name=eth0,port=p0,mac=02:00:00:00:01:00,address=10.1.0.1/24
            [--interface …] [KEY=VALUE…]   (address= may repeat; KEY as for vr set, or kind, code, id)
  vr delete NAME                  the VR and everything it had
  vr set NAME KEY=VALUE…          change a running VR in one step:
                                    queues=3:256,1:256      WEIGHT:LENGTH per queue
                                    limits.rate_mbps=100    one limit (none lifts the rate cap)
                                    routes='[{prefix: 198.51.100.0/24, via: 10.2.0.2}]'
                                    KEY=YAML for routes, neighbors, match, queues, limits,
                                    control_plane, token, accept_source_route;
                                    KEY=none removes it
  route list VR [--json]          the VR's static routes
  route add VR PREFIX via GATEWAY
  route del VR PREFIX
  filter list VR [--json]         the VR's classifier rules, by index
  filter add VR KEY=VALUE… [priority=N] [queue=N]
                                  keys as in the config's match: udp_dst=4000 ethertype=0x88b5
                                  ip_dst=10.9.0.0/16 in_port=p0 vlan=VALUE/MASK …
  filter del VR INDEX
  queue list VR [--json]          the VR's output queues
  queue set VR WEIGHT:LENGTH…     replace them (e.g. queue set red 3:256 1:256)
  capture VR [--interface I] [--point rx|tx|slow] [--count N] [--seconds S] -w FILE
                                  the VR's frames as a pcap file (-w - for standard output)
  exec VR -- CMD [ARG...]         run CMD inside the VR's network namespace
--socket defaults to /run/pearl/pearl.sock. --token (or PEARL_TOKEN) is the admin token or a
VR's own token, needed when pearld has api.admin_token configured.
Changes are validated whole and applied atomically: a refused one changes nothing and its
error names the field to fix. --json on a change prints pearld's answer.
exit codes: 0 done, 1 pearld unreachable or refused the request, 2 bad usage, 3 not found";

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
    if a.rest.is_some() && a.words.first().map(String::as_str) != Some("exec") {
        return Err(Failure::usage("`--` goes with exec only"));
    }
    let words: Vec<&str> = a.words.iter().map(String::as_str).collect();
    let c = &a.client;
    let json = a.json;
    let rest = |from: usize| &a.words[from..];
    match words[..] {
        ["stats"] => a.only("stats", &["--json", "--watch"]).and_then(|()| stats::run(c, json, a.watch)),
        ["vr", "list"] => a.only("vr list", &["--json"]).and_then(|()| vr::list(c, json)),
        ["vr", "show", name] => a.only("vr show", &["--json"]).and_then(|()| vr::show(c, name, json)),
        ["vr", "show"] => Err(Failure::usage("vr show needs a VR name (`pearlctl vr list` shows them)")),
        ["vr", "create", ..] => create(&a, rest(2)),
        ["vr", "delete", name] => a.only("vr delete", &["--json"]).and_then(|()| vr_change::delete(c, name, json)),
        ["vr", "set", name, ..] => a.only("vr set", &["--json"]).and_then(|()| vr_change::set(c, name, rest(3), json)),
        ["vr", "delete" | "set"] => Err(Failure::usage(format!("vr {} needs a VR name", words[1]))),
        ["vr", other, ..] => Err(Failure::usage(format!("unknown vr command {other:?}; use list, show, create, delete or set"))),
        ["vr"] => Err(Failure::usage("vr needs list, show, create, delete or set")),
        ["route", "list", vr] => a.only("route list", &["--json"]).and_then(|()| route::list(c, vr, json)),
        ["route", "add", vr, prefix, "via", gw] => a.only("route add", &["--json"]).and_then(|()| route::add(c, vr, prefix, gw, json)),
        ["route", "del", vr, prefix] => a.only("route del", &["--json"]).and_then(|()| route::del(c, vr, prefix, json)),
        ["route", ..] => Err(Failure::usage("route takes: list VR | add VR PREFIX via GATEWAY | del VR PREFIX")),
        ["filter", "list", vr] => a.only("filter list", &["--json"]).and_then(|()| filter::list(c, vr, json)),
        ["filter", "add", vr, ..] => a.only("filter add", &["--json"]).and_then(|()| filter::add(c, vr, rest(3), json)),
        ["filter", "del", vr, index] => a.only("filter del", &["--json"]).and_then(|()| filter::del(c, vr, index, json)),
        ["filter", ..] => Err(Failure::usage("filter takes: list VR | add VR KEY=VALUE… | del VR INDEX")),
        ["queue", "list", vr] => a.only("queue list", &["--json"]).and_then(|()| queue::list(c, vr, json)),
        ["queue", "set", vr, _, ..] => a.only("queue set", &["--json"]).and_then(|()| queue::set(c, vr, rest(3), json)),
        ["queue", ..] => Err(Failure::usage("queue takes: list VR | set VR WEIGHT:LENGTH…")),
        ["capture", vr] => {
            a.only("capture", &["--interface", "--point", "--count", "--seconds", "-w", "--write"]).and_then(|()| capture::run(c, vr, &a))
        }
        ["capture", ..] => Err(Failure::usage("capture needs one VR: pearlctl capture VR -w FILE")),
        ["exec", vr] => {
            a.only("exec", &[]).map_err(|_| Failure::usage("exec prints what its command prints; options go before --"))?;
            match a.rest.as_deref() {
                Some(command @ [_, ..]) => Err(exec::run(c, vr, command)),
                _ => Err(Failure::usage(format!("exec needs a command after --: pearlctl exec {vr} -- ip addr"))),
            }
        }
        ["exec"] => Err(Failure::usage("exec needs a VR and a command: pearlctl exec VR -- CMD")),
        ["exec", ..] => Err(Failure::usage("put the command after --: pearlctl exec VR -- CMD [ARG...]")),
        [] => Err(Failure::usage("a command is required")),
        [other, ..] => Err(Failure::usage(format!("unknown command {other:?}"))),
    }
}

fn create(a: &Args, words: &[String]) -> Result<(), Failure> {
    a.only("vr create", &["-f", "--file", "--interface", "--json"])?;
    match (&a.file, words) {
        (Some(file), []) if a.interfaces.is_empty() => vr_change::create_from_file(&a.client, file, a.json),
        (Some(_), _) => Err(Failure::usage("vr create -f FILE takes everything from the file: no NAME, --interface or KEY=VALUE")),
        (None, [name, settings @ ..]) => vr_change::create(&a.client, name, &a.interfaces, settings, a.json),
        (None, []) => Err(Failure::usage("vr create needs -f FILE or NAME --interface …")),
    }
}
