//! `pearld --config FILE [--api SOCKET] [--api-tcp HOST:PORT] [--state DIR]` (see `cli.rs`;
//! `pearld --check FILE` validates only): runs PEARL in the foreground, logging to stderr,
//! until SIGTERM or SIGINT, which leave every VR running for the next pearld to adopt
//! (`shutdown.rs`). The configuration is validated whole before anything is created.

mod access;
mod activity;
mod adoption;
mod allocator;
mod api;
mod api_error;
mod audit;
mod auth;
mod by_vr_id;
mod capacity;
mod capture;
mod cgroupfs;
mod changes;
mod cli;
mod config_load;
mod ctx;
mod desired;
mod doc_diff;
mod dropper;
mod errors;
mod fib;
mod file_vs_state;
mod fresh_netns;
mod holder;
mod host_mounts;
mod http;
mod in_parallel;
mod instance;
mod kept_offload;
mod kernel_drops;
mod landing;
mod logging;
mod metrics;
mod migrate;
mod models;
mod netconf;
mod node;
mod openapi;
mod owned;
mod owner_rate;
mod plugin_tables;
mod plugins;
mod port_stack;
mod ports;
mod rates;
mod rewound;
mod route_hold;
mod router;
mod routes;
mod schemas;
mod serve;
mod shutdown;
mod slowpath;
mod spare_spaces;
mod stats;
mod stopwatch;
mod store;
mod sysctl;
mod tls;
mod validate;
mod vmm;
mod vr_names;
mod vr_query;
mod vrs;
mod worker_cpu;

use node::Node;
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    allocator::tune();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Also before logging is set up (a bad command line, the TAP holder's own start).
            eprintln!("pearld: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    if std::env::args().nth(1).as_deref() == Some(holder::HOLD_FLAG) {
        let path = std::env::args().nth(2).ok_or("--hold-taps needs a socket path")?;
        return holder::run(std::path::Path::new(&path)).map_err(|e| format!("TAP holder {path}: {e}"));
    }
    // clap answers --help and --version (exit 0) and bad command lines (exit 2) itself.
    let cli = <cli::Cli as clap::Parser>::parse();
    logging::init(&cli.log_level);
    if cli.man {
        let mut page = Vec::new();
        clap_mangen::Man::new(<cli::Cli as clap::CommandFactory>::command()).render(&mut page).map_err(|e| e.to_string())?;
        print!("{}", String::from_utf8_lossy(&page));
        return Ok(());
    }
    if let Some(file) = cli.check {
        let path = file.or(cli.config).ok_or("--check needs a FILE (or --config FILE)")?;
        println!("{}", config_load::check(&path)?);
        return Ok(());
    }
    let config_path = cli.config.expect("clap requires --config");
    raise_open_file_limit();
    let (api_path, api_tcp, api_tcp_plain, state_dir) = (cli.api, cli.api_tcp, cli.api_tcp_plain, cli.state);
    let winner = match (cli.config_wins, cli.state_wins) {
        (true, _) => file_vs_state::Winner::Config,
        (_, true) => file_vs_state::Winner::State,
        _ => file_vs_state::Winner::Undecided,
    };
    // Before anything is read or touched: a second pearld on this node's state or socket
    // must leave the first unharmed.
    let _node_claims = instance::claim_node(&state_dir, &config_path, &api_path)?;
    let (config, desired) = config_load::load(&config_path, &state_dir, winner)?;
    let _port_claims = instance::claim_ports(&config).map_err(|e| format!("{config_path}: {e}"))?;
    port_stack::silence(&config);
    let tcp_scheme = api_tcp.as_deref().map(|addr| tls::Scheme::choose(addr, api_tcp_plain, &config)).transpose()?;

    // Block the stop signals before any thread starts, so every thread inherits the mask and
    // the main thread alone receives them with sigwait.
    let signals = stop_signals();
    // SAFETY: a valid, initialised signal set.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut()) };

    cgroupfs::ensure_visible().map_err(|e| format!("cgroups for VR limits: {e}"))?;
    let holder = holder::Holder::connect_or_start(&holder::socket_for(&api_path)).map_err(|e| e.to_string())?;
    let owned = owned::Owned::open(&owned::path_for(&api_path)).map_err(|e| format!("the registry of PEARL's namespaces: {e}"))?;
    let node = Arc::new(Node::start(&config, desired, holder, owned).map_err(|e| format!("{config_path}: {e}"))?);
    let api = match api::serve(&api_path, api_tcp.as_deref().zip(tcp_scheme), Arc::clone(&node)) {
        Ok(api) => api,
        Err(e) => {
            // Its VRs may be adopted ones: the next pearld takes them over again.
            if let Ok(node) = Arc::try_unwrap(node) {
                node.leave();
            }
            return Err(e);
        }
    };
    tracing::info!(
        "running {} VR(s) on {} port(s) with {} worker(s); API on {api_path}",
        config.vrs.len(),
        config.ports.len(),
        config.workers
    );
    let mut sig = 0;
    // SAFETY: waits on the set blocked above.
    unsafe { libc::sigwait(&signals, &mut sig) };
    let tear_down = shutdown::tearing_down();
    let restart = shutdown::restarting();
    if tear_down {
        tracing::info!("stopping the node: removing every VR and everything PEARL made");
    } else if let Some(what) = restart {
        tracing::info!("starting again over every VR to apply the change of {what}");
    } else {
        tracing::info!("signal {sig}: stopping, leaving every VR running for the next pearld (`pearlctl node stop` removes them)");
    }
    if tear_down || restart.is_some() {
        // The answer to `POST /v1/node/stop` (or to the change) is on its way: stopping the
        // API drops the connections in flight.
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    api.stop();
    let Ok(node) = Arc::try_unwrap(node) else { return Err("internal: the API still holds the node".into()) };
    if tear_down {
        node.stop();
    } else {
        node.leave();
    }
    if restart.is_some() {
        return Err(format!("starting again: {}", shutdown::exec_again(&signals)));
    }
    Ok(())
}

/// Every API client, TAP and netlink socket is a descriptor: the soft limit (often 1024) would
/// refuse clients long before the hard limit the administrator set.
fn raise_open_file_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
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
