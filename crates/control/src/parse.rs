//! A configuration document → [`Config`], refusing the whole document at the first problem,
//! named by path. The document is read into its grammar types (`grammar`) first; what follows
//! checks what types cannot say.

use crate::access::{parse_api, Tokens};
use crate::at::At;
use crate::error::ConfigError;
use crate::fields::{name_like, optional, positive, uint};
use crate::grammar::{self, Document, DriverSpec, InterfaceSpec, KindSpec, PortSpec, RxSpec, UrpfSpec, VrSpec, VxlanSpec};
use crate::matches::parse_match;
use crate::model::*;
use crate::tree::to_json;
use crate::values::{ip, mac, network, prefix};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use yaml_rust2::YamlLoader;

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
    parse_value_in(&to_json(doc, "")?, base_dir)
}

/// Validates a document whole, as `parse_config_in` does its text.
pub(crate) fn parse_value_in(doc: &Value, base_dir: &Path) -> Result<Config, ConfigError> {
    parse_value_reusing(doc, base_dir, &[])
}

/// A VR validated by an earlier change, taken as it is; its entry's `token`, which the
/// document keeps and `VrConfig` does not.
pub(crate) struct Reused<'a> {
    pub vr: &'a Arc<VrConfig>,
    pub token: Option<&'a str>,
}

