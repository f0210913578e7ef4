//! The command line, as one table: clap builds the help, the usage errors (exit 2) and the
//! shell completions from these types, so they cannot drift apart.

use crate::names;
use clap::{Args, Parser, Subcommand};
use clap_complete::ArgValueCompleter;

#[derive(Parser)]
#[command(
    name = "pearlctl",
    version,
    about = "The command-line client of a running pearld, over its API (a Unix socket, or TCP with --url).",
    after_help = "Changes are validated whole and applied atomically: a refused one changes nothing and its error \
                  names the field to fix. --json on a change prints pearld's answer.\n\
                  exit codes: 0 done, 1 pearld unreachable or refused the request, 2 bad usage, 3 not found"
)]
pub struct Cli {
    /// pearld's API socket.
    #[arg(long, global = true, value_name = "PATH", env = "PEARL_SOCKET", conflicts_with = "url")]
    pub socket: Option<String>,
    /// pearld's API over TCP (`pearld --api-tcp`): https, or http where pearld serves it plain.
    #[arg(long, global = true, value_name = "https://HOST:PORT", env = "PEARL_URL")]
    pub url: Option<String>,
    /// The certificate (PEM) that vouches for pearld's: its own, or its authority's. Without it,
    /// the system's authorities.
    #[arg(long, global = true, value_name = "FILE", env = "PEARL_CA", requires = "url")]
    pub ca: Option<String>,
    /// The admin token or a VR's own token, needed when pearld has api.admin_token.
    #[arg(long, global = true, env = "PEARL_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Live counters of ports, VRs, queues and workers.
    Stats {
        #[command(flatten)]
        select: Selection,
        #[command(flatten)]
        json: Json,
        /// Refresh every second until Ctrl-C (with --json: one JSON line per second).
        #[arg(long)]
        watch: bool,
    },
    /// Serve pearld's dashboard on a loopback address, read-only, until Ctrl-C (open the URL it prints).
    Dashboard {
        /// The loopback address and port to serve on.
        #[arg(long, value_name = "HOST:PORT", default_value = crate::dashboard::DEFAULT_LISTEN)]
        listen: String,
    },
    /// List, show, create, delete, change or migrate VRs.
    #[command(subcommand)]
    Vr(VrCommand),
    /// The node's resources: capacity, granted and free by resource, fast-path slots, each VR's;
    /// `node stop` removes every VR and everything PEARL made, and pearld exits.
    Node {
        #[command(flatten)]
        json: Json,
        #[command(subcommand)]
        action: Option<NodeCommand>,
    },
    /// The desired state (the configuration file plus every run-time change), as YAML.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Virtual networks: VRs, hosts and the links between them, from one file.
    #[command(subcommand)]
    Net(NetCommand),
    /// A net's links: carrier off or on at both ends (`link set lab red-blue down`).
    #[command(subcommand)]
    Link(LinkCommand),
    /// A VR's static routes (into its kernel, mirrored to its fast path).
    #[command(subcommand)]
    Route(RouteCommand),
    /// Which stage drops what: counts and rates by stage (rx, extract, classifier, program,
    /// slow_path, queue, tx, worker, offload, kernel) and reason, node-wide or for one VR, under
    /// the names /metrics uses.
    Errors {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: Option<String>,
        #[command(flatten)]
        json: Json,
    },
    /// A VR's fast-path FIB as the workers read it: every route (static, connected, local, or
    /// from its kernel: FRR, BIRD, ip route), its next hops with port and MAC; `lookup ADDR`
    /// answers by longest prefix as forwarding does.
    #[command(after_help = "examples:\n  pearlctl fib red\n  pearlctl fib red 10.9.0.0/16\n  pearlctl fib red --family v6\n  \
                            pearlctl fib red lookup 10.9.1.7")]
    Fib {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        /// Only this prefix and the routes inside it; or `lookup ADDR`.
        #[arg(value_name = "PREFIX | lookup ADDR", num_args = 0..=2)]
        what: Vec<String>,
        /// The address family listed (by default PREFIX's, else v4).
        #[arg(long, value_parser = ["v4", "v6"])]
        family: Option<String>,
        #[command(flatten)]
        json: Json,
    },
    /// A VR's classifier rules.
    #[command(subcommand)]
    Filter(FilterCommand),
    /// A VR's output queues.
    #[command(subcommand)]
    Queue(QueueCommand),
    /// A plugin VR's key-value tables.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// A VR's frames as a pcap file.
    Capture(CaptureArgs),
    /// The VR's next packets through the pipeline: port, extract, verdict, program decision,
    /// route and next hop, output queue or drop reason.
    #[command(
        after_help = "examples:\n  pearlctl trace red --count 5\n  pearlctl trace red --match 'ip_dst=10.0.2.2/32 ip_proto=1' --port p0\n  \
                            pearlctl trace red --count 20 --pcapng red.pcapng   (tshark -r red.pcapng -T fields -e frame.comment)"
    )]
    Trace(TraceArgs),
    /// What the link out of a VR interface does to packets, changed live: the settings given
    /// replace the link's; `off` lifts them; none shows the current ones.
    #[command(after_help = "KEY=VALUE:\n  delay=20ms         added to every packet (us, ms, s)\n  jitter=5ms         \
                            the delay varies uniformly within ± this\n  loss=1%            packets lost\n  \
                            duplicate=0.5%     packets sent twice\n  rate=10mbit        the link's rate (kbit, mbit, gbit)\n\
                            example: pearlctl impair red eth0 delay=20ms jitter=2ms loss=1%")]
    Impair {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        #[arg(add = ArgValueCompleter::new(names::interfaces))]
        interface: String,
        /// KEY=VALUE settings, or `off`; none: show the current ones.
        #[arg(value_name = "KEY=VALUE|off")]
        settings: Vec<String>,
        #[command(flatten)]
        json: Json,
    },
    /// Run a command inside a VR's network namespace; `vtysh` reaches the VR's own FRR.
    #[command(after_help = "examples:\n  pearlctl exec red -- ip route\n  pearlctl exec red ip route\n  \
                            pearlctl exec red -- vtysh -c 'show ip route'")]
    Exec {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        /// The command and its arguments (after -- if they could be taken for pearlctl's options).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Print a completion script for SHELL (e.g. `pearlctl completions bash > /etc/bash_completion.d/pearlctl`).
    Completions { shell: clap_complete::Shell },
    /// Write the man pages (pearlctl.1 and one per subcommand) into DIR, for packaging.
    #[command(hide = true)]
    Man { dir: std::path::PathBuf },
}

