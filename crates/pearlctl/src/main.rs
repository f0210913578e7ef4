//! `pearlctl`: the command-line client of a running pearld, over its API (a Unix socket by
//! default, or TCP with `--url`). The command line is `cli.rs`; each command's work is in the
//! file named after it.

mod capture;
mod cli;
mod client;
mod config;
mod connect;
mod dashboard;
mod errors;
mod exec;
mod failure;
mod fib;
mod filter;
mod health;
mod impair;
mod names;
mod net;
mod node;
mod pcapng;
mod plugin;
mod queue;
mod refusal;
mod route;
mod settings;
mod stats;
mod table;
mod target;
mod tls;
mod trace;
mod vr;
mod vr_change;

use clap::{CommandFactory, Parser};
use cli::{
    Cli, Command, ConfigCommand, FilterCommand, LinkCommand, NetCommand, NodeCommand, PluginCommand, QueueCommand, RouteCommand, VrCommand,
};
use client::Client;
use failure::Failure;
use std::process::ExitCode;
use target::{Target, DEFAULT_SOCKET};

fn main() -> ExitCode {
    // With COMPLETE=SHELL set (by the script `completions` prints), this answers the shell and exits.
    clap_complete::CompleteEnv::with_factory(Cli::command).complete();
    // clap answers --help and --version (exit 0) and bad command lines (exit 2) itself.
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.report(&invoked_usage(std::env::args().skip(1))),
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    let target = match cli.url {
        Some(u) => Target::from_url(&u, cli.ca.as_deref())?,
        None => Target::Unix(cli.socket.unwrap_or_else(|| DEFAULT_SOCKET.to_string())),
    };
    let c = &Client::new(target, cli.token.filter(|t| !t.is_empty()));
    match cli.command {
        Command::Stats { select, json, watch } => stats::run(c, &select.query(), json.json, watch),
        Command::Dashboard { listen } => dashboard::run(c, &listen),
        Command::Node { json, action: None } => node::show(c, json.json),
        Command::Node { json, action: Some(NodeCommand::Stop) } => node::stop(c, json.json),
        Command::Node { json, action: Some(NodeCommand::List { json: own }) } => node::list(c, json.json || own.json),
        Command::Config(ConfigCommand::Show { json }) => config::show(c, json.json),
        Command::Config(ConfigCommand::Export { output }) => config::export(c, output.as_deref()),
        Command::Vr(VrCommand::List { select, json }) => vr::list(c, &select.query(), json.json),
        Command::Vr(VrCommand::Show { name, json }) => vr::show(c, &name, json.json),
        Command::Vr(VrCommand::Create { file: Some(file), json, .. }) => vr_change::create_from_file(c, &file, json.json),
        Command::Vr(VrCommand::Create { file: None, name, interface, settings, json }) => {
            let name = name.expect("clap requires a name without --file");
            vr_change::create(c, &name, &interface, &settings, json.json)
        }
        Command::Vr(VrCommand::Delete { name, json }) => vr_change::delete(c, &name, json.json),
        Command::Vr(VrCommand::Set { name, settings, json }) => vr_change::set(c, &name, &settings, json.json),
        Command::Vr(VrCommand::Migrate { name, to, json }) => vr_change::migrate(c, &name, &to, json.json),
        Command::Route(RouteCommand::List { vr, json }) => route::list(c, &vr, json.json),
        Command::Route(RouteCommand::Add { vr, prefix, next_hop, json }) => route::add(c, &vr, &prefix, &next_hop, json.json),
        Command::Route(RouteCommand::Del { vr, prefix, json }) => route::del(c, &vr, &prefix, json.json),
        Command::Errors { vr, json } => errors::run(c, vr.as_deref(), json.json),
        Command::Fib { vr, what, family, json } => fib::run(c, &vr, &what, family.as_deref(), json.json),
        Command::Filter(FilterCommand::List { vr, json }) => filter::list(c, &vr, json.json),
        Command::Filter(FilterCommand::Add { vr, keys, json }) => filter::add(c, &vr, &keys, json.json),
        Command::Filter(FilterCommand::Del { vr, index, json }) => filter::del(c, &vr, &index, json.json),
        Command::Plugin(PluginCommand::Table { vr, table, op, json }) => plugin::table(c, &vr, table.as_deref(), &op, json.json),
        Command::Queue(QueueCommand::List { vr, json }) => queue::list(c, &vr, json.json),
        Command::Queue(QueueCommand::Set { vr, queues, json }) => queue::set(c, &vr, &queues, json.json),
        Command::Capture(a) => capture::run(c, &a),
        Command::Trace(a) => trace::run(c, &a),
        Command::Net(NetCommand::Apply { file, name, json }) => net::apply(c, &file, name.as_deref(), json.json),
        Command::Net(NetCommand::List { json }) => net::list(c, json.json),
        Command::Net(NetCommand::Show { name, json }) => net::show(c, &name, json.json),
        Command::Net(NetCommand::Destroy { name, json }) => net::destroy(c, &name, json.json),
        Command::Link(LinkCommand::Set { net, link, state, json }) => net::link_set(c, &net, &link, &state, json.json),
        Command::Impair { vr, interface, settings, json } => impair::set(c, &vr, &interface, &settings, json.json),
        Command::Exec { vr, command } => Err(exec::run(c, &vr, &command)),
        Command::Completions { shell } => completions(shell),
        Command::Man { dir } => {
            clap_mangen::generate_to(Cli::command(), &dir).map_err(|e| Failure::new(1, format!("{}: {e}", dir.display())))
        }
    }
}

/// The script that has SHELL ask pearlctl (so the running node) for each completion: VR,
/// interface and port names as well as subcommands and options.
fn completions(shell: clap_complete::Shell) -> Result<(), Failure> {
    let shells = clap_complete::env::Shells::builtins();
    let name = shell.to_string();
    let Some(completer) = shells.completer(&name) else { return Err(Failure::usage(format!("completions {name}: not supported"))) };
    completer
        .write_registration("COMPLETE", "pearlctl", "pearlctl", "pearlctl", &mut std::io::stdout())
        .map_err(|e| Failure::new(1, format!("completions {name}: {e}")))
}

/// The usage of the subcommand the command line invoked (`route add`'s for a bad next hop),
/// found by following its words down the subcommands.
fn invoked_usage(args: impl Iterator<Item = String>) -> String {
    let mut command = Cli::command();
    command.build();
    let mut current = &command;
    // Words that name no subcommand (option values, a VR's name) are passed over; below a
    // command without subcommands none can match.
    for word in args {
        if let Some(sub) = current.find_subcommand(&word) {
            current = sub;
        }
    }
    current.clone().render_usage().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_shows_the_usage_of_the_subcommand_invoked() {
        let usage = |line: &str| invoked_usage(line.split(' ').map(String::from));
        assert!(usage("--socket /run/x route add red 10.0.0.0/8 by 1").contains("pearlctl route add"), "{}", usage("route add"));
        assert!(usage("fib red lookup").contains("pearlctl fib"));
        assert!(usage("frobnicate").contains("pearlctl [OPTIONS] <COMMAND>"), "{}", usage("frobnicate"));
    }
}
