//! The desired state of a PEARL node, as the configuration states it (validated, resolved:
//! references between sections are indices, not names).

use crate::api_tls::ApiTls;
pub use crate::control_plane::{BirdConfig, CommandConfig, ControlPlane, FrrConfig, FRR_DAEMONS};
pub use crate::impair::Impairment;
use core::net::IpAddr;
use pearl_wire::FlowKey;
use std::sync::Arc;

pub type Mac = [u8; 6];

/// The largest VR id: a node holds up to 8,192 VRs. Shared VRs' MACs carry the id in two bytes
/// (see [`shared_mac`]).
pub const MAX_VR_ID: u16 = 8191;

/// A MAC address as `02:00:00:00:01:00`.
pub fn mac_text(m: Mac) -> String {
    format!("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
}

/// The MAC address of interface `interface` of shared VR `vr`: PEARL's "the MAC says VR and
/// interface", 02:LO:HI:00:00:IF with the id's low byte first, so that a VR below 256 keeps the
/// 02:VR:00:00:00:IF of nodes that held at most 256 VRs. The data plane demultiplexes shared VRs
/// by these bytes alone.
pub fn shared_mac(vr: u16, interface: u8) -> Mac {
    let [lo, hi] = vr.to_le_bytes();
    [0x02, lo, hi, 0, 0, interface]
}

/// The shared VR and interface a MAC of [`shared_mac`]'s form encodes.
pub fn shared_mac_parts(mac: &Mac) -> Option<(u16, u8)> {
    (mac[0] == 0x02 && mac[3..5] == [0, 0]).then(|| (u16::from_le_bytes([mac[1], mac[2]]), mac[5]))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub workers: usize,
    /// `node:`, what the node offers VRs.
    pub node: NodeConfig,
    pub ports: Vec<PortConfig>,
    /// Shared with the configurations before and after a change that leaves a VR as it was:
    /// with thousands of VRs, a change to one copies pointers, not VRs.
    pub vrs: Vec<Arc<VrConfig>>,
    /// `api.tls`: the certificate the TCP API serves (`pearld --api-tcp`).
    pub api_tls: Option<ApiTls>,
}

/// The resources, in the order the configuration, the API and `pearlctl node` list them.
pub const RESOURCES: [&str; 8] = ["fib_entries", "filters", "queues", "buffer_kb", "bandwidth_mbps", "pps", "cpu_percent", "workers"];

/// Buffer a queued frame holds: a packet buffer of the worker's pool.
pub const QUEUED_FRAME_KB: u64 = 2;

/// An amount of each resource, by `RESOURCES` index; `None` where nothing is said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Resources(pub [Option<u64>; 8]);

impl Resources {
    pub fn get(&self, name: &str) -> Option<u64> {
        RESOURCES.iter().position(|r| *r == name).and_then(|i| self.0[i])
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }

    /// (name, amount) of what is said.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        RESOURCES.iter().zip(self.0).filter_map(|(n, v)| Some((*n, v?)))
    }
}

/// `distribution:` of a VR: how its traffic is spread over the node's workers (PdP's policies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Distribution {
    /// A flow (5-tuple hash) stays on one worker, in order.
    #[default]
    Flow,
    /// Frame after frame to the next worker.
    RoundRobin,
    /// Each frame to a worker drawn in proportion to its capacity (the workers' are equal).
    Proportional,
}

impl Distribution {
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Flow => "flow",
            Distribution::RoundRobin => "round_robin",
            Distribution::Proportional => "proportional",
        }
    }
}

impl Config {
    /// How port `port`'s frames are spread over the workers: as its VRs ask (they agree; the
    /// parser sees to it).
    pub fn port_distribution(&self, port: usize) -> Distribution {
        self.vrs.iter().find(|v| v.interfaces.iter().any(|i| i.port == port)).map_or(Distribution::Flow, |v| v.distribution)
    }

    /// The node as it is before any VR: its ports, workers and resources.
    pub fn without_vrs(&self) -> Config {
        Config { workers: self.workers, node: self.node, ports: self.ports.clone(), vrs: Vec::new(), api_tls: None }
    }
}

/// `node:` (see `placement.rs` and `resources.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeConfig {
    /// VRs the fast path may hold; `None`: as many as there are.
    pub fast_slots: Option<usize>,
    /// `capacity:`, amounts stated instead of the measured ones.
    pub capacity: Resources,
    /// `flow_offload:` (default on): a fast VR's established TCP flows are handed to the
    /// kernel's tc layer once the fast path has routed them (see the data plane's `offload`).
    pub flow_offload: bool,
}

