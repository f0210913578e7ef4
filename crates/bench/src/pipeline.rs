//! `pearl-bench pipeline`: the whole fast path in memory. N VRs, each holding the full route
//! table, each fed by an in-memory port that hands out fresh copies of its frames for every
//! batch (as a NIC's rx ring would) and forwarding into an in-memory port; the workers run the
//! real pipeline: extract, classify, FIB, adjacency, TTL −1 and MAC rewrite, per-VR queues, WDRR,
//! tx. Destinations are drawn like DPDK's: a prefix uniformly, then random host bits.

use crate::args::Args;
use crate::i3_overlay::Overlay;
use crate::report::{median, round3, Figure};
use crate::table::{self, BenchAddr, Order};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use pearl_control::{
    CodeOption, Config, Driver, FilterAction, InterfaceConfig, IpPrefix, Limits, MatchRule, NeighborConfig, Placement, PluginConfig,
    PluginModule, PortConfig, QueueConfig, RouteConfig, Urpf, VrConfig, VrKind, DEFAULT_CPU_PERCENT, DEFAULT_FUEL_PER_PACKET,
    DEFAULT_MEMORY_MB, DEFAULT_PUNT_PPS,
};
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::pcap_file::PcapWriter;
use pearl_dataplane::port::{MemoryPort, Port};
use pearl_lookup::fib::Prefix;
use pearl_wire::flow_key::{ip_to_u128, ipv4_prefix_mask, ipv6_prefix_mask};
use pearl_wire::{EthernetFrame, EthernetRepr, Field, FlowKey, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, UdpPacket, UdpRepr, VlanTags};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest the warm-up waits for every VR to forward.
const WARM_UP_LIMIT: Duration = Duration::from_secs(10);

const OPTIONS: &[&str] = &[
    "table",
    "vrs",
    "size",
    "family",
    "workers",
    "seconds",
    "destinations",
    "repeat",
    "seed",
    "write-pcap",
    "plugin",
    "code",
    "rules",
    "triggers",
];

pub fn run(argv: &[String]) -> Result<(), String> {
    let args = Args::parse(argv, OPTIONS)?;
    let family = args.get::<String>("family", "v4".into())?;
    let list = table::load(args.required("table")?)?;
    match family.as_str() {
        "v4" => bench(&list.v4, &args, 64),
        "v6" => bench(&list.v6, &args, 78),
        other => Err(format!("--family: expected v4 or v6, got {other:?}")),
    }
}

/// How a family's addresses become config and frames.
pub(crate) trait Family: BenchAddr {
    fn ip(self) -> IpAddr;
    fn vr_side(vr: usize, side: u8, host: u8) -> IpAddr;
    fn frame(dst_mac: [u8; 6], src: IpAddr, dst: Self, size: usize) -> Vec<u8>;
}

impl Family for u32 {
    fn ip(self) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(self))
    }
    fn vr_side(vr: usize, side: u8, host: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, vr as u8, side, host))
    }
    fn frame(dst_mac: [u8; 6], src: IpAddr, dst: u32, size: usize) -> Vec<u8> {
        let IpAddr::V4(src) = src else { unreachable!("an IPv4 VR address") };
        let payload = vec![0u8; size.saturating_sub(14 + 20 + 8)];
        let mut f = vec![0u8; 14 + 20 + 8 + payload.len()];
        ethernet(&mut f, dst_mac, 0x0800);
        let udp = UdpRepr { src_port: 1024, dst_port: 4000, payload: &payload };
        let ip = Ipv4Repr::new(src, Ipv4Addr::from(dst), 17, udp.buffer_len());
        ip.emit(&mut Ipv4Packet::new_unchecked(&mut f[14..]));
        udp.emit(&mut UdpPacket::new_unchecked(&mut f[34..]), &pearl_wire::PseudoHeader::V4 { src, dst: Ipv4Addr::from(dst) });
        f
    }
}