/// As [`parse_value_in`], with the VRs at the positions where `reused` has one taken as
/// validated already (their entries in `doc` are not read) and checked against the others as
/// if parsed anew. With thousands of VRs, such a VR costs a few lookups: nothing of it is copied
/// and no path is spelt out unless it names an error.
pub(crate) fn parse_value_reusing(doc: &Value, base_dir: &Path, reused: &[Option<Reused<'_>>]) -> Result<Config, ConfigError> {
    let root = At::Root;
    let spec: Document = grammar::read(doc, root)?;
    let workers = optional(spec.workers.as_ref(), root, "workers", |&w, at| uint(w, 64, at))?.unwrap_or(1) as usize;
    if workers == 0 {
        return Err(ConfigError::at("workers", "must be at least 1"));
    }
    let mut port_names: HashMap<String, usize> = HashMap::new();
    let mut interfaces: HashMap<String, usize> = HashMap::new();
    let mut tunnels: HashMap<Option<(u16, std::net::IpAddr, u32)>, usize> = HashMap::new();
    let ports_at = root.key("ports");
    let mut ports = Vec::new();
    for (i, p) in spec.ports.iter().flatten().enumerate() {
        let at = ports_at.index(i);
        let p = parse_port(p, at)?;
        if let Some(first) = port_names.insert(p.name.clone(), i) {
            return Err(at.key("name").err(format!("duplicate of ports[{first}].name")));
        }
        // Tunnels share their underlay device; they are told apart by their ends.
        if p.driver == Driver::Vxlan {
            if let Some(first) = tunnels.insert(p.vxlan.map(|v| (v.dst_port, v.remote, v.vni)), i) {
                return Err(at.key("vxlan").err(format!("the same dst_port, remote and vni as ports[{first}].vxlan")));
            }
        } else if let Some(first) = interfaces.insert(p.interface.clone(), i) {
            return Err(at.key("interface").err(format!("{} is already driven by ports[{first}]", p.interface)));
        }
        ports.push(p);
    }
    check_wires(&ports, ports_at)?;
    // The entries of VRs taken as they were are not read: with thousands of VRs, a change to
    // one reads one.
    let vrs_at = root.key("vrs");
    let entries: &[Value] = doc.get("vrs").and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let mut specs: Vec<Option<VrSpec>> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let read = reused.get(i).and_then(Option::as_ref).is_none();
        specs.push(if read { Some(grammar::read(entry, vrs_at.index(i))?) } else { None });
    }
    let explicit_ids = explicit_vr_ids(&specs, reused)?;
    let (admin_token, api_tls) = optional(spec.api.as_ref(), root, "api", |api, at| parse_api(api, at, base_dir))?.unwrap_or_default();
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
    let node = crate::placement::parse_node(spec.node.as_ref(), root)?;
    let mut vrs = Vec::with_capacity(specs.len());
    for (i, entry) in specs.iter().enumerate() {
        let vr = match (reused.get(i).and_then(Option::as_ref), entry) {
            (Some(r), _) => state.register(i, r)?,
            (None, Some(entry)) => Arc::new(state.parse_vr(entry, vrs_at.index(i), i)?),
            (None, None) => unreachable!("an entry not reused is read"),
        };
        vrs.push(vr);
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
    entry: &Value,
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
    let vrs = At::Root;
    let vrs = vrs.key("vrs");
    let at = vrs.index(position);
    check.parse_vr(&grammar::read(entry, at)?, at, position)
}

/// A wire port's `interface` names the wire port at its other end, which names it back.
fn check_wires(ports: &[PortConfig], at: At<'_>) -> Result<(), ConfigError> {
    for (i, p) in ports.iter().enumerate().filter(|(_, p)| p.driver == Driver::Wire) {
        let paired = ports.iter().any(|o| o.driver == Driver::Wire && o.name == p.interface && o.interface == p.name);
        if !paired || p.interface == p.name {
            return Err(at.index(i).key("interface").err(format!("no other wire port {:?} whose interface is {:?}", p.interface, p.name)));
        }
    }
    Ok(())
}

fn parse_port(p: &PortSpec, at: At<'_>) -> Result<PortConfig, ConfigError> {
    let name = name_like(&p.name, 15, at.key("name"))?;
    let driver = match p.driver {
        None | Some(DriverSpec::AfXdp) => Driver::AfXdp,
        Some(DriverSpec::AfPacket) => Driver::AfPacket,
        Some(DriverSpec::Tap) => Driver::Tap,
        Some(DriverSpec::Pcap) => Driver::Pcap,
        Some(DriverSpec::Memory) => Driver::Memory,
        Some(DriverSpec::Wire) => Driver::Wire,
        Some(DriverSpec::Vxlan) => Driver::Vxlan,
    };
    let vxlan = match (&p.vxlan, driver) {
        (Some(v), Driver::Vxlan) => Some(parse_vxlan(v, at.key("vxlan"))?),
        (None, Driver::Vxlan) => return Err(at.key("vxlan").err("a vxlan port needs its tunnel: vxlan: {vni: N, remote: ADDRESS}")),
        (Some(_), _) => return Err(at.key("vxlan").err("only ports with driver: vxlan have a tunnel")),
        (None, _) => None,
    };
    let rx = match (driver, p.rx) {
        (_, None) => driver,
        (Driver::AfXdp, Some(RxSpec::AfXdp)) => Driver::AfXdp,
        (Driver::AfXdp, Some(RxSpec::AfPacket)) => Driver::AfPacket,
        _ => return Err(at.key("rx").err("only af_xdp ports choose how they receive")),
    };
    let rate_mbps = optional(p.rate_mbps.as_ref(), at, "rate_mbps", |&v, at| positive(v, 10_000_000, at))?;
    let opaque = optional(p.opaque.as_ref(), at, "opaque", |o, at| {
        let offset = uint(o.offset, OpaqueKey::MAX_OFFSET.into(), at.key("offset"))? as u16;
        let length = positive(o.length, OpaqueKey::MAX_LENGTH.into(), at.key("length"))? as u8;
        Ok(OpaqueKey { offset, length })
    })?;
    let rx_ring_frames =
        optional(p.rx_ring_frames.as_ref(), at, "rx_ring_frames", |&v, at| positive(v, MAX_RX_RING_FRAMES, at))?.map(|f| f as u32);
    // A port whose device chooses may receive on AF_PACKET; the ring is used if it does.
    let by_device = p.driver.is_none() && p.rx.is_none();
    if rx_ring_frames.is_some() && rx != Driver::AfPacket && !by_device {
        return Err(at.key("rx_ring_frames").err("only ports that receive on AF_PACKET have such a ring"));
    }
    Ok(PortConfig { name, interface: p.interface.clone(), driver, rx, by_device, rate_mbps, opaque, rx_ring_frames, vxlan })
}

fn parse_vxlan(v: &VxlanSpec, at: At<'_>) -> Result<VxlanConfig, ConfigError> {
    let vni = positive(v.vni, VxlanConfig::MAX_VNI.into(), at.key("vni"))? as u32;
    let address = |s: &str, at: At<'_>| s.parse::<std::net::IpAddr>().map_err(|_| at.err(format!("{s:?} is not an IPv4 or IPv6 address")));
    let remote = address(&v.remote, at.key("remote"))?;
    if remote.is_unspecified() || remote.is_multicast() {
        return Err(at.key("remote").err(format!("{remote} cannot be a tunnel's far end")));
    }
    let local = optional(v.local.as_ref(), at, "local", |s, at| {
        let local = address(s, at)?;
        match local.is_ipv4() == remote.is_ipv4() {
            true => Ok(local),
            false => Err(at.err(format!("{local} is not of the family of remote {remote}"))),
        }
    })?;
    let dst_port = optional(v.dst_port.as_ref(), at, "dst_port", |&d, at| positive(d, 65_535, at))?
        .map_or(VxlanConfig::DEFAULT_DST_PORT, |d| d as u16);
    Ok(VxlanConfig { vni, remote, local, dst_port })
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
    /// The VR at `position` in `vrs`, whose entry `v` is, at `at`.
    fn parse_vr(&mut self, v: &VrSpec, at: At<'_>, position: usize) -> Result<VrConfig, ConfigError> {
        // A VR's name names its network namespace and appears in interface names.
        let name = name_like(&v.name, 12, at.key("name"))?;
        if let Some(first) = self.vr_names.insert(Cow::Owned(name.clone()), position) {
            return Err(at.key("name").err(format!("duplicate of vrs[{first}].name")));
        }
        let kind = v.kind.map(|k| match k {
            KindSpec::Fast => VrKind::Fast,
            KindSpec::Kernel => VrKind::Kernel,
            KindSpec::Shared => VrKind::Shared,
            KindSpec::Plugin => VrKind::Plugin,
        });
        let placement = crate::placement::parse_placement(v.placement, at, kind)?;
        // An `auto` VR's kind is settled once every VR's placement is known (`place`).
        let kind = kind.or_else(|| placement.and_then(Placement::kind)).unwrap_or(VrKind::Fast);
        let placement = placement.unwrap_or(if kind == VrKind::Kernel { Placement::Kernel } else { Placement::Fast });
        let plugin = optional(v.plugin.as_ref(), at, "plugin", |p, at| crate::plugin::parse_plugin(p, at, self.base_dir))?;
        match (kind, &plugin) {
            (VrKind::Plugin, None) => return Err(at.key("plugin").err("a plugin VR needs its program: plugin: {wasm: <file>}")),
            (VrKind::Plugin, Some(_)) if v.code.is_some() => {
                return Err(at.key("code").err("a plugin VR runs its plugin, not a code option"))
            }
            (k, Some(_)) if k != VrKind::Plugin => {
                return Err(at.key("plugin").err(format!("only plugin VRs run plugins (this one is {})", k.name())))
            }
            _ => {}
        }
        // Explicit ids were checked up front; the others take the lowest id nobody claims.
        let id = match optional(v.id.as_ref(), at, "id", |&id, at| uint(id, MAX_VR_ID.into(), at))? {
            Some(id) => id as u16,
            None => {
                let free = (self.lowest_free..=u32::from(MAX_VR_ID))
                    .map(|i| i as u16)
                    .find(|i| !self.explicit_ids.contains(i) && !self.ids.contains(i))
                    .ok_or_else(|| at.err(format!("no VR id left (at most {} VRs)", u32::from(MAX_VR_ID) + 1)))?;
                self.lowest_free = u32::from(free) + 1;
                free
            }
        };
        self.ids.insert(id);
        let code = v.code.unwrap_or(CodeOption::Ip);
        if code.fast_only() && kind != VrKind::Fast {
            let c = code.name();
            return Err(at.key("code").err(format!("code option {c:?} is a fast path's: a {} VR has no use for it", kind.name())));
        }

        let interfaces_at = at.key("interfaces");
        let mut if_names: HashMap<&str, usize> = HashMap::new();
        let mut interfaces = Vec::new();
        for (j, spec) in v.interfaces.iter().flatten().enumerate() {
            let i_at = interfaces_at.index(j);
            let i = self.parse_interface(spec, i_at, (position, j))?;
            if let Some(first) = if_names.insert(&spec.name, j) {
                return Err(i_at.key("name").err(format!("duplicate of {interfaces_at}[{first}].name")));
            }
            interfaces.push(i);
        }
        if kind == VrKind::Shared {
            check_shared_macs(at, id, &interfaces)?;
        }
        if interfaces.is_empty() {
            return Err(interfaces_at.err("a VR needs at least one interface"));
        }
        let by_name = |name: &str, at: At<'_>| -> Result<usize, ConfigError> {
            interfaces.iter().position(|i| i.name == name).ok_or_else(|| at.err(format!("no interface {name:?} in this VR")))
        };
        let routes_at = at.key("routes");
        let mut routes = Vec::new();
        for (j, r) in v.routes.iter().flatten().enumerate() {
            let r_at = routes_at.index(j);
            let prefix = route_prefix(&r.prefix, r_at.key("prefix"), code)?;
            let via = ip(&r.via, r_at.key("via"))?;
            let interface = interfaces
                .iter()
                .position(|i| i.addresses.iter().any(|a| a.contains(via)))
                .ok_or_else(|| r_at.key("via").err(format!("{via} is on none of the VR's interface subnets")))?;
            routes.push(RouteConfig { prefix, via, interface });
        }
        let neighbors_at = at.key("neighbors");
        let mut neighbors = Vec::new();
        for (j, n) in v.neighbors.iter().flatten().enumerate() {
            let n_at = neighbors_at.index(j);
            let ip = ip(&n.ip, n_at.key("ip"))?;
            let mac = mac(&n.mac, n_at.key("mac"))?;
            let interface = by_name(&n.interface, n_at.key("interface"))?;
            if !interfaces[interface].addresses.iter().any(|a| a.contains(ip)) {
                return Err(n_at.key("ip").err(format!("{ip} is not on a subnet of interface {}", interfaces[interface].name)));
            }
            neighbors.push(NeighborConfig { ip, mac, interface });
        }
        let queues_at = at.key("queues");
        let mut queues = Vec::new();
        for (j, q) in v.queues.iter().flatten().enumerate() {
            let q_at = queues_at.index(j);
            let weight = optional(q.weight.as_ref(), q_at, "weight", |&w, at| positive(w, MAX_WEIGHT, at))?.unwrap_or(1) as u32;
            let length = optional(q.length.as_ref(), q_at, "length", |&l, at| positive(l, 1 << 20, at))?.unwrap_or(1024) as usize;
            queues.push(QueueConfig { weight, length });
        }
        let resources = optional(v.resources.as_ref(), at, "resources", |r, at| crate::resources::parse_resources(r, at, self.workers))?
            .unwrap_or_default();
        let distribution = crate::distribution::parse_distribution(v.distribution, at, self.workers)?;
        // A VR that asks for a buffer and states no queues gets one that fits in it.
        let default_length = resources.get("buffer_kb").map_or(1024, |kb| (kb / QUEUED_FRAME_KB).clamp(1, 1024));
        let queues = if queues.is_empty() { vec![QueueConfig { weight: 1, length: default_length as usize }] } else { queues };
        let mut stated = crate::resources::StatedLimits::default();
        let mut share = None;
        let mut memory_mb = None;
        let mut punt_pps = None;
        let mut fuel_per_packet = None;
        if let Some(l) = &v.limits {
            let at = at.key("limits");
            stated.rate_mbps = optional(l.rate_mbps.as_ref(), at, "rate_mbps", |&v, at| positive(v, 10_000_000, at))?;
            share = optional(l.share.as_ref(), at, "share", |&v, at| positive(v, MAX_SHARE, at))?.map(|s| s as u32);
            stated.fib_entries = optional(l.fib_entries.as_ref(), at, "fib_entries", |&v, at| uint(v, 1 << 26, at))?.map(|v| v as usize);
            stated.filters = optional(l.filters.as_ref(), at, "filters", |&v, at| uint(v, 1 << 20, at))?.map(|v| v as usize);
            stated.cpu_percent =
                optional(l.cpu_percent.as_ref(), at, "cpu_percent", |&v, at| positive(v, 100 * 1024, at))?.map(|v| v as u32);
            memory_mb = optional(l.memory_mb.as_ref(), at, "memory_mb", |&v, at| crate::control_plane::memory_mb(v, at))?;
            punt_pps = optional(l.punt_pps.as_ref(), at, "punt_pps", |&v, at| positive(v, MAX_PUNT_PPS, at))?.map(|v| v as u32);
            fuel_per_packet = optional(l.fuel_per_packet.as_ref(), at, "fuel_per_packet", |&v, at| positive(v, 1 << 30, at))?;
        }
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
        let match_at = at.key("match");
        let mut matches = Vec::new();
        for (j, m) in v.matches.iter().flatten().enumerate() {
            matches.push(parse_match(m, match_at.index(j), self.ports, queues.len(), &interfaces, code == CodeOption::Filter)?);
        }
        if routes.len() + neighbors.len() > limits.fib_entries {
            return Err(at.key("limits").key("fib_entries").err(format!(
                "{} is below the {} routes and neighbours configured",
                limits.fib_entries,
                routes.len() + neighbors.len()
            )));
        }
        if code == CodeOption::Filter && matches.len() > MAX_FILTER_RULES {
            return Err(match_at.err(format!("a code: filter VR has at most {MAX_FILTER_RULES} rules, not {}", matches.len())));
        }
        if matches.len() > limits.filters {
            return Err(at.key("limits").key("filters").err(format!(
                "{} is below the {} match rules configured",
                limits.filters,
                matches.len()
            )));
        }
        let control_plane = optional(v.control_plane.as_ref(), at, "control_plane", |c, at| {
            crate::control_plane::parse_control_plane(c, at, self.base_dir)
        })?;
        let accept_source_route = v.accept_source_route.unwrap_or(false);
        let leak = crate::leak::parse_leaks(v.leak.as_deref(), at)?;
        let nat = optional(v.nat.as_ref(), at, "nat", |n, at| crate::nat::parse_nat(n, at, &interfaces))?;
        self.tokens.check_vr(v.token.as_deref(), at, position)?;
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
        crate::resources::check_within(&vr, &stated, at)?;
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

    /// The interface `spec` at `at`, `index` (position of its VR, its index).
    fn parse_interface(&mut self, spec: &InterfaceSpec, at: At<'_>, index: (usize, usize)) -> Result<InterfaceConfig, ConfigError> {
        let name = name_like(&spec.name, 15, at.key("name"))?;
        let port = self
            .ports
            .iter()
            .position(|q| q.name == spec.port)
            .ok_or_else(|| at.key("port").err(format!("unknown port {:?}", spec.port)))?;
        let mac_at = at.key("mac");
        let mac = mac(&spec.mac, mac_at)?;
        if mac[0] & 1 != 0 {
            return Err(mac_at.err("must be a unicast address"));
        }
        if let Some(&first) = self.macs.get(&mac) {
            return Err(mac_at.err(format!("duplicate of {}", mac_path(first))));
        }
        self.macs.insert(mac, index);
        let addresses_at = at.key("addresses");
        let addresses =
            spec.addresses.iter().flatten().enumerate().map(|(j, a)| prefix(a, addresses_at.index(j))).collect::<Result<Vec<_>, _>>()?;
        let v6 = addresses.iter().any(|a| a.addr.is_ipv6());
        let mtu = optional(spec.mtu.as_ref(), at, "mtu", |&m, at| {
            let v = uint(m, u64::from(MAX_MTU), at)? as u32;
            let (min, why) = if v6 { (MIN_MTU_V6, "IPv6's minimum") } else { (MIN_MTU_V4, "IPv4's minimum") };
            if v < min {
                return Err(at.err(format!("{v} is below {why} of {min}")));
            }
            Ok(v)
        })?;
        let urpf = match spec.urpf {
            None | Some(UrpfSpec::Off) => Urpf::Off,
            Some(UrpfSpec::Loose) => Urpf::Loose,
            Some(UrpfSpec::Strict) => Urpf::Strict,
        };
        let impair = optional(spec.impair.as_ref(), at, "impair", crate::impair::parse_impairment)?.unwrap_or_default();
        Ok(InterfaceConfig { name, port, mac, addresses, mtu, urpf, impair })
    }
}

/// The `id`s VRs state, checked for range and duplicates before any VR is parsed, so that VRs
/// without one can be given ids nobody claims.
fn explicit_vr_ids(specs: &[Option<VrSpec>], reused: &[Option<Reused<'_>>]) -> Result<HashSet<u16>, ConfigError> {
    let mut seen: HashMap<u16, usize> = HashMap::new();
    let vrs = At::Root;
    let vrs = vrs.key("vrs");
    for (i, spec) in specs.iter().enumerate() {
        let id = match (reused.get(i).and_then(Option::as_ref), spec) {
            (Some(r), _) => Some(r.vr.id),
            (None, Some(v)) => {
                let at = vrs.index(i);
                optional(v.id.as_ref(), at, "id", |&id, at| uint(id, MAX_VR_ID.into(), at))?.map(|id| id as u16)
            }
            (None, None) => None,
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
fn check_shared_macs(at: At<'_>, vr: u16, interfaces: &[InterfaceConfig]) -> Result<(), ConfigError> {
    if interfaces.len() > 0x100 {
        return Err(at.key("interfaces").err("a shared VR has at most 256 interfaces (its MACs encode the interface)"));
    }
    for (i, iface) in interfaces.iter().enumerate() {
        let want = shared_mac(vr, i as u8);
        if iface.mac != want {
            return Err(ConfigError::at(
                format!("{at}.interfaces[{i}].mac"),
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

/// A route destination: host bits must be zero, and the family must be one the VR routes.
fn route_prefix(s: &str, at: At<'_>, code: CodeOption) -> Result<IpPrefix, ConfigError> {
    let p = network(s, at)?;
    let routed = if p.addr.is_ipv4() { code.routes_v4() } else { code.routes_v6() };
    if !routed {
        return Err(at.err(format!("{p}: this VR's code option does not route that address family")));
    }
    Ok(p)
}