impl Default for NodeConfig {
    fn default() -> NodeConfig {
        NodeConfig { fast_slots: None, capacity: Resources::default(), flow_offload: true }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    AfXdp,
    AfPacket,
    Tap,
    Pcap,
    Memory,
    /// One end of an in-memory wire to another port of the node (a net's link).
    Wire,
    /// A VXLAN tunnel over the port's interface (`PortConfig::vxlan`).
    Vxlan,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConfig {
    pub name: String,
    /// The Linux interface (or file, for pcap) the port drives.
    pub interface: String,
    pub driver: Driver,
    /// How an `af_xdp` port receives: `AfXdp` (XDP) or `AfPacket` (a PACKET ring, sending
    /// still through AF_XDP). Always the driver itself for other drivers.
    pub rx: Driver,
    /// Neither `driver:` nor `rx:` was written: pearld chooses how the port receives by what
    /// its device is (`pearl_dataplane::port::receives_through`), and `rx` is only the
    /// fallback for a device it cannot look at.
    pub by_device: bool,
    pub rate_mbps: Option<u64>,
    /// Where the `opaque` filter field of this port's frames comes from (SPP's filter key).
    pub opaque: Option<OpaqueKey>,
    /// Frames of ordinary length (up to ~1.9 KiB) an AF_PACKET port's receive ring holds
    /// (`None`: the driver's default); super-packets have a ring of their own.
    pub rx_ring_frames: Option<u32>,
    /// The tunnel of a `Driver::Vxlan` port (then always `Some`).
    pub vxlan: Option<VxlanConfig>,
}

/// A VXLAN tunnel's ends: frames go to `remote`:`dst_port` with VNI `vni`, and datagrams from
/// `remote` with that VNI arriving on `dst_port` are the port's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VxlanConfig {
    /// 1 to `MAX_VNI`.
    pub vni: u32,
    pub remote: std::net::IpAddr,
    /// Of `remote`'s family; `None`: the kernel chooses.
    pub local: Option<std::net::IpAddr>,
    pub dst_port: u16,
}

impl VxlanConfig {
    /// The IANA port.
    pub const DEFAULT_DST_PORT: u16 = 4789;
    pub const MAX_VNI: u32 = 0x00ff_ffff;

    /// The MTU of the inner IP packets an underlay of MTU `underlay_mtu` carries: less the
    /// outer IP, UDP and VXLAN headers and the inner Ethernet header (RFC 7348 §4.3), 50
    /// bytes over IPv4 and 70 over IPv6.
    pub fn inner_mtu(&self, underlay_mtu: u32) -> u32 {
        let overhead = if self.remote.is_ipv4() { 50 } else { 70 };
        underlay_mtu.saturating_sub(overhead)
    }
}

/// The most `rx_ring_frames` may say: 64 Ki frames (128 MiB of ring at 2 KiB a slot).
pub const MAX_RX_RING_FRAMES: u64 = 65_536;

/// `length` bytes of each frame from `offset` (counted from the frame's first byte), read as
/// a big-endian number into the classifier's `opaque` field; bytes past the frame's end read
/// as zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpaqueKey {
    pub offset: u16,
    pub length: u8,
}

impl OpaqueKey {
    /// Longest: the field's 128 bits.
    pub const MAX_LENGTH: u8 = 16;
    /// Furthest: within a jumbo frame.
    pub const MAX_OFFSET: u16 = 9_216;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VrKind {
    Fast,
    Kernel,
    Shared,
    Plugin,
}

impl VrKind {
    /// The kind as the configuration and the API spell it.
    pub fn name(self) -> &'static str {
        match self {
            VrKind::Fast => "fast",
            VrKind::Kernel => "kernel",
            VrKind::Shared => "shared",
            VrKind::Plugin => "plugin",
        }
    }

    /// Fast and kernel VRs are one VR placed on one data plane or the other: the same
    /// namespace, TAPs, tables and slow-path channel serve it on both.
    pub fn is_placed(self) -> bool {
        matches!(self, VrKind::Fast | VrKind::Kernel)
    }
}

/// Where a fast or kernel VR asks to be forwarded (see `placement.rs`); `kind` says where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Fast,
    Kernel,
    /// The node decides: the fast path while its `fast_slots` last.
    Auto,
}