/// Which VRs a listing shows: a node may hold thousands.
#[derive(Args)]
pub struct Selection {
    /// Only VRs whose name contains TEXT (in any case).
    #[arg(long, value_name = "TEXT")]
    #[arg(add = ArgValueCompleter::new(names::vrs))]
    pub name: Option<String>,
    /// Only VRs of this kind.
    #[arg(long, value_parser = ["fast", "kernel", "shared", "plugin"])]
    pub kind: Option<String>,
    /// The order: by id, by name, or busiest first (packets received per second).
    #[arg(long, value_parser = ["id", "name", "busiest"])]
    pub sort: Option<String>,
    /// Skip this many of the matching VRs.
    #[arg(long, value_name = "N")]
    pub offset: Option<u32>,
    /// Show at most this many VRs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
}

impl Selection {
    /// The API query that asks for this selection ("" for every VR).
    pub fn query(&self) -> String {
        let pairs: Vec<String> = [
            ("name", self.name.clone()),
            ("kind", self.kind.clone()),
            ("sort", self.sort.clone()),
            ("offset", self.offset.map(|n| n.to_string())),
            ("limit", self.limit.map(|n| n.to_string())),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", crate::client::segment(&v))))
        .collect();
        if pairs.is_empty() {
            String::new()
        } else {
            format!("?{}", pairs.join("&"))
        }
    }
}

#[derive(Args)]
pub struct Json {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Print the desired state (YAML; --json: as the API has it).
    Show {
        #[command(flatten)]
        json: Json,
    },
    /// Write the desired state as a configuration file pearld reads back to the same
    /// configuration: over the file given to `pearld --config`, it makes that file current.
    #[command(after_help = "example: pearlctl config export --output /etc/pearl/pearl.yaml")]
    Export {
        /// Write FILE (replaced whole) instead of printing.
        #[arg(long, short, value_name = "FILE")]
        output: Option<String>,
    },
}

#[derive(Subcommand)]
pub enum VrCommand {
    /// The VRs: kind, code option, ports (all, or those --name, --kind, --sort, --offset and
    /// --limit pick).
    List {
        #[command(flatten)]
        select: Selection,
        #[command(flatten)]
        json: Json,
    },
    /// One VR: interfaces, routes, queues, limits.
    Show {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        name: String,
        #[command(flatten)]
        json: Json,
    },
    /// A VR from a file (one item of the config's vrs: list, YAML or JSON), or from a name,
    /// interfaces and settings.
    #[command(after_help = "example: pearlctl vr create blue --interface name=eth0,port=p2,mac=02:00:00:00:02:00,address=10.1.0.1/24")]
    Create {
        /// The VR, as an item of the configuration's vrs: list.
        #[arg(short, long, value_name = "FILE", conflicts_with_all = ["name", "interface", "settings"])]
        file: Option<String>,
        #[arg(required_unless_present = "file")]
        name: Option<String>,
        /// name=eth0,port=p0,mac=02:00:00:00:01:00,address=10.1.0.1/24 (address= may repeat).
        #[arg(long, value_name = "SPEC")]
        interface: Vec<String>,
        /// KEY=VALUE as for `vr set`, or kind, code, id.
        #[arg(value_name = "KEY=VALUE")]
        settings: Vec<String>,
        #[command(flatten)]
        json: Json,
    },
    /// Delete the VR and everything it had.
    Delete {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        name: String,
        #[command(flatten)]
        json: Json,
    },
    /// Change a running VR in one step.
    #[command(after_help = "KEY=VALUE:\n  code=filter             the VR's built-in program (ip, ipv4, ipv6, filter, i3), swapped \
                            between two batches\n  plugin='{wasm: lab.wasm}'  a plugin VR's program ({wasm: F}, {process: [CMD, ARG]}, \
                            {xdp: F.o}), swapped the same way\n  queues=3:256,1:256      WEIGHT:LENGTH per queue\n  limits.rate_mbps=100    \
                            one limit (none lifts the rate cap)\n  routes='[{prefix: 198.51.100.0/24, via: 10.2.0.2}]'\n  KEY=YAML for \
                            routes, neighbors, match, queues, limits, resources, control_plane, token, accept_source_route, leak, nat, \
                            placement; KEY=none removes it")]
    Set {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        name: String,
        #[arg(required = true, value_name = "KEY=VALUE")]
        settings: Vec<String>,
        #[command(flatten)]
        json: Json,
    },
    /// Move a fast or kernel VR to the other data plane in place: its namespace, daemons and
    /// sessions stay, only where its packets are forwarded changes.
    #[command(after_help = "example: pearlctl vr migrate red --to kernel")]
    Migrate {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        name: String,
        #[arg(long, value_parser = ["fast", "kernel"])]
        to: String,
        #[command(flatten)]
        json: Json,
    },
}

#[derive(Subcommand)]
pub enum RouteCommand {
    /// The VR's static routes.
    List {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        #[command(flatten)]
        json: Json,
    },
    /// route add VR PREFIX [via] NEXT_HOP
    Add {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        prefix: String,
        /// The next hop's address, after `via` or alone.
        #[arg(value_name = "[via] NEXT_HOP", num_args = 1..=2, required = true)]
        next_hop: Vec<String>,
        #[command(flatten)]
        json: Json,
    },
    /// route del VR PREFIX
    Del {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        prefix: String,
        #[command(flatten)]
        json: Json,
    },
}

#[derive(Subcommand)]
pub enum NodeCommand {
    /// Removes every VR and everything PEARL made (the TAP holder included), then pearld exits
    /// 0. A stop signal (`systemctl restart`, `systemctl stop`) instead leaves every VR running
    /// for the next pearld to adopt.
    Stop,
    /// Every node of the node's cluster (pearld --cluster), up or down: lease age, the VRs
    /// placed on it, the capacity it has and what of it is free.
    List {
        #[command(flatten)]
        json: Json,
    },
}

#[derive(Subcommand)]
pub enum PluginCommand {
    /// The VR's tables; with TABLE, its entries; or get, set, del one entry. KEY and VALUE are
    /// 0x and hexadecimal digits, an IP address (its bytes) or text.
    #[command(after_help = "examples:\n  pearlctl plugin table lab\n  pearlctl plugin table lab blocked set 10.9.0.1 yes\n  \
                            pearlctl plugin table lab stats get dropped\n  pearlctl plugin table lab blocked del 10.9.0.1")]
    Table {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        table: Option<String>,
        #[arg(value_name = "get KEY | set KEY VALUE | del KEY")]
        op: Vec<String>,
        #[command(flatten)]
        json: Json,
    },
}

#[derive(Subcommand)]
pub enum FilterCommand {
    /// The VR's classifier rules, by index.
    List {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        #[command(flatten)]
        json: Json,
    },
    /// Keys as in the config's match: udp_dst=4000 ethertype=0x88b5 ip_dst=10.9.0.0/16 in_port=p0
    /// vlan=VALUE/MASK opaque=0xcafe … [priority=N] [queue=N]; a code: filter VR's rule adds its
    /// action: out=IFACE [mac=NEXT_HOP_MAC], slow or drop
    Add {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        #[arg(required = true, value_name = "KEY=VALUE", add = ArgValueCompleter::new(names::filter_keys))]
        keys: Vec<String>,
        #[command(flatten)]
        json: Json,
    },
    /// Remove rule INDEX.
    Del {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        index: String,
        #[command(flatten)]
        json: Json,
    },
}

#[derive(Subcommand)]
pub enum QueueCommand {
    /// The VR's output queues.
    List {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        #[command(flatten)]
        json: Json,
    },
    /// Replace them: WEIGHT:LENGTH per queue (e.g. queue set red 3:256 1:256).
    Set {
        #[arg(add = ArgValueCompleter::new(names::vrs))]
        vr: String,
        #[arg(required = true, value_name = "WEIGHT:LENGTH")]
        queues: Vec<String>,
        #[command(flatten)]
        json: Json,
    },
}

#[derive(Args)]
pub struct CaptureArgs {
    #[arg(add = ArgValueCompleter::new(names::vrs))]
    pub vr: String,
    /// Only this interface of the VR.
    #[arg(long, add = ArgValueCompleter::new(names::interfaces))]
    pub interface: Option<String>,
    /// Where on the VR's path: rx (default), tx or slow.
    #[arg(long, value_parser = ["rx", "tx", "slow"])]
    pub point: Option<String>,
    /// Stop after N frames.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Stop after S seconds.
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u64).range(1..))]
    pub seconds: Option<u64>,
    /// Where the pcap goes (- for standard output).
    #[arg(short = 'w', long = "write", value_name = "FILE", required = true)]
    pub write: String,
}