impl Family for u128 {
    fn ip(self) -> IpAddr {
        IpAddr::V6(Ipv6Addr::from(self))
    }
    fn vr_side(vr: usize, side: u8, host: u8) -> IpAddr {
        IpAddr::V6(Ipv6Addr::new(0xfd00, vr as u16, u16::from(side), 0, 0, 0, 0, u16::from(host)))
    }
    fn frame(dst_mac: [u8; 6], src: IpAddr, dst: u128, size: usize) -> Vec<u8> {
        let IpAddr::V6(src) = src else { unreachable!("an IPv6 VR address") };
        let payload = vec![0u8; size.saturating_sub(14 + 40 + 8)];
        let mut f = vec![0u8; 14 + 40 + 8 + payload.len()];
        ethernet(&mut f, dst_mac, 0x86dd);
        let udp = UdpRepr { src_port: 1024, dst_port: 4000, payload: &payload };
        let ip = Ipv6Repr::new(src, Ipv6Addr::from(dst), 17, udp.buffer_len());
        ip.emit(&mut Ipv6Packet::new_unchecked(&mut f[14..]));
        udp.emit(&mut UdpPacket::new_unchecked(&mut f[54..]), &pearl_wire::PseudoHeader::V6 { src, dst: Ipv6Addr::from(dst) });
        f
    }
}

fn ethernet(f: &mut [u8], dst: [u8; 6], ethertype: u16) {
    let repr = EthernetRepr { dst_addr: dst, src_addr: [2, 0xee, 0, 0, 0, 1], tags: VlanTags::Untagged, ethertype };
    repr.emit(&mut EthernetFrame::new_unchecked(f));
}

pub(crate) fn mac(vr: usize, side: u8) -> [u8; 6] {
    [2, 0, 0, vr as u8, 0, side]
}

