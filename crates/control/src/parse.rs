//! YAML text → [`Config`], refusing the whole document at the first problem, named by path.

use crate::access::{parse_api, Tokens};
use crate::error::ConfigError;
use crate::matches::parse_match;
use crate::model::*;
use crate::node::{each, optional, required, Node};
use crate::values::{ip, mac, prefix};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use yaml_rust2::{Yaml, YamlLoader};

/// The largest queue weight: wide enough for any ratio an operator means, small enough that a
/// port's quanta stay far from overflow.
const MAX_WEIGHT: u64 = 1_000_000;

/// Parses and validates a configuration document; file names in it are relative to the
/// current directory. Nothing is created from a document that fails: callers act only on the
/// `Config` this returns.
pub fn parse_config(text: &str) -> Result<Config, ConfigError> {
    parse_config_in(text, &std::env::current_dir().unwrap_or_default())
}

/// As [`parse_config`], with file names relative to `base_dir` (the YAML file's directory).
pub fn parse_config_in(text: &str, base_dir: &Path) -> Result<Config, ConfigError> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| ConfigError::at("", format!("YAML: {e}")))?;
    let [doc] = docs.as_slice() else {
        return Err(ConfigError::at("", "expected exactly one YAML document"));
    };
    parse_yaml_in(doc, base_dir)
}

/// Validates a YAML tree whole, as `parse_config_in` does its text.
pub(crate) fn parse_yaml_in(doc: &Yaml, base_dir: &Path) -> Result<Config, ConfigError> {
    parse_yaml_reusing(doc, base_dir, &[])
}

/// A VR validated by an earlier change, taken as it is; its entry's `token`, which the
/// document keeps and `VrConfig` does not.
pub(crate) struct Reused<'a> {
    pub vr: &'a Arc<VrConfig>,
    pub token: Option<&'a str>,
}