impl Placement {
    pub fn name(self) -> &'static str {
        match self {
            Placement::Fast => "fast",
            Placement::Kernel => "kernel",
            Placement::Auto => "auto",
        }
    }

    /// The kind this placement makes a VR, if it decides it alone.
    pub fn kind(self) -> Option<VrKind> {
        match self {
            Placement::Fast => Some(VrKind::Fast),
            Placement::Kernel => Some(VrKind::Kernel),
            Placement::Auto => None,
        }
    }
}

pub use crate::grammar::CodeOption;

impl CodeOption {
    pub fn routes_v4(self) -> bool {
        match self {
            CodeOption::Ipv4 | CodeOption::Ip | CodeOption::I3 => true,
            CodeOption::Ipv6 | CodeOption::Filter | CodeOption::Reflect => false,
        }
    }
    pub fn routes_v6(self) -> bool {
        match self {
            CodeOption::Ipv6 | CodeOption::Ip | CodeOption::I3 => true,
            CodeOption::Ipv4 | CodeOption::Filter | CodeOption::Reflect => false,
        }
    }
    /// Whether only a fast VR may name it: a kernel forwards by IP alone.
    pub fn fast_only(self) -> bool {
        match self {
            CodeOption::Filter | CodeOption::I3 | CodeOption::Reflect => true,
            CodeOption::Ipv4 | CodeOption::Ipv6 | CodeOption::Ip => false,
        }
    }
}

/// What runs a VR's packets, as its kind, code option and plugin decide together: the one input
/// of the program factory (`pearl_program::make`), matched there without a catch-all
/// so that a new kind or code option is made, or refused by the compiler, in that one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program<'a> {
    /// A fast VR's code option.
    Code(CodeOption),
    /// A kernel VR: its kernel forwards.
    Kernel,
    /// A shared VR: the node's kernel forwards.
    Shared,
    /// A plugin VR's program; none when a configuration built in code gave it none (the
    /// parser refuses that).
    Plugin(Option<&'a PluginConfig>),
}

/// An address with a prefix length; for interface addresses the host bits are the address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpPrefix {
    pub addr: IpAddr,
    pub len: u8,
}

impl IpPrefix {
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => mask4(u32::from(a), self.len) == mask4(u32::from(b), self.len),
            (IpAddr::V6(a), IpAddr::V6(b)) => mask6(u128::from(a), self.len) == mask6(u128::from(b), self.len),
            _ => false,
        }
    }

    /// The prefix with host bits cleared.
    pub fn network(&self) -> IpPrefix {
        let addr = match self.addr {
            IpAddr::V4(a) => IpAddr::V4(mask4(u32::from(a), self.len).into()),
            IpAddr::V6(a) => IpAddr::V6(mask6(u128::from(a), self.len).into()),
        };
        IpPrefix { addr, len: self.len }
    }
}

fn mask4(a: u32, len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        a & (u32::MAX << (32 - u32::from(len.min(32))))
    }
}

fn mask6(a: u128, len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        a & (u128::MAX << (128 - u32::from(len.min(128))))
    }
}

impl core::fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceConfig {
    pub name: String,
    /// Index into `Config::ports`.
    pub port: usize,
    pub mac: Mac,
    pub addresses: Vec<IpPrefix>,
    /// `mtu:`, the largest IP packet sent out of the interface; `None`: its port's interface
    /// MTU, read when the data plane starts.
    pub mtu: Option<u32>,
    /// `urpf:`, unicast reverse-path forwarding on packets arriving here (RFC 3704).
    pub urpf: Urpf,
    /// `impair:`, what the link out of this interface does to packets (changes in place).
    pub impair: Impairment,
}

impl InterfaceConfig {
    /// The same interface, impairments aside: its TAP, tables and channel serve it as they are.
    pub fn same_link(&self, other: &InterfaceConfig) -> bool {
        InterfaceConfig { impair: other.impair, ..self.clone() } == *other
    }
}

/// Unicast reverse-path forwarding (RFC 3704): whether a packet's source must be routed back
/// through the interface it came in on (`strict`), routed at all (`loose`), or is not checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Urpf {
    #[default]
    Off,
    Loose,
    Strict,
}

impl Urpf {
    pub fn name(self) -> &'static str {
        match self {
            Urpf::Off => "off",
            Urpf::Loose => "loose",
            Urpf::Strict => "strict",
        }
    }
}