fn bench<A: Family>(prefixes: &[Prefix<A>], args: &Args, default_size: usize) -> Result<(), String> {
    if prefixes.is_empty() {
        return Err(format!("--table holds no {} prefixes", A::FAMILY));
    }
    let vrs: usize = args.get("vrs", 1)?;
    let size: usize = args.get("size", default_size)?;
    let workers: usize = args.get("workers", 1)?;
    let seconds: f64 = args.get("seconds", 3.0)?;
    let destinations: usize = args.get("destinations", 65_536)?;
    let repeat: usize = args.get("repeat", 3)?;
    let mut rng = SmallRng::seed_from_u64(args.get("seed", 1)?);
    if vrs == 0 || vrs > 200 || workers == 0 || repeat == 0 || destinations < vrs {
        return Err("--vrs (1..=200), --workers, --repeat must be positive, --destinations ≥ --vrs".into());
    }

    let mut config = config(prefixes, vrs, workers);
    // `--plugin FILE`: every VR runs that plugin in place of the IP router: a WebAssembly module
    // (.wasm, .wat), an XDP program's eBPF object (.o), or else an executable run as a process
    // plugin, in a namespace made for it.
    let plugin = args.required("plugin").ok();
    let mut _namespaces = None;
    if let Some(path) = plugin {
        let read =
            || -> Result<std::sync::Arc<[u8]>, String> { Ok(std::fs::read(path).map_err(|e| format!("--plugin {path}: {e}"))?.into()) };
        let module = if path.ends_with(".wasm") || path.ends_with(".wat") {
            PluginModule::Wasm { path: path.into(), bytes: read()? }
        } else if path.ends_with(".o") {
            PluginModule::Xdp { path: path.into(), bytes: read()?, section: None }
        } else {
            let names: Vec<String> = (0..vrs).map(|v| format!("pb{}v{v}", std::process::id() % 10_000)).collect();
            for (vr, name) in config.vrs.iter_mut().map(Arc::make_mut).zip(&names) {
                vr.name = name.clone();
            }
            _namespaces = Some(Namespaces::add(names)?);
            PluginModule::Process { argv: vec![path.to_string()] }
        };
        for vr in config.vrs.iter_mut().map(Arc::make_mut) {
            vr.kind = VrKind::Plugin;
            vr.plugin = Some(PluginConfig { module: module.clone(), config: serde_json::Value::Null, tables: Vec::new() });
        }
    }
    // `--code filter [--rules N]`: every VR is a filter VR whose N rules (prefixes of the table,
    // longer ones first) send their traffic on; destinations are drawn from those prefixes.
    let code = args.get::<String>("code", "ip".into())?;
    let mut overlay = None;
    let drawn_from = match code.as_str() {
        "ip" => prefixes.to_vec(),
        "i3" if plugin.is_none() && A::FAMILY == "v4" => {
            let v4 = |a: A| match a.ip() {
                IpAddr::V4(a) => u32::from(a),
                IpAddr::V6(_) => unreachable!("v4"),
            };
            let destinations: Vec<u32> = table::addresses(prefixes, 4096, Order::Uniform, &mut rng).into_iter().map(v4).collect();
            overlay = Some(Overlay::new(&destinations, args.get("triggers", 10_000)?, &mut rng));
            config.vrs.iter_mut().for_each(|vr| Arc::make_mut(vr).code = CodeOption::I3);
            prefixes.to_vec()
        }
        "filter" if plugin.is_none() => {
            let rules: usize = args.get("rules", 1000)?;
            filter_rules(&mut config, prefixes, rules.clamp(1, prefixes.len()), &mut rng)
        }
        other => return Err(format!("--code: expected ip, filter or i3 (v4; without --plugin), got {other:?}")),
    };
    let frames: Vec<Vec<Vec<u8>>> = (0..vrs)
        .map(|v| match (&overlay, A::vr_side(v, 0, 2), A::vr_side(v, 0, 1)) {
            (Some(o), IpAddr::V4(src), IpAddr::V4(node)) => o.frames(mac(v, 0), src, node, destinations / vrs, size, &mut rng),
            _ => table::addresses(&drawn_from, destinations / vrs, Order::Uniform, &mut rng)
                .into_iter()
                .map(|dst| A::frame(mac(v, 0), A::vr_side(v, 0, 2), dst, size))
                .collect(),
        })
        .collect();
    if let Ok(path) = args.required("write-pcap") {
        return write_pcap(path, &frames);
    }
    let mut mpps = Vec::new();
    let mut cpu_share = Vec::new();
    let mut build_s = Vec::new();
    for _ in 0..repeat {
        let t = Instant::now();
        let mut programs = HashMap::new();
        for (vr, hosted) in config.vrs.iter().filter_map(|v| Some((v, pearl_dataplane::program::hosted(v)?))) {
            let prepared = pearl_plugin::program_for(vr, hosted, "--plugin", None).map_err(|e| e.to_string())?;
            if let Some(o) = &overlay {
                o.fill(&prepared.tables)?;
            }
            if matches!(vr.plugin.as_ref().map(|p| &p.module), Some(PluginModule::Xdp { .. })) {
                crate::xdp_routes::fill(&prepared.tables, vr)?;
            }
            programs.insert(vr.id, prepared.program);
        }
        let (dataplane, _slow_path) = Dataplane::start_programmed(&config, programs, |p, _w, _pool| -> Result<Box<dyn Port>, _> {
            // Even ports receive a VR's traffic; odd ports are where it leaves.
            Ok(Box::new(if p % 2 == 0 { MemoryPort::new(&frames[p / 2]) } else { MemoryPort::new(Vec::<Vec<u8>>::new()) }))
        })
        .map_err(|e| e.to_string())?;
        build_s.push(t.elapsed().as_secs_f64());
        let sent = || dataplane.sum(|c| c.ports.iter().map(|p| p.tx_packets.get()).sum());
        let forwarded_by = |v: usize| dataplane.sum(|c| c.vrs[v].forwarded_packets.get());
        // Warm-up: caches and branch predictors, and every VR's program running. A process
        // plugin starts seconds after its VR (the supervisor's wait for the VR's cgroup), and a
        // window that began before it would count its start-up as forwarding time.
        let warm = Instant::now();
        std::thread::sleep(Duration::from_millis(300));
        while (0..vrs).any(|v| forwarded_by(v) == 0) && warm.elapsed() < WARM_UP_LIMIT {
            std::thread::sleep(Duration::from_millis(50));
        }
        let base: Vec<u64> = (0..vrs).map(forwarded_by).collect();
        std::thread::sleep(Duration::from_millis(300));
        if let Some(v) = (0..vrs).find(|&v| forwarded_by(v) == base[v]) {
            return Err(format!("VR {v} forwarded nothing in the warm-up's last 300 ms: the benchmark's set-up is broken"));
        }
        let (t0, n0, c0) = (Instant::now(), sent(), process_cpu_secs());
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let (n1, c1, wall) = (sent(), process_cpu_secs(), t0.elapsed().as_secs_f64());
        let rate = (n1 - n0) as f64 / wall;
        cpu_share.push((c1 - c0) / wall);
        dataplane.stop();
        mpps.push(rate / 1e6);
    }
    Figure::new("pipeline")
        .set("program", plugin.unwrap_or(&code))
        .set("rules", if code == "filter" { drawn_from.len() } else { 0 })
        .set("family", A::FAMILY)
        .set("vrs", vrs)
        .set("size", size)
        .set("workers", workers)
        .set("destinations", destinations)
        .set("prefixes", prefixes.len())
        .set("seconds", seconds)
        .set("build_s", round3(median(build_s)))
        .set("mpps", round3(median(mpps)))
        .set("cpu_share", (median(cpu_share) * 100.0).round() / 100.0)
        .print();
    Ok(())
}

