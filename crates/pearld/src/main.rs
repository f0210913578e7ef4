//! `pearld --config FILE [--api SOCKET] [--api-tcp HOST:PORT] [--state DIR]` (see `cli.rs`;
//! `pearld --check FILE` validates only): runs PEARL in the foreground, logging to stderr,
//! until SIGTERM or SIGINT, which leave every VR running for the next pearld to adopt
//! (`shutdown.rs`). The configuration is validated whole before anything is created.
//!
//! ## In detail
//!
//! **VR lifecycle (PEARL's vmmd), `node/`, `vmm.rs`:** each VR gets a network namespace named
//! after it (made in the mount namespace of whoever started pearld, so `ip netns exec VR` works
//! from the host even when pearld runs under `ip netns exec`), one TAP per interface with the
//! interface's name, MAC and addresses, a router kernel (forwarding on, ICMP errors unlimited), the
//! static routes and neighbours of the config, a cgroup limiting its processes' CPU and memory, its
//! FRR daemons (supervised by pearl-vrproc), and, for fast and kernel VRs, pearl-routed mirroring the
//! namespace's kernel into the VR's FIB. A kernel VR's every packet goes to its TAP. Fast and kernel
//! VRs are one VR placed on one data plane or the other (`placement:`, `placement.rs` in
//! pearl-control; `auto` VRs placed by `allocator.rs`, the FPGA substrate's greedy heuristic, see
//! `docs/PLACEMENT.md`, which pearld re-runs against the running VRs at each change): they keep the same namespace,
//! TAPs, channel and tables (`VrConfig::same_identity`, which only `ConfigDiff` asks), and routed keeps a kernel VR's tables in
//! sync, so moving one (`POST /v1/vrs/{name}/migrate`, `migrate.rs`) is a change like any other
//! whose new plan only flips the VR's `to_kernel` flag, taken up by the workers between two
//! batches: nothing is made, removed or resynced. A VR's `resources:` (`resources.rs` in
//! pearl-control) fill its limits and bound its queues when parsed; the node admits a document
//! whole against its capacity (`capacity.rs`: measured at start, `node.capacity` over it) before a
//! change is stored (`pearl_control::admit`, which names the VR whose request is new or grew).
//! With several workers each opens every port in one AF_PACKET fanout group (`ports.rs`): at
//! each change the data plane re-runs SliceAlloc (`slice_alloc.rs`; VRs that stay keep their
//! workers) and gives each port a steering program over its VRs' workers (`dataplane::port::steering`), or, for
//! `round_robin`, leaves the kernel to rotate frames over all of them;
//! shared VRs'
//! frames are claimed by one classifier rule on the MAC pattern 02:LO:HI:00:00:IF (the VR id low byte first, so ids below 256 read 02:VR:00:00:00:IF) and ride one
//! shared channel, demultiplexed by MAC. Deleting a VR (or stopping pearld) removes all of it.
//! A node holds up to 8,192 VRs (ids 0–8191). Many VRs are made and removed by 16 threads at once
//! (`node/`), and their route mirrors started the same way: most of the work is waiting for the
//! kernel, whose `rcu_barrier` on closing a TAP's last descriptor the threads share. Nothing per VR
//! forks: the VR's kernel settings are written below its `/proc/sys/net/ipv4` and `ipv6`, looked up
//! once from a thread that entered its namespace (`sysctl.rs`; the kernel finds a namespace's
//! sysctl directories among every namespace's, under a lock, so at 4,096 VRs these lookups are
//! most of the startup time), its links, addresses, static
//! routes and neighbours are set through rtnetlink from such a thread (`netconf.rs`), and the
//! processes left in a namespace are found in /proc. `ip -n`/`ip netns exec` copy every mount of
//! the host (a bind mount per VR) and a fork copies pearld's descriptor table (thousands of TAPs and
//! sockets), so each costs O(N) per VR; pearld runs no `ip` for namespaces either (`ip netns exec`
//! remains only to start a VR's daemons, `vrproc`). A VR created at run time
//! does without making a namespace and the sysctl lookup too (each ~10 ms at 4,096 namespaces): pearld
//! keeps two spare namespaces made ahead (`spare_spaces.rs`, `fresh_netns.rs`: unshared on a
//! short-lived thread, held by their nsfs descriptors, their loopback up and `/proc/sys/net`
//! directories open), and
//! names one for the VR as `ip netns add` would (a bind mount on `/run/netns/NAME`, `/run/netns` a
//! shared mount of itself, in the starter's mount namespace, `host_mounts.rs`), refilled after the
//! change (the first filling is waited for at start, so an idle node spends nothing on it); the VRs made at start, and any beyond the spares, have one made the same way on the spot
//! (`fresh_netns.rs` also removes a name as `ip netns del` does: detach the bind mount, unlink). A
//! namespace just made (either way) has no device the holder could keep: its TAPs are all made
//! from one thread in it, without asking the holder or looking for a device of the same name.
//! Unnamed spares die with pearld, however it ends. A VR holds no descriptor
//! but its TAPs and its slow-path doorbell (a node of 4,096 two-interface VRs fits a
//! 20,000-descriptor limit): routed hears every namespace on one socket, cgroup files are opened
//! for a spawn, routed's dump socket for a dump, and its kernel's drop counters are read on demand (pearl-vrproc).
//! `holder.rs`: a small process (`pearld --hold-taps`) keeps a copy of every TAP's descriptor, so
//! a pearld killed with SIGKILL leaves the VRs' links up; started again, pearld re-adopts the
//! namespaces and TAPs. Live restore (`shutdown.rs`): SIGTERM and SIGINT stop pearld as SIGKILL
//! would for the VRs (`Node::leave`: namespaces, TAPs in the holder, cgroups and daemons stay);
//! `POST /v1/node/stop` (`pearlctl node stop`) is the teardown (`Node::stop`). A start that
//! fails removes only the VRs it made: the ones it adopted run on, and so does the holder. Flow
//! offload's tcx links go to the holder too (`#tcx/IFINDEX`), with the kernel's flow table left
//! full: offloaded flows keep forwarding while no pearld runs, until the next one detaches them. Ownership
//! (`owned.rs`, `adoption.rs`): a registry beside the API socket (`SOCKET.owned`: the boot, then
//! each VR namespace PEARL made with its inode and interfaces) decides what PEARL may take or
//! remove; a VR named after any other namespace is refused (`vrs[N].name`), and at start the VRs
//! PEARL left running that the desired state no longer has are removed. `instance.rs`: flocks on
//! the stored state, the API socket and each port interface (`/run/pearl/interfaces/NETNS-IFNAME`)
//! refuse a second pearld before it touches anything, and so does another program's XDP program
//! on a port. `port_stack.rs` turns IPv6 off on every kernel port interface, so that only the VRs'
//! interfaces answer on a port's link (not the port's own EUI-64 link-local), and on again when pearld
//! gives the port back (`pearlctl node stop`, or a start whose configuration no longer has it: notes
//! under `/run/pearl/port-ipv6`). `cgroupfs.rs` mounts the cgroup hierarchies where `ip netns exec` hid them.
//!
//! **Desired state, `desired.rs`, `store.rs`, `changes.rs`:** the configuration is kept as a JSON
//! document. A runtime change to one VR (create, delete, patch, routes, rules, queues, impairments,
//! migrate: `Edit::AddVr`, `RemoveVr`, `Vr`) edits the document in place and keeps how to undo it;
//! a whole new document (`PUT /v1/config`) goes to a copy. Either is validated whole with the
//! file's own parser (VRs whose entries and surroundings are as the running node has them are
//! taken over as they are, by pointer: `Config.vrs` holds `Arc<VrConfig>`, shared by the
//! configurations before and after a change; only the checks across VRs run over them, and no
//! path is spelt out unless it names an error. `config_from_document_since` is told which entry a
//! one-VR edit added, changed or removed (`VrEdit`, which maps the other entries to the running
//! VRs by position), or compares with the earlier document; VRs that read files, a
//! plugin's module or a control plane's configuration, are parsed anew every time). A one-VR
//! edit is first checked against `VrIndex` (`vr_index.rs`), the running configuration's claims
//! across VRs (names, MACs, ids, tokens, match rules by priority, NAT reservations, the names leaks
//! import from, each port's distribution, fast slots), which `Desired` keeps from change to change
//! (`advance` after a change lands; made anew at start and after a whole document): the VR added
//! or changed is parsed alone and its claims looked up (`config_after_vr_edit`, `indexed_edit.rs`),
//! so validation takes time in proportion to that VR (0.1–0.3 ms at 4,096 VRs, from 4–5 ms); any
//! error or doubt (VRs parsed anew, `auto` placement) takes the way above, whose words name the
//! field. The document is then written
//! ahead under `--state DIR` (default `/var/lib/pearl`): a one-VR change as one synced line of a
//! journal (the VR entry put, or the name deleted, numbered after the snapshot's generation), a
//! whole document, or a journal grown as long as the snapshot, as a new snapshot (temporary file,
//! fsync, rename; the journal then starts empty); then it is
//! applied (`Node::update`: the new namespaces are made while the data plane takes its new plan,
//! on two threads; then removals); a refusal undoes the edit, takes back whichever of the two
//! went through, and restores the stored copy, so nothing is half-applied. Every change path goes
//! through `landing::land`, which also catches a panic anywhere in the change (the edit, the
//! validation, the node's apply: `Node::update` first takes the node back to the configuration in
//! force) and takes it back the same way, answered 500. What the running workers cannot take in
//! place (ports added, changed or removed, `workers`, a port's fanout mode) is stored, answered,
//! and applied by pearld executing itself again over its VRs (`shutdown.rs`: the live restore of
//! a restart, in the same process; every VR pauses for it, namespaces, daemons and sessions stay;
//! further changes are refused 409 until the new image answers); a new port whose interface is
//! missing is refused before anything is stored, 422 naming `ports[N].interface`. A crash mid-change leaves
//! the old or the new document on disk, whole. `landing.rs`'s property test runs 10,000 random
//! changes (ports included) against a model, with the node replaced by one that lands, refuses or
//! panics before or after storing; `tests/system/test_atomic.py` drives the real node. The node, the data
//! plane and the readers share the new configuration (one `Arc<Config>`), and what the change
//! replaced (a whole old document, the workers' old plans, the old layout, token index and readers'
//! view) is freed on a thread of its own
//! (`dropper.rs`), not on the caller's time. The id a VR was
//! given (the lowest free one, in list order, where the document states none) is written into the
//! document, so deleting a VR listed earlier never renumbers the others, and a whole new document
//! keeps the ids of the VRs it keeps (`pin_ids`, `carry_ids`). A VR's token is admitted at
//! `api.owner_requests_per_second` (`owner_rate.rs`: an allowance per VR, refilled from the clock;
//! past it 429 with `Retry-After`); the admin token is not limited. API calls read the tokens from a
//! snapshot taken after each change (`Node::access`), and stats, metrics and listings read a
//! `NodeView` (the configuration in force, each VR's slow-path counters, route-mirror figures and
//! namespace, indexed by VR id, and the VRs by name for the calls that name one, `vr_names.rs`)
//! published when a change ends: neither waits for a change in
//! progress. A change is decided once, VR by VR, by `pearl_control::ConfigDiff` (`config_diff.rs`):
//! the VRs of the two configurations that are not one shared `Arc` (`changed_vrs`, `vr_pairs.rs`:
//! pointer walks over both lists, ids read only where they differ), each added, removed, replaced
//! (name, kind or interfaces differ: made anew) or changed in place; those equal field by field are
//! only restated (a control plane set again rereads its FRR file). pearld makes and removes
//! namespaces from it and hands it to `Dataplane::update`, which refuses a diff not taken from its
//! configuration in force (pearld keeps that very `Arc`), and the next `NodeView` shares the last one's per-VR entries in 64-VR chunks (`by_vr_id.rs`),
//! setting only the VRs the change touched. A new VR's cgroup is made beside its network (setting
//! a CPU limit walks every task group on the node). The token snapshot is taken again only when a change can move a token. With
//! `--log-level debug`, each change logs the milliseconds of its phases (validate, admit, store,
//! diff, namespaces and data plane, slow path and removals, routed, publish).
//! Started again on the same configuration file, pearld restores the stored document (the
//! snapshot, then the journal's lines newer than it; a last line cut short by a crash was never
//! acknowledged and is left out). The snapshot's header keeps two hashes of documents (keys in
//! order, so that a comment or another layout hashes alike, `file_vs_state::document_hash`): the
//! file's document it grew from, and the document as first stored from that file. A start
//! compares the first with the file's (was the file edited?) and the second with the restored
//! document (was anything changed at run time?); `config_load.rs` then applies the rule of
//! `file_vs_state.rs`: unchanged file, the stored state; edited file and no run-time change, the
//! file; both, refused with what differs unless `--config-wins`/`--state-wins`. Both hashes are
//! taken once per start (and per new file), not per change: the journal keeps its O(1) line.
//! `router.rs` hands each answered change to `audit.rs`, one info line (who, what, result).
//!
//! `allocator.rs`: pearld allocates with glibc, set (before any thread starts) to two arenas, a
//! fixed 128 KiB threshold above which blocks are mapped on their own, and trimming above 1 MiB, so
//! that the large, short-lived values it makes all day (a full table's maps after a BGP flap, a
//! whole document put through the API) go back to the kernel when dropped; mimalloc and glibc's
//! defaults both kept them (`scale.md`, "pearld's allocator").
//!
//! `pearld --config FILE [--api SOCKET] [--api-tcp HOST:PORT]` validates the file, opens every
//! port, starts the workers, serves the API and stops on SIGTERM/SIGINT, leaving the VRs running. It says on stderr which
//! driver each port runs on (`pearld: ports[0] (eth1): AF_XDP, native XDP, copy mode`).
//! `driver: af_xdp` (the default) opens an `AfXdpPort` with `workers: 1` (with `rx: af_packet`, a
//! `SplitPort`: `AF_XDP tx (copy mode), AF_PACKET rx`); where AF_XDP cannot bind
//! (several rx queues, a large MTU, the XDP hook taken, no XDP support) or with `workers > 1`, the
//! port runs on AF_PACKET and the line says why, with the errno where the kernel refused.
//! Every crate logs through `tracing` (events, no per-packet logging: a worker logs only a port's
//! interface going and coming back); pearld alone installs a subscriber (`logging.rs`): one line per
//! event, `pearld: ` (`routed[NS]: ` for route mirroring), `warning: `/`error: ` by level, `vr NAME: `
//! for an event about one VR; under systemd each line starts with its syslog priority so journald
//! keeps the level; `--log-level`/`PEARL_LOG` filters.
//!
//! The API is HTTP/1.1 on a Unix socket (default `/run/pearl/pearl.sock`) and, with `--api-tcp`, on
//! TCP (`api.rs`), HTTPS when the configuration gives `api.tls` (`tls.rs`: rustls with the ring
//! provider through tokio-rustls; the acceptor is rebuilt when the files' paths or times change;
//! plain HTTP only on loopback or with `--api-tcp-plain`; `pearl_control::ApiTls` builds the
//! server's settings when the configuration is validated, so a bad certificate is refused like any
//! field). Each connection is a task on a small tokio runtime (one I/O thread), served by hyper
//! (`serve.rs`: HTTP/1.1 with chunked bodies and `Expect: 100-continue`), so an idle
//! or slow client costs a few KiB and no thread; up to 4,096 at once (more wait in a 4,096-deep
//! backlog). A client that asks (`Connection: keep-alive`, as browsers send) keeps its connection
//! for request after request; others get one answer and the end of the stream, as clients that read
//! to it expect. Each head has a 5 s deadline (from the connection, or from the previous answer: an
//! idle kept-alive connection closes then too), each body 5 s more (then 408, and the client is let
//! go), and a client that stops taking its answer is let go after 5 s (`rewound.rs`); heads are
//! capped at 16 KiB (431/414) and bodies at 1 MiB (413, before a byte of it is read when
//! Content-Length announces more). Handlers run on at most
//! 64 blocking threads, as they take the node's locks; `/healthz` stays answered behind 1,000 idle
//! and 100 slow clients per listener (`bench/api_load.py`, `docs/benchmarks/isolation.md`).
//! hyper answers a malformed head with a bare status line, so `http.rs` checks a connection's first
//! head before hyper reads it (pure functions over bytes; the bytes read are handed to hyper again)
//! and refuses a malformed one with a
//! 4xx whose JSON body `{"error", "field"}` names the part at fault. `routes.rs` is the endpoint
//! table (method, path, summary, parameter, body and response schemas, handler): `router.rs`
//! dispatches from it, checking path parameters and JSON bodies against their schemas
//! (`validate.rs`) before a handler runs and answering a panicking handler with a logged 500;
//! `openapi.rs` generates `/openapi.json` from it, so the document cannot drift (a unit test checks
//! the router serves exactly the documented operations; schemathesis checks responses against
//! their strict schemas). Response bodies are Rust types (`models/`, one file per area, `Serialize` and
//! schemars' `JsonSchema`): the handler fills one and serialises it, and `schemas.rs` generates its
//! schema from the type (OpenAPI 3.0 dialect, subschemas inlined), so a field added to a body is in the
//! document by construction (a test holds every response object closed). The schemas of the
//! configuration's bodies (`/v1/config`, a VR, a VR's patch, route, match rule, queues, limits) and of
//! the answers that echo the document are generated the same way from pearl-control's grammar types
//! (`pearl_control::spec`, `models::grammar_of`), marked `x-pearl-grammar`: `validate.rs` checks only
//! their top (type, required keys) and the parser the rest, naming the field by its path in the
//! document (422). The schemas of the other inputs are hand-written, within what `validate.rs`
//! enforces. Read endpoints: `/v1/stats` (counters per port, VR, queue and worker,
//! a port's `rx_dropped` being what its driver lost before the pipeline — kernel ring full, no
//! buffer — which each worker asks its ports for every 0.1 s through `Port::rx_dropped`, a
//! syscall kept off the per-batch path; stamped with pearld's monotonic clock; each worker's CPU time read from its thread's CPU clock,
//! and its stalls, the gaps over 1 ms between two rounds that it did not choose, from the round start's clock read it makes anyway;
//! `stats.rs` fills `models::stats` from the counters and serialises it straight to text, no JSON tree per VR, and the
//! metrics take the same text parsed),
//! `/v1/vrs` (it and `/v1/stats` take query parameters declared in the endpoint table like path
//! ones, `router::Place::Query`: `vr_query.rs` filters by name and kind, sorts — `busiest` by
//! `activity.rs`'s packets-per-second, sampled only by the reads that ask — and pages, and
//! `vrs_total` counts the matches), `/v1/vrs/{name}`, `/healthz`, `/openapi.json`, `/metrics` (Prometheus text: every
//! counter labelled by port, vr, queue, worker and drop reason, plus per-second rates, worker
//! utilisation and busy ratio over the last interval, computed by a sampler thread, `rates.rs`: one
//! second, stretched so that sampling takes at most 0.5 % of it — with thousands of VRs a sampling
//! takes tens of milliseconds; `pearl_rate_interval_seconds` gives the interval. Nobody watching,
//! nothing sampled: the sampler sleeps until `/metrics` is read and again after 120 s without a
//! reader; the read that wakes it waits for one fresh interval), and
//! `/v1/vrs/{name}/fib` and `…/fib/lookup` (`fib.rs`: a fast-path VR's tables as the workers read
//! them, a bounded page per request under the tables' lock, routes named by origin from the VR's
//! configuration, next hops by port, interface and MAC; a lookup goes through the published table,
//! with a reader of its own, as a worker's does), `/v1/errors` (`errors.rs`: the drop and exception
//! families of `/metrics`, taken from `metrics::families` so the names agree, each sample given its
//! pipeline stage and its rate from `rates.rs`),
//! `/`, the dashboard (`dashboard.html`, compiled in; no external assets): the 20 busiest VRs (or
//! those a search names) with kinds and ports, per-VR and per-queue packets/s and bits/s charts drawn on canvases from `/v1/stats` polled
//! four times a second, rates and axis ticks in SI units with three significant digits (`fmtRate`), its numbers also in `data-` attributes for tests (`docs/dashboard.png`);
//! a Networks view drawing each net of `/v1/nets` (polled once a second) as SVG: VRs, hosts, links coloured up/down with
//! their bits/s each way (the links' `traffic` counters over `time_seconds`), VRs that name a `node` grouped by it.
//!
//! `pearlctl [--socket PATH | --url http://HOST:PORT]` (or `PEARL_SOCKET`, `PEARL_URL`) has `stats`, `vr`, `route`, `filter`,
//! `queue`, `capture`, `fib` (pages through the API until `next` is null), `errors`, `exec VR [--] CMD` (asks pearld for the VR's namespace, then becomes `ip netns
//! exec NS CMD`, so CMD's exit status is pearlctl's; a `vtysh` without a pathspace gets `-N VR`, the
//! pathspace the VR's FRR runs in, a `birdc` without `-s` the VR's BIRD socket), `dashboard` (serves the page and the two reads it
//! makes, nothing else, on a loopback address through pearlctl's own connection) and `completions SHELL`. Its command line is one
//! table of clap types (`cli.rs`) from which the help, the usage errors and the completion scripts are
//! made; each command's work is in the file named after it. Each request is one connection
//! (`target.rs` says where: the Unix socket, `/run/pearl/pearl.sock` by default, or `--url`'s TCP
//! address, in TLS when it is https) made by `connect.rs` and spoken by hyper's HTTP/1.1 client
//! (`client.rs`), on a current-thread tokio runtime per request, with a 10 s timeout over connecting,
//! sending and reading the answer whole (`capture`: its `--seconds` plus 10 s, and without
//! `--seconds` only connecting is bounded); TLS is tokio-rustls with `tls.rs`'s check of pearld's
//! certificate (`--ca FILE`, an authority or the very certificate, or else the system's
//! authorities), done before the token is sent. Exit codes: 0 done, 1 pearld
//! unreachable or refused, 2 bad usage, 3 no such VR (a 404; `refusal.rs` passes pearld's reason and
//! field on); messages say what to change.

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
mod cluster;
mod config_load;
mod ctx;
mod desired;
mod doc_diff;
mod dropper;
mod errors;
mod fib;
mod file_vs_state;
mod fresh_netns;
mod handlers;
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
mod net_hosts;
mod netconf;
mod nets;
mod node;
mod openapi;
mod owned;
mod owner_rate;
mod plugin_tables;
mod plugins;
mod port_stack;
mod ports;
mod rates;
mod reference;
mod rewound;
mod route_hold;
mod router;
mod routes;
mod schemas;
mod serve;
mod sessions;
mod shutdown;
mod slowpath;
mod spare_spaces;
mod stats;
mod stopwatch;
mod store;
mod suite_query;
mod sysctl;
mod tls;
mod trace;
mod validate;
mod vmm;
mod vr_health;
mod vr_names;
mod vr_query;
mod vrs;
mod wires;
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
    if let Some(format) = cli.print_reference {
        let schema = schemas::document();
        print!("{}", if format == "man" { reference::man(&schema) } else { reference::markdown(&schema) });
        return Ok(());
    }
    if let Some(file) = cli.check {
        let path = file.or(cli.config).ok_or("--check needs a FILE (or --config FILE)")?;
        println!("{}", config_load::check(&path).map_err(|e| e.to_string())?);
        return Ok(());
    }
    let config_path = cli.config.expect("clap requires --config");
    raise_open_file_limit();
    let cluster = cli.cluster.zip(cli.node).map(|(urls, node)| cluster::Options {
        urls,
        node,
        underlay: cli.underlay,
        lease_ttl: cli.lease_ttl,
        api_tcp: cli.api_tcp.clone(),
        state_dir: cli.state.clone(),
    });
    let (api_path, api_tcp, api_tcp_plain, state_dir) = (cli.api, cli.api_tcp, cli.api_tcp_plain, cli.state);
    let winner = match (cli.config_wins, cli.state_wins) {
        (true, _) => file_vs_state::Winner::Config,
        (_, true) => file_vs_state::Winner::State,
        _ => file_vs_state::Winner::Undecided,
    };
    // Before anything is read or touched: a second pearld on this node's state or socket
    // must leave the first unharmed.
    let _node_claims = instance::claim_node(&state_dir, &config_path, &api_path).map_err(|e| e.to_string())?;
    let joining = cluster.map(cluster::connect).transpose()?;
    let (config, desired) =
        config_load::load(&config_path, &state_dir, winner, joining.as_ref().is_some_and(|j| j.fresh)).map_err(|e| e.to_string())?;
    let _port_claims = instance::claim_ports(&config).map_err(|e| format!("{config_path}: {e}"))?;
    port_stack::silence(&config);
    let tcp_scheme =
        api_tcp.as_deref().map(|addr| tls::Scheme::choose(addr, api_tcp_plain, &config)).transpose().map_err(|e| e.to_string())?;

    // Block the stop signals before any thread starts, so every thread inherits the mask and
    // the main thread alone receives them with sigwait.
    let signals = stop_signals();
    // SAFETY: a valid, initialised signal set.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut()) };

    cgroupfs::ensure_visible().map_err(|e| format!("cgroups for VR limits: {e}"))?;
    let holder = holder::Holder::connect_or_start(&holder::socket_for(&api_path)).map_err(|e| e.to_string())?;
    let owned = owned::Owned::open(&owned::path_for(&api_path)).map_err(|e| format!("the registry of PEARL's namespaces: {e}"))?;
    let node = Arc::new(Node::start(&config, desired, holder, owned).map_err(|e| format!("{config_path}: {e}"))?);
    nets::restore_states(&node.document());
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
    if let Some(joining) = joining {
        if let Err(e) = cluster::start(joining, &node) {
            api.stop();
            if let Ok(node) = Arc::try_unwrap(node) {
                node.leave();
            }
            return Err(e);
        }
    }
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
        // The answer to `POST /v1/node/stop` (or to the change) is on its way once its handler
        // is done (a net's change removes its hosts and veths first): stopping the API drops
        // the connections in flight.
        shutdown::wait_for_answers(std::time::Duration::from_secs(10));
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    api.stop();
    cluster::stop(tear_down);
    let Ok(node) = Arc::try_unwrap(node) else { return Err("internal: the API still holds the node".into()) };
    if tear_down {
        let doc = node.document();
        node.stop();
        nets::remove_hosts(&doc);
        port_stack::restore(&config);
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