#[derive(Args)]
pub struct TraceArgs {
    #[arg(add = ArgValueCompleter::new(names::vrs))]
    pub vr: String,
    /// How many packets to trace (default 10).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub count: Option<u64>,
    /// Only packets matching these conditions, in the words of `filter add` (e.g. 'ip_dst=10.0.2.2/32 ip_proto=1').
    #[arg(long = "match", value_name = "FILTER")]
    pub filter: Option<String>,
    /// Only packets received on this port.
    #[arg(long, value_name = "P", add = ArgValueCompleter::new(names::ports))]
    pub port: Option<String>,
    /// Stop waiting for packets after S seconds (default 10).
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u64).range(1..=60))]
    pub timeout: Option<u64>,
    /// Write the packets to FILE as pcapng, each one's trace in its comment.
    #[arg(long, value_name = "FILE")]
    pub pcapng: Option<String>,
    #[command(flatten)]
    pub json: Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_table_is_consistent() {
        Cli::command().debug_assert();
    }

    fn parse(s: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("pearlctl").chain(s.split_whitespace()))
    }

    #[test]
    fn global_options_go_before_or_after_the_command() {
        let c = parse("vr show red --json --socket /tmp/s").unwrap();
        assert_eq!(c.socket.as_deref(), Some("/tmp/s"));
        assert!(matches!(c.command, Command::Vr(VrCommand::Show { ref name, json: Json { json: true } }) if name == "red"));
        let c = parse("--url http://127.0.0.1:9 exec red -- ip --json addr").unwrap();
        assert!(matches!(c.command, Command::Exec { ref command, .. } if command == &["ip", "--json", "addr"]));
    }

    #[test]
    fn a_trace_takes_its_filter_as_one_word() {
        let c = Cli::try_parse_from(["pearlctl", "trace", "red", "--match", "ip_dst=10.0.2.2/32 ip_proto=1", "--port", "p0", "--json"])
            .unwrap();
        let Command::Trace(a) = c.command else { panic!("not a trace") };
        assert_eq!(
            (a.vr.as_str(), a.filter.as_deref(), a.port.as_deref(), a.json.json),
            ("red", Some("ip_dst=10.0.2.2/32 ip_proto=1"), Some("p0"), true)
        );
    }

    #[test]
    fn bad_command_lines_are_usage_errors() {
        for bad in [
            "frob",
            "vr",
            "vr show",
            "stats --frob",
            "vr list --watch",
            "exec red",
            "capture red",
            "stats --socket",
            "--socket a --url http://h:1 stats",
            "route add red 10.0.0.0/8 via 10.0.0.1 10.0.0.2",
            "fib red lookup 10.0.0.1 10.0.0.2",
            "capture red -w x --point up",
            "capture red -w x --count 0",
            "capture red -w x --seconds soon",
            "trace",
            "trace red --count 0",
            "trace red --count 10001",
            "trace red --timeout 61",
            "trace red --pcapng",
        ] {
            let e = parse(bad).err().unwrap_or_else(|| panic!("{bad} parsed"));
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        }
    }
}