/// Makes every VR of `config` a `code: filter` VR with `n` of `prefixes` (drawn at random) as
/// its rules, each sending what it matches out of its second interface to its neighbour;
/// returns the prefixes.
fn filter_rules<A: Family>(config: &mut Config, prefixes: &[Prefix<A>], n: usize, rng: &mut SmallRng) -> Vec<Prefix<A>> {
    let chosen: Vec<Prefix<A>> = rand::seq::index::sample(rng, prefixes.len(), n).into_iter().map(|i| prefixes[i]).collect();
    for (v, vr) in config.vrs.iter_mut().map(Arc::make_mut).enumerate() {
        let next_hop = vr.neighbors[0].mac;
        vr.code = CodeOption::Filter;
        vr.routes.clear();
        vr.limits.filters = n + 8;
        vr.matches = chosen
            .iter()
            .map(|p| {
                let (ip, len) = (p.addr().ip(), p.len() as u8);
                let (ethertype, mask) = match ip {
                    IpAddr::V4(_) => (0x0800, ipv4_prefix_mask(len)),
                    IpAddr::V6(_) => (0x86dd, ipv6_prefix_mask(len)),
                };
                let value = FlowKey::default()
                    .with(Field::InPort, 2 * v as u128)
                    .with(Field::EtherType, ethertype)
                    .with(Field::IpDst, ip_to_u128(ip) & mask);
                let mask = FlowKey::default().with(Field::InPort, 0xffff).with(Field::EtherType, 0xffff).with(Field::IpDst, mask);
                // Longer prefixes first, as a TCAM holding a routing table orders them.
                MatchRule {
                    priority: 100 + u32::from(len),
                    value,
                    mask,
                    queue: 0,
                    action: Some(FilterAction::Out { interface: 1, mac: Some(next_hop) }),
                }
            })
            .collect();
    }
    chosen
}

/// Network namespaces for process plugins' VRs, removed when dropped.
struct Namespaces(Vec<String>);