/// As [`parse_yaml_in`], with the VRs at the positions where `reused` has one taken as
/// validated already (their entries in `doc` are not read) and checked against the others as
/// if parsed anew. With thousands of VRs, such a VR costs a few lookups: nothing of it is copied
/// and no path is spelt out unless it names an error.
pub(crate) fn parse_yaml_reusing(doc: &Yaml, base_dir: &Path, reused: &[Option<Reused<'_>>]) -> Result<Config, ConfigError> {
    let root = Node::root(doc);
    root.only_keys(&["workers", "node", "ports", "vrs", "api"])?;
    let workers = optional(&root, "workers", |n| n.uint(64))?.unwrap_or(1) as usize;
    if workers == 0 {
        return Err(ConfigError::at("workers", "must be at least 1"));
    }
    let mut port_names: HashMap<String, String> = HashMap::new();
    let mut interfaces: HashMap<String, String> = HashMap::new();
    let ports = each(&root, "ports", |n| {
        let p = parse_port(n)?;
        if let Some(first) = port_names.insert(p.name.clone(), n.path().to_string()) {
            return Err(ConfigError::at(format!("{}.name", n.path()), format!("duplicate of {first}.name")));
        }
        if let Some(first) = interfaces.insert(p.interface.clone(), n.path().to_string()) {
            return Err(ConfigError::at(format!("{}.interface", n.path()), format!("{} is already driven by {first}", p.interface)));
        }
        Ok(p)
    })?;
    let explicit_ids = explicit_vr_ids(&root, reused)?;
    let (admin_token, api_tls) = optional(&root, "api", |n| parse_api(n, base_dir))?.unwrap_or_default();
    let tokens = Tokens::new(admin_token);
    let mut state = VrCheck {
        ports: &ports,
        base_dir,
        vr_names: HashMap::with_capacity(reused.len()),
        macs: HashMap::with_capacity(2 * reused.len()),
        explicit_ids,
        ids: HashSet::new(),
        lowest_free: 0,
        tokens,
        workers,
    };
    let node = crate::placement::parse_node(&root)?;
    let mut vrs = Vec::new();
    if let Some(list) = root.get("vrs") {
        let at = root.child_path("vrs");
        for (i, entry) in at.node(list).list()?.iter().enumerate() {
            let vr = match reused.get(i).and_then(Option::as_ref) {
                Some(r) => state.register(i, r)?,
                None => Arc::new(state.parse_vr(at.node(list).index_path(i).node(entry), i)?),
            };
            vrs.push(vr);
        }
    }
    crate::placement::place(&mut vrs, &node)?;
    crate::distribution::check_ports(&vrs, ports.len(), workers)?;
    crate::matches::refuse_ambiguous(&vrs)?;
    crate::leak::check_leaks(&vrs)?;
    crate::nat::check_nat(&vrs, workers)?;
    Ok(Config { workers, node, ports, vrs, api_tls })
}

/// The VR whose entry `entry` is at `position` of a list whose surroundings (ports, workers,
/// admin token) `around` and `admin` are, validated as far as it goes alone: what it claims
/// against the other VRs (name, id, MACs, token, rules, leaks) is left to the caller, and an
/// id it does not state is `free_id`.
pub(crate) fn parse_lone_vr(
    entry: &Yaml,
    position: usize,
    around: &Config,
    admin: Option<String>,
    base_dir: &Path,
    free_id: u16,
) -> Result<VrConfig, ConfigError> {
    let mut check = VrCheck {
        ports: &around.ports,
        base_dir,
        vr_names: HashMap::new(),
        macs: HashMap::new(),
        explicit_ids: HashSet::new(),
        ids: HashSet::new(),
        lowest_free: free_id.into(),
        tokens: Tokens::new(admin),
        workers: around.workers,
    };
    let vrs = Node::root(entry).child_path("vrs");
    let at = vrs.node(entry).index_path(position);
    check.parse_vr(at.node(entry), position)
}

fn parse_port(n: Node<'_>) -> Result<PortConfig, ConfigError> {
    n.only_keys(&["name", "interface", "driver", "rx", "rate_mbps", "opaque", "rx_ring_frames"])?;
    let name = required(&n, "name", |n| name_like(n, 15))?;
    let interface = required(&n, "interface", |n| n.str().map(str::to_string))?;
    let driver = optional(&n, "driver", |n| match n.str()? {
        "af_xdp" => Ok(Driver::AfXdp),
        "af_packet" => Ok(Driver::AfPacket),
        "tap" => Ok(Driver::Tap),
        "pcap" => Ok(Driver::Pcap),
        "memory" => Ok(Driver::Memory),
        other => Err(n.err(format!("unknown driver {other:?} (af_xdp, af_packet, tap, pcap, memory)"))),
    })?
    .unwrap_or(Driver::AfXdp);
    let rx = optional(&n, "rx", |n| match (driver, n.str()?) {
        (Driver::AfXdp, "af_xdp") => Ok(Driver::AfXdp),
        (Driver::AfXdp, "af_packet") => Ok(Driver::AfPacket),
        (Driver::AfXdp, other) => Err(n.err(format!("unknown rx {other:?} (af_xdp, af_packet)"))),
        _ => Err(n.err("only af_xdp ports choose how they receive")),
    })?
    .unwrap_or(driver);
    let rate_mbps = optional(&n, "rate_mbps", |n| positive(n, 10_000_000))?;
    let opaque = optional(&n, "opaque", |n| {
        n.only_keys(&["offset", "length"])?;
        let offset = required(&n, "offset", |n| n.uint(OpaqueKey::MAX_OFFSET.into()))? as u16;
        let length = required(&n, "length", |n| positive(n, OpaqueKey::MAX_LENGTH.into()))? as u8;
        Ok(OpaqueKey { offset, length })
    })?;
    let rx_ring_frames = optional(&n, "rx_ring_frames", |n| positive(n, MAX_RX_RING_FRAMES))?.map(|f| f as u32);
    if rx_ring_frames.is_some() && rx != Driver::AfPacket {
        return Err(ConfigError::at(format!("{}.rx_ring_frames", n.path()), "only ports that receive on AF_PACKET have such a ring"));
    }
    Ok(PortConfig { name, interface, driver, rx, rate_mbps, opaque, rx_ring_frames })
}

struct VrCheck<'p> {
    ports: &'p [PortConfig],
    base_dir: &'p Path,
    /// Name → position of the VR that has it; a reused VR's name is borrowed, not copied.
    vr_names: HashMap<Cow<'p, str>, usize>,
    /// MAC → (position of the VR, index of its interface) that has it.
    macs: HashMap<Mac, (usize, usize)>,
    /// Ids stated in the document.
    explicit_ids: HashSet<u16>,
    /// Ids given so far.
    ids: HashSet<u16>,
    /// Every id below this is taken: ids are only ever added, so the lowest free id only rises
    /// (finding each from 0 made a document of thousands of id-less VRs quadratic).
    lowest_free: u32,
    tokens: Tokens,
    /// The node's workers (`workers:`).
    workers: usize,
}