/// The smallest MTU an IPv4 interface may have (RFC 791) and an IPv6 one (RFC 8200).
pub const MIN_MTU_V4: u32 = 68;
pub const MIN_MTU_V6: u32 = 1280;
/// The largest MTU pearld's buffers carry (jumbo frames).
pub const MAX_MTU: u32 = 9000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteConfig {
    pub prefix: IpPrefix,
    pub via: IpAddr,
    /// Index into the VR's interfaces: the one whose subnet holds `via`.
    pub interface: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborConfig {
    pub ip: IpAddr,
    pub mac: Mac,
    /// Index into the VR's interfaces.
    pub interface: usize,
}

/// An extra classifier rule claiming frames for the VR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchRule {
    pub priority: u32,
    pub value: FlowKey,
    pub mask: FlowKey,
    /// Index into the VR's queues.
    pub queue: usize,
    /// What a `code: filter` VR does with a frame the rule matches; `None` for other VRs.
    pub action: Option<FilterAction>,
}

/// The most rules a `code: filter` VR has: the data plane carries the matched rule's index in
/// 16 bits of the classifier's verdict.
pub const MAX_FILTER_RULES: usize = 65_535;

/// A `code: filter` VR's answer to a frame its rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterAction {
    /// Out of the VR's interface `interface` as the frame stands but for its MACs: the
    /// interface's own as source and `mac` (or the frame's own) as destination.
    Out {
        interface: usize,
        mac: Option<Mac>,
    },
    /// To the VR's kernel.
    Slow,
    Drop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    pub weight: u32,
    pub length: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub rate_mbps: Option<u64>,
    /// The VR's weight against the other VRs on each of its ports; its queue weights split it.
    /// `None`: the sum of its queue weights. Set by the operator, so that a VR's owner, who may
    /// change its queues, cannot raise its own share.
    pub share: Option<u32>,
    pub fib_entries: usize,
    pub filters: usize,
    /// CPU time of the VR's processes (its control plane), in percent of one CPU.
    pub cpu_percent: u32,
    /// Memory of the VR's processes, in MiB; a plugin's memory too.
    pub memory_mb: u64,
    /// A plugin's budget per packet of a batch, in WebAssembly fuel (about one per instruction).
    pub fuel_per_packet: u64,
    /// Frames per second the fast path hands to the VR's kernel, for each class of the punt
    /// path apart (routing protocols, neighbour discovery, the rest), so that a flood of one
    /// class cannot take the others' turn. Set by the operator.
    pub punt_pps: u32,
}

/// Defaults: one CPU, so that a runaway VR leaves the substrate the rest of the machine, and
/// 512 MiB: zebra and bgpd held 100k BGP routes in 155 MiB, so this is room for about 300k (a
/// full Internet table needs more: set `limits.memory_mb`).
pub const DEFAULT_CPU_PERCENT: u32 = 100;
pub const DEFAULT_MEMORY_MB: u64 = 512;
/// Room for a lookup and a header rewrite many times over, and still a bound on a plugin that loops.
pub const DEFAULT_FUEL_PER_PACKET: u64 = 10_000;
/// A tenth of what the slow path's reactor moves for all VRs together (~200 k frames/s), so a
/// flooded VR leaves the others most of it; far above what routing protocols, neighbour
/// discovery, pings and traceroutes need.
pub const DEFAULT_PUNT_PPS: u32 = 20_000;
pub const MAX_PUNT_PPS: u64 = 10_000_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VrConfig {
    pub name: String,
    /// The VR's identifier in the data plane (PEARL's VID): stable for the VR's life, it
    /// indexes the VR's counters and tables and appears in shared VRs' MACs.
    pub id: u16,
    /// Where the VR is: for fast and kernel VRs, as `placement` resolved.
    pub kind: VrKind,
    /// `placement:` as asked (fast and kernel VRs; `kind:` when not given).
    pub placement: Placement,
    pub code: CodeOption,
    pub interfaces: Vec<InterfaceConfig>,
    pub routes: Vec<RouteConfig>,
    pub neighbors: Vec<NeighborConfig>,
    pub matches: Vec<MatchRule>,
    pub queues: Vec<QueueConfig>,
    pub limits: Limits,
    pub control_plane: Option<ControlPlane>,
    /// `accept_source_route:`, whether the VR honours IPv4 loose and strict source route
    /// options (RFC 791) in packets it forwards or receives. Off by default, as on Linux
    /// (RFC 7126 §4.3: they let a sender steer traffic around filters).
    pub accept_source_route: bool,
    /// `leak:`, prefixes imported from other VRs (admin only).
    pub leak: Vec<Leak>,
    /// `nat:`, the transport ports the VR reserves on a node address (admin only).
    pub nat: Option<NatConfig>,
    /// `resources:`, what the VR asks the node for (see `resources.rs`).
    pub resources: Resources,
    /// `distribution:`, how its traffic is spread over the workers (see `distribution.rs`).
    pub distribution: Distribution,
    /// `plugin:`, the program of a plugin VR (see `plugin.rs`).
    pub plugin: Option<PluginConfig>,
}

