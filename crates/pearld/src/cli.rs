//! pearld's command line, one table from which clap builds the help, the usage errors (exit 2)
//! and the man page (`pearld --man`, for packaging).

use clap::Parser;

pub const DEFAULT_API: &str = "/run/pearl/pearl.sock";
pub const DEFAULT_STATE: &str = "/var/lib/pearl";

#[derive(Parser)]
#[command(
    name = "pearld",
    version,
    about = "PEARL's daemon: runs the virtual routers a configuration names (namespaces, TAPs, cgroups, control-plane daemons, \
             the fast path) in the foreground, logging to stderr, until SIGTERM or SIGINT.",
    after_help = "The configuration is validated whole before anything is created; an error names the field \
                  (`pearld --check FILE` validates a file the same way without touching anything: exit 0, or 2 and the start's message).\n\n\
                  The desired state (the file plus the API's changes) is kept in the state directory and restored on the next start. \
                  The file's document is compared, not its text: a comment or another layout is no change. \
                  If the file's document changed and the stored state holds no run-time change, the file wins. \
                  If it changed and the stored state holds run-time changes, pearld refuses to start (exit 2), lists what differs, \
                  and waits for --config-wins (start from the file, each dropped change logged) or --state-wins (start from the stored \
                  state; the file is stale: `pearlctl config export --output FILE` makes it current).\n\n\
                  Live restore: SIGTERM and SIGINT (so `systemctl restart` and `systemctl stop`) stop pearld but leave every VR \
                  running, its namespace, TAPs, cgroup and daemons; the next pearld (also after SIGKILL) adopts them, their \
                  sessions up, and removes those the desired state no longer has. `pearlctl node stop` (POST /v1/node/stop) \
                  removes every VR and everything PEARL made, then pearld exits 0. A change through the API to the ports, \
                  the workers or a port's fanout is stored and applied the same way: pearld executes itself again over its VRs.\n\n\
                  Ownership: PEARL records each namespace it makes (SOCKET.owned); a VR whose name is a namespace PEARL did \
                  not make is refused, and PEARL never changes or removes what it did not make. One pearld per stored \
                  state (state directory and configuration file), API socket and port interface: a second one is refused at start, the first unharmed."
)]
pub struct Cli {
    /// The configuration (YAML): ports, workers, VRs.
    #[arg(long, value_name = "FILE", required_unless_present_any = ["man", "check", "print_reference"])]
    pub config: Option<String>,
    /// Validate the configuration FILE (or --config's) as a start would, then exit: 0 and a
    /// summary when valid, 2 and the start's message when not. Nothing is made or written.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub check: Option<Option<String>>,
    /// When the file changed since the stored state was saved and that state holds run-time
    /// changes: start from the file, dropping them (each is logged).
    #[arg(long, conflicts_with = "state_wins")]
    pub config_wins: bool,
    /// When the file changed since the stored state was saved and that state holds run-time
    /// changes: start from the stored state (the file is stale until exported over).
    #[arg(long)]
    pub state_wins: bool,
    /// The API's Unix socket (root's).
    #[arg(long, value_name = "SOCKET", default_value = DEFAULT_API)]
    pub api: String,
    /// Also serve the API over TCP: HTTPS with the configuration's api.tls {certificate, key};
    /// without them, plain HTTP on a loopback address only (or anywhere with --api-tcp-plain).
    #[arg(long, value_name = "HOST:PORT")]
    pub api_tcp: Option<String>,
    /// Serve --api-tcp as plain HTTP on any address (tokens then cross the network in clear text).
    #[arg(long, requires = "api_tcp")]
    pub api_tcp_plain: bool,
    /// Where the desired state is kept across restarts.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STATE)]
    pub state: String,
    /// How much to log: error, warn, info (each line says its level; under systemd journald
    /// keeps it), debug or trace.
    #[arg(long, value_name = "LEVEL", env = "PEARL_LOG", default_value = "info", value_parser = crate::logging::LEVELS)]
    pub log_level: String,
    /// Join a cluster: etcd's client URLs, http://HOST:2379[,http://HOST:PORT...]. The node
    /// registers under a lease, places the nets applied on any node over the cluster's nodes
    /// (docs/CLUSTER.md); without it the node stands alone, as always.
    #[arg(long, value_name = "URLS", requires = "node")]
    pub cluster: Option<String>,
    /// This node's name in the cluster (what a net's `node:` names), unique in it.
    #[arg(long, value_name = "NAME", requires = "cluster")]
    pub node: Option<String>,
    /// The device cross-node links' tunnels leave by (default: the one the route to the
    /// cluster's first member leaves by).
    #[arg(long, value_name = "DEVICE", requires = "cluster")]
    pub underlay: Option<String>,
    /// Seconds the node's lease lasts without a renewal (it renews every third of it): how
    /// soon a dead node is taken for down.
    #[arg(long, value_name = "SECONDS", default_value_t = 5, value_parser = clap::value_parser!(i64).range(2..=60))]
    pub lease_ttl: i64,
    /// Print the man page (roff) and exit.
    #[arg(long, hide = true)]
    pub man: bool,
    /// Print the configuration reference (every key of the YAML file, from the grammar's types)
    /// as Markdown (docs/config-reference.md) or as the pearl.yaml(5) man page, and exit.
    #[arg(long, value_name = "FORMAT", value_parser = ["markdown", "man"])]
    pub print_reference: Option<String>,
}