impl<'p> VrCheck<'p> {
    /// The VR at `position` in `vrs`, whose entry `n` is.
    fn parse_vr(&mut self, n: Node<'_>, position: usize) -> Result<VrConfig, ConfigError> {
        n.only_keys(&[
            "name",
            "id",
            "kind",
            "placement",
            "code",
            "interfaces",
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
            "resources",
            "distribution",
            "plugin",
        ])?;
        // A VR's name names its network namespace and appears in interface names.
        let name = required(&n, "name", |n| name_like(n, 12))?;
        if let Some(first) = self.vr_names.insert(Cow::Owned(name.clone()), position) {
            return Err(ConfigError::at(format!("{}.name", n.path()), format!("duplicate of vrs[{first}].name")));
        }
        let kind = optional(&n, "kind", |n| match n.str()? {
            "fast" => Ok(VrKind::Fast),
            "kernel" => Ok(VrKind::Kernel),
            "shared" => Ok(VrKind::Shared),
            "plugin" => Ok(VrKind::Plugin),
            other => Err(n.err(format!("unknown kind {other:?} (fast, kernel, shared, plugin)"))),
        })?;
        let placement = crate::placement::parse_placement(&n, kind)?;
        // An `auto` VR's kind is settled once every VR's placement is known (`place`).
        let kind = kind.or_else(|| placement.and_then(Placement::kind)).unwrap_or(VrKind::Fast);
        let placement = placement.unwrap_or(if kind == VrKind::Kernel { Placement::Kernel } else { Placement::Fast });
        let plugin = optional(&n, "plugin", |n| crate::plugin::parse_plugin(n, self.base_dir))?;
        match (kind, &plugin) {
            (VrKind::Plugin, None) => {
                return Err(ConfigError::at(format!("{}.plugin", n.path()), "a plugin VR needs its program: plugin: {wasm: <file>}"))
            }
            (VrKind::Plugin, Some(_)) if n.get("code").is_some() => {
                return Err(ConfigError::at(format!("{}.code", n.path()), "a plugin VR runs its plugin, not a code option"))
            }
            (k, Some(_)) if k != VrKind::Plugin => {
                return Err(ConfigError::at(
                    format!("{}.plugin", n.path()),
                    format!("only plugin VRs run plugins (this one is {})", k.name()),
                ))
            }
            _ => {}
        }
        // Explicit ids were checked up front; the others take the lowest id nobody claims.
        let id = match optional(&n, "id", |n| n.uint(MAX_VR_ID.into()))? {
            Some(id) => id as u16,
            None => {
                let free = (self.lowest_free..=u32::from(MAX_VR_ID))
                    .map(|i| i as u16)
                    .find(|i| !self.explicit_ids.contains(i) && !self.ids.contains(i))
                    .ok_or_else(|| {
                        ConfigError::at(n.path().to_string(), format!("no VR id left (at most {} VRs)", u32::from(MAX_VR_ID) + 1))
                    })?;
                self.lowest_free = u32::from(free) + 1;
                free
            }
        };
        self.ids.insert(id);
        let code = optional(&n, "code", |n| match n.str()? {
            "ipv4" => Ok(CodeOption::Ipv4),
            "ipv6" => Ok(CodeOption::Ipv6),
            "ip" => Ok(CodeOption::Ip),
            "filter" if kind == VrKind::Fast => Ok(CodeOption::Filter),
            "i3" if kind == VrKind::Fast => Ok(CodeOption::I3),
            c @ ("filter" | "i3") => Err(n.err(format!("code option {c:?} is a fast path's: a {} VR has no use for it", kind.name()))),
            other => Err(n.err(format!("unknown code option {other:?} (ipv4, ipv6, ip, filter, i3)"))),
        })?
        .unwrap_or(CodeOption::Ip);

        let mut if_names: HashMap<String, String> = HashMap::new();
        let mut index = 0;
        let interfaces = each(&n, "interfaces", |n| {
            index += 1;
            let i = self.parse_interface(n, (position, index - 1))?;
            if let Some(first) = if_names.insert(i.name.clone(), n.path().to_string()) {
                return Err(ConfigError::at(format!("{}.name", n.path()), format!("duplicate of {first}.name")));
            }
            Ok(i)
        })?;
        if kind == VrKind::Shared {
            check_shared_macs(&n, id, &interfaces)?;
        }
        if interfaces.is_empty() {
            return Err(ConfigError::at(format!("{}.interfaces", n.path()), "a VR needs at least one interface"));
        }
        let by_name = |n: Node<'_>| -> Result<usize, ConfigError> {
            let name = n.str()?;
            interfaces.iter().position(|i| i.name == name).ok_or_else(|| n.err(format!("no interface {name:?} in this VR")))
        };
        let routes = each(&n, "routes", |n| {
            n.only_keys(&["prefix", "via"])?;
            let prefix = required(&n, "prefix", |n| route_prefix(n, code))?;
            let via = required(&n, "via", ip)?;
            let interface = interfaces
                .iter()
                .position(|i| i.addresses.iter().any(|a| a.contains(via)))
                .ok_or_else(|| ConfigError::at(format!("{}.via", n.path()), format!("{via} is on none of the VR's interface subnets")))?;
            Ok(RouteConfig { prefix, via, interface })
        })?;
        let neighbors = each(&n, "neighbors", |n| {
            n.only_keys(&["ip", "mac", "interface"])?;
            let ip = required(&n, "ip", ip)?;
            let mac = required(&n, "mac", mac)?;
            let interface = required(&n, "interface", by_name)?;
            if !interfaces[interface].addresses.iter().any(|a| a.contains(ip)) {
                return Err(ConfigError::at(
                    format!("{}.ip", n.path()),
                    format!("{ip} is not on a subnet of interface {}", interfaces[interface].name),
                ));
            }
            Ok(NeighborConfig { ip, mac, interface })
        })?;
        let queues = each(&n, "queues", |n| {
            n.only_keys(&["weight", "length"])?;
            let weight = optional(&n, "weight", |n| positive(n, MAX_WEIGHT))?.unwrap_or(1) as u32;
            let length = optional(&n, "length", |n| positive(n, 1 << 20))?.unwrap_or(1024) as usize;
            Ok(QueueConfig { weight, length })
        })?;
        let resources = optional(&n, "resources", |r| crate::resources::parse_resources(r, self.workers))?.unwrap_or_default();
        let distribution = crate::distribution::parse_distribution(&n, self.workers)?;
        // A VR that asks for a buffer and states no queues gets one that fits in it.
        let default_length = resources.get("buffer_kb").map_or(1024, |kb| (kb / QUEUED_FRAME_KB).clamp(1, 1024));
        let queues = if queues.is_empty() { vec![QueueConfig { weight: 1, length: default_length as usize }] } else { queues };
        let mut stated = crate::resources::StatedLimits::default();
        let mut share = None;
        let mut memory_mb = None;
        let mut punt_pps = None;
        let mut fuel_per_packet = None;
        optional(&n, "limits", |n| {
            n.only_keys(&["rate_mbps", "share", "fib_entries", "filters", "cpu_percent", "memory_mb", "punt_pps", "fuel_per_packet"])?;
            stated.rate_mbps = optional(&n, "rate_mbps", |n| positive(n, 10_000_000))?;
            share = optional(&n, "share", |n| positive(n, MAX_SHARE))?.map(|s| s as u32);
            stated.fib_entries = optional(&n, "fib_entries", |n| n.uint(1 << 26))?.map(|v| v as usize);
            stated.filters = optional(&n, "filters", |n| n.uint(1 << 20))?.map(|v| v as usize);
            stated.cpu_percent = optional(&n, "cpu_percent", |n| positive(n, 100 * 1024))?.map(|v| v as u32);
            memory_mb = optional(&n, "memory_mb", crate::control_plane::memory_mb)?;
            punt_pps = optional(&n, "punt_pps", |n| positive(n, MAX_PUNT_PPS))?.map(|v| v as u32);
            fuel_per_packet = optional(&n, "fuel_per_packet", |n| positive(n, 1 << 30))?;
            Ok(())
        })?;
        // What the VR asks for as resources bounds what it gets where it states no limit.
        let asked = |name: &str| resources.get(name);
        let limits = Limits {
            rate_mbps: stated.rate_mbps.or(asked("bandwidth_mbps")),
            share: share.or(asked("pps").map(|p| p.min(MAX_SHARE) as u32)),
            fib_entries: stated.fib_entries.or(asked("fib_entries").map(|v| v.min(1 << 26) as usize)).unwrap_or(1 << 21),
            filters: stated.filters.or(asked("filters").map(|v| v.min(1 << 20) as usize)).unwrap_or(1024),
            cpu_percent: stated.cpu_percent.or(asked("cpu_percent").map(|v| v.min(100 * 1024) as u32)).unwrap_or(DEFAULT_CPU_PERCENT),
            memory_mb: memory_mb.unwrap_or(DEFAULT_MEMORY_MB),
            punt_pps: punt_pps.unwrap_or(DEFAULT_PUNT_PPS),
            fuel_per_packet: fuel_per_packet.unwrap_or(DEFAULT_FUEL_PER_PACKET),
        };
        let matches = each(&n, "match", |m| parse_match(m, self.ports, queues.len(), &interfaces, code == CodeOption::Filter))?;
        if routes.len() + neighbors.len() > limits.fib_entries {
            return Err(ConfigError::at(
                format!("{}.limits.fib_entries", n.path()),
                format!("{} is below the {} routes and neighbours configured", limits.fib_entries, routes.len() + neighbors.len()),
            ));
        }
        if code == CodeOption::Filter && matches.len() > MAX_FILTER_RULES {
            return Err(ConfigError::at(
                format!("{}.match", n.path()),
                format!("a code: filter VR has at most {MAX_FILTER_RULES} rules, not {}", matches.len()),
            ));
        }
        if matches.len() > limits.filters {
            return Err(ConfigError::at(
                format!("{}.limits.filters", n.path()),
                format!("{} is below the {} match rules configured", limits.filters, matches.len()),
            ));
        }
        let control_plane = optional(&n, "control_plane", |n| crate::control_plane::parse_control_plane(n, self.base_dir))?;
        let accept_source_route = optional(&n, "accept_source_route", |n| n.bool())?.unwrap_or(false);
        let leak = crate::leak::parse_leaks(&n)?;
        let nat = optional(&n, "nat", |n| crate::nat::parse_nat(n, &interfaces))?;
        self.tokens.check_vr(&n, position)?;
        let vr = VrConfig {
            name,
            id,
            kind,
            placement,
            code,
            interfaces,
            routes,
            neighbors,
            matches,
            queues,
            limits,
            control_plane,
            accept_source_route,
            leak,
            nat,
            resources,
            distribution,
            plugin,
        };
        crate::resources::check_within(&vr, &stated, n.path())?;
        Ok(vr)
    }

    /// Takes `vr`, validated by an earlier change, into the checks that span VRs: its name,
    /// id, MACs and token against those of the VRs before it, with the paths and words
    /// `parse_vr` would have used.
    fn register(&mut self, position: usize, reused: &Reused<'p>) -> Result<Arc<VrConfig>, ConfigError> {
        let vr = reused.vr;
        if let Some(first) = self.vr_names.insert(Cow::Borrowed(&vr.name), position) {
            return Err(ConfigError::at(format!("vrs[{position}].name"), format!("duplicate of vrs[{first}].name")));
        }
        self.ids.insert(vr.id);
        for (j, i) in vr.interfaces.iter().enumerate() {
            if let Some(&first) = self.macs.get(&i.mac) {
                return Err(ConfigError::at(mac_path((position, j)), format!("duplicate of {}", mac_path(first))));
            }
            self.macs.insert(i.mac, (position, j));
        }
        if let Some(token) = reused.token {
            self.tokens.claim(token, position)?;
        }
        Ok(Arc::clone(vr))
    }

    /// The interface at `at` (position of its VR, its index), whose entry `n` is.
    fn parse_interface(&mut self, n: Node<'_>, at: (usize, usize)) -> Result<InterfaceConfig, ConfigError> {
        n.only_keys(&["name", "port", "mac", "addresses", "mtu", "urpf", "impair"])?;
        let name = required(&n, "name", |n| name_like(n, 15))?;
        let port = required(&n, "port", |n| {
            let p = n.str()?;
            self.ports.iter().position(|q| q.name == p).ok_or_else(|| n.err(format!("unknown port {p:?}")))
        })?;
        let mac = required(&n, "mac", |m| {
            let v = mac(m)?;
            if v[0] & 1 != 0 {
                return Err(m.err("must be a unicast address"));
            }
            if let Some(&first) = self.macs.get(&v) {
                return Err(m.err(format!("duplicate of {}", mac_path(first))));
            }
            self.macs.insert(v, at);
            Ok(v)
        })?;
        let addresses = each(&n, "addresses", prefix)?;
        let v6 = addresses.iter().any(|a| a.addr.is_ipv6());
        let mtu = optional(&n, "mtu", |m| {
            let v = m.uint(u64::from(MAX_MTU))? as u32;
            let (min, why) = if v6 { (MIN_MTU_V6, "IPv6's minimum") } else { (MIN_MTU_V4, "IPv4's minimum") };
            if v < min {
                return Err(m.err(format!("{v} is below {why} of {min}")));
            }
            Ok(v)
        })?;
        let urpf = optional(&n, "urpf", |u| match u.str()? {
            "off" => Ok(Urpf::Off),
            "loose" => Ok(Urpf::Loose),
            "strict" => Ok(Urpf::Strict),
            other => Err(u.err(format!("{other:?} is not one of strict, loose, off"))),
        })?
        .unwrap_or_default();
        let impair = optional(&n, "impair", crate::impair::parse_impairment)?.unwrap_or_default();
        Ok(InterfaceConfig { name, port, mac, addresses, mtu, urpf, impair })
    }
}