#[derive(Subcommand)]
pub enum NetCommand {
    /// Make or change a net from a file (`name:`, `vrs:`, `links:`, `hosts:`, or a configuration's `nets:`).
    #[command(after_help = "example: pearlctl net apply -f lab.yaml")]
    Apply {
        #[arg(short = 'f', long, value_name = "FILE")]
        file: String,
        /// The net's name, where the file does not give it (or holds several).
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        json: Json,
    },
    /// The nets: VRs, hosts, links, links down.
    List {
        #[command(flatten)]
        json: Json,
    },
    /// One net: its VRs, hosts, and links with state and counters.
    Show {
        name: String,
        #[command(flatten)]
        json: Json,
    },
    /// Remove a net: exactly what it made (VRs, hosts, veths, ports).
    Destroy {
        name: String,
        #[command(flatten)]
        json: Json,
    },
}

#[derive(Subcommand)]
pub enum LinkCommand {
    /// Carrier off (down) or on (up) at both ends of a net's link, as a cable pulled or put back.
    #[command(after_help = "example: pearlctl link set lab red-blue down")]
    Set {
        net: String,
        /// A-B (the nodes it joins), or A/IF-B/IF.
        link: String,
        #[arg(value_parser = ["up", "down"])]
        state: String,
        #[command(flatten)]
        json: Json,
    },
}