impl VrConfig {
    /// The program the VR runs where it is placed now.
    pub fn program(&self) -> Program<'_> {
        match self.kind {
            VrKind::Fast => Program::Code(self.code),
            VrKind::Kernel => Program::Kernel,
            VrKind::Shared => Program::Shared,
            VrKind::Plugin => Program::Plugin(self.plugin.as_ref()),
        }
    }
}

/// A plugin VR's `plugin:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginConfig {
    pub module: PluginModule,
    /// `config:`, handed to the program as JSON when it starts.
    pub config: serde_json::Value,
    /// `tables:`, the key-value tables the program and the VR's owner share (SPP's slice
    /// memory): each name with the most entries it holds, in name order.
    pub tables: Vec<(String, usize)>,
}

/// The most entries one plugin table holds.
pub const MAX_TABLE_ENTRIES: u64 = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginModule {
    /// `wasm:`, a WebAssembly module, as read when the configuration was parsed.
    Wasm { path: std::path::PathBuf, bytes: std::sync::Arc<[u8]> },
    /// `process:`, a native program run in the VR's namespace (its executable's path made
    /// absolute), which shares a batch area with pearld.
    Process { argv: Vec<String> },
    /// `xdp:`, an eBPF object file (clang's `-target bpf`) as read, and `section:`, the
    /// program: its ELF section (default: the first named `xdp...`), or its function where a
    /// section holds several.
    Xdp { path: std::path::PathBuf, bytes: std::sync::Arc<[u8]>, section: Option<String> },
}

/// A VR's `nat:` (see `nat.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NatConfig {
    pub address: core::net::Ipv4Addr,
    /// The reserved ports, `first..=last`.
    pub first: u16,
    pub last: u16,
    /// The VR interface (index) that faces the outside: what leaves through it is translated.
    pub interface: usize,
}

/// One entry of a VR's `leak:` (see `leak.rs`): prefixes it imports from another VR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    /// The VR whose routes serve the prefixes.
    pub from: String,
    pub prefixes: Vec<IpPrefix>,
}

/// The keys of a VR that may change while it runs (`PATCH /v1/vrs/{name}`, `pearlctl vr set`);
/// the others define the VR: change them by deleting and creating it.
pub const SETTABLE_VR_KEYS: &[&str] = &[
    "code",
    "routes",
    "neighbors",
    "match",
    "queues",
    "limits",
    "control_plane",
    "token",
    "accept_source_route",
    "leak",
    "nat",
    "placement",
    "resources",
    "plugin",
];

/// The largest `limits.share`: room for the sum of many queues' weights.
pub const MAX_SHARE: u64 = 1 << 30;

impl VrConfig {
    /// Whether `other` is the same VR as this one: the same namespace, TAPs, tables and
    /// slow-path channel serve it. Its program (code option), routes, rules, queues, limits,
    /// control plane, link impairments and placement (fast or kernel) may differ; a VR whose
    /// name, kind otherwise or interfaces differ is another VR.
    pub(crate) fn same_identity(&self, other: &VrConfig) -> bool {
        self.name == other.name
            && (self.kind == other.kind || (self.kind.is_placed() && other.kind.is_placed()))
            && self.interfaces.len() == other.interfaces.len()
            && self.interfaces.iter().zip(&other.interfaces).all(|(a, b)| a.same_link(b))
    }

    /// The VR's weight against the other VRs on a port: `limits.share`, or the sum of its
    /// queue weights.
    pub fn port_share(&self) -> u64 {
        self.limits.share.map_or_else(|| self.queues.iter().map(|q| u64::from(q.weight)).sum(), u64::from)
    }
}