impl Namespaces {
    fn add(names: Vec<String>) -> Result<Namespaces, String> {
        let mut made = Namespaces(Vec::new());
        for n in names {
            let ok = std::process::Command::new("ip").args(["netns", "add", &n]).status().map_err(|e| format!("ip netns add: {e}"))?;
            if !ok.success() {
                return Err(format!("ip netns add {n} failed (root is needed for a process plugin)"));
            }
            made.0.push(n);
        }
        Ok(made)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = std::process::Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// CPU time of the whole process. Pinned to one core with one worker, over wall time it tells how
/// much of the core the benchmark got: on a shared machine, a figure taken at 0.5 means little.
pub(crate) fn process_cpu_secs() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Writes the trace instead of running it, so that another forwarder (bench/l3fwd.sh) replays the
/// very same frames. With several VRs their frames alternate, one from each VR in turn.
fn write_pcap(path: &str, frames: &[Vec<Vec<u8>>]) -> Result<(), String> {
    let err = |e: std::io::Error| format!("--write-pcap {path}: {e}");
    let file = std::fs::File::create(path).map_err(err)?;
    let mut w = PcapWriter::new(std::io::BufWriter::new(file), 2048).map_err(err)?;
    let per_vr = frames.iter().map(Vec::len).min().unwrap_or(0);
    for i in 0..per_vr {
        for vr in frames {
            w.write_frame(0, 0, &vr[i]).map_err(err)?;
        }
    }
    w.flush().map_err(err)
}

/// In-memory port `m{p}`.
pub(crate) fn memory_port(p: usize) -> PortConfig {
    PortConfig {
        name: format!("m{p}"),
        interface: format!("m{p}"),
        driver: Driver::Memory,
        rx: Driver::Memory,
        by_device: false,
        rate_mbps: None,
        opaque: None,
        rx_ring_frames: None,
        vxlan: None,
    }
}

/// N VRs, each with the whole table routed via one neighbour behind its second port.
pub(crate) fn config<A: Family>(prefixes: &[Prefix<A>], vrs: usize, workers: usize) -> Config {
    let width = if A::FAMILY == "v4" { 24 } else { 64 };
    let ports = (0..vrs * 2).map(memory_port).collect();
    let vrs = (0..vrs)
        .map(|v| {
            let side = |s: u8| InterfaceConfig {
                name: format!("eth{s}"),
                port: 2 * v + usize::from(s),
                mac: mac(v, s),
                addresses: vec![IpPrefix { addr: A::vr_side(v, s, 1), len: width }],
                mtu: None,
                urpf: Urpf::Off,
                impair: Default::default(),
            };
            let via = A::vr_side(v, 1, 2);
            let routes = prefixes
                .iter()
                .map(|p| RouteConfig { prefix: IpPrefix { addr: p.addr().ip(), len: p.len() as u8 }, via, interface: 1 })
                .collect();
            let neighbor = NeighborConfig { ip: via, mac: [2, 0xcc, 0, v as u8, 0, 2], interface: 1 };
            Arc::new(fast_vr(v, vec![side(0), side(1)], routes, neighbor))
        })
        .collect();
    Config { workers, node: Default::default(), ports, vrs, api_tls: None }
}

/// Fast VR `v` forwarding everything in `routes` through `neighbor` behind its second interface.
pub(crate) fn fast_vr(v: usize, interfaces: Vec<InterfaceConfig>, routes: Vec<RouteConfig>, neighbor: NeighborConfig) -> VrConfig {
    VrConfig {
        name: format!("vr{v}"),
        id: v as u16,
        kind: VrKind::Fast,
        placement: Placement::Fast,
        code: CodeOption::Ip,
        interfaces,
        limits: Limits {
            rate_mbps: None,
            share: None,
            fib_entries: routes.len() + 8,
            filters: 16,
            cpu_percent: DEFAULT_CPU_PERCENT,
            memory_mb: DEFAULT_MEMORY_MB,
            punt_pps: DEFAULT_PUNT_PPS,
            fuel_per_packet: DEFAULT_FUEL_PER_PACKET,
        },
        routes,
        neighbors: vec![neighbor],
        matches: Vec::new(),
        queues: vec![QueueConfig { weight: 1, length: 1024 }],
        control_plane: None,
        accept_source_route: false,
        leak: Vec::new(),
        nat: None,
        resources: Default::default(),
        distribution: Default::default(),
        plugin: None,
    }
}