/// The `id`s VRs state, checked for range and duplicates before any VR is parsed, so that VRs
/// without one can be given ids nobody claims.
fn explicit_vr_ids(root: &Node<'_>, reused: &[Option<Reused<'_>>]) -> Result<HashSet<u16>, ConfigError> {
    let mut seen: HashMap<u16, usize> = HashMap::new();
    let Some(list) = root.get("vrs") else { return Ok(HashSet::new()) };
    let at = root.child_path("vrs");
    for (i, entry) in at.node(list).list()?.iter().enumerate() {
        let id = match reused.get(i).and_then(Option::as_ref) {
            Some(r) => Some(r.vr.id),
            None => optional(&at.node(list).index_path(i).node(entry), "id", |n| n.uint(MAX_VR_ID.into()))?.map(|id| id as u16),
        };
        if let Some(first) = id.and_then(|id| seen.insert(id, i)) {
            return Err(ConfigError::at(format!("vrs[{i}].id"), format!("duplicate of vrs[{first}].id")));
        }
    }
    Ok(seen.into_keys().collect())
}

/// Where the MAC of interface `at` (position of its VR, its index) is written.
fn mac_path((vr, interface): (usize, usize)) -> String {
    format!("vrs[{vr}].interfaces[{interface}].mac")
}

/// A shared VR's frames are demultiplexed by MAC alone, so its MACs must follow PEARL's
/// pattern 02:LO:HI:00:00:IF (`shared_mac`: LO, HI = its id's low and high byte, IF = the
/// interface's index).
fn check_shared_macs(n: &Node<'_>, vr: u16, interfaces: &[InterfaceConfig]) -> Result<(), ConfigError> {
    if interfaces.len() > 0x100 {
        return Err(ConfigError::at(
            format!("{}.interfaces", n.path()),
            "a shared VR has at most 256 interfaces (its MACs encode the interface)",
        ));
    }
    for (i, iface) in interfaces.iter().enumerate() {
        let want = shared_mac(vr, i as u8);
        if iface.mac != want {
            return Err(ConfigError::at(
                format!("{}.interfaces[{i}].mac", n.path()),
                format!(
                    "a shared VR's MAC must encode its VR and interface as 02:LO:HI:00:00:IF (the id's low byte, then its high byte); here that is {}, not {}",
                    mac_text(want),
                    mac_text(iface.mac)
                ),
            ));
        }
    }
    Ok(())
}

fn name_like(n: Node<'_>, max: usize) -> Result<String, ConfigError> {
    let s = n.str()?;
    let ok = !s.is_empty() && s.len() <= max && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        return Err(n.err(format!("{s:?}: use 1 to {max} letters, digits, '-' or '_'")));
    }
    Ok(s.to_string())
}

fn positive(n: Node<'_>, max: u64) -> Result<u64, ConfigError> {
    let v = n.uint(max)?;
    if v == 0 {
        return Err(n.err("must be positive"));
    }
    Ok(v)
}

/// A route destination: host bits must be zero, and the family must be one the VR routes.
fn route_prefix(n: Node<'_>, code: CodeOption) -> Result<IpPrefix, ConfigError> {
    let p = prefix(n)?;
    if p.network() != p {
        return Err(n.err(format!("{p} has bits set beyond its length (did you mean {}?)", p.network())));
    }
    let routed = if p.addr.is_ipv4() { code.routes_v4() } else { code.routes_v6() };
    if !routed {
        return Err(n.err(format!("{p}: this VR's code option does not route that address family")));
    }
    Ok(p)
}
