//! `pearl-bench e2e`: end to end on veth. A generator namespace sends UDP frames to a router
//! namespace, which forwards them to a sink namespace; the sink's interface counters say how many
//! arrived. The router is pearld (fast-path VRs on AF_XDP or AF_PACKET ports) or the Linux kernel
//! (ip_forward, one routing table per VR) on the same topology, fed by the same generator, back to
//! back within each repetition.
//!
//! CPU accounting, per packet counted at the sink (docs/benchmarks/e2e.md has the caveats):
//! - `cpu_ns_per_pkt`: pearld's process time, utime+stime from /proc/PID/stat. Without
//!   IRQ_TIME_ACCOUNTING this includes the softirq work run on pearld's CPU while pearld is
//!   current, i.e. delivering its frames into the sink (which discards them at once).
//! - `kernel_cpu_ns_per_pkt`: the irq+softirq ticks of every CPU (/proc/stat). The kernel router
//!   runs only in softirq, and on veth that softirq runs on the sender's CPU (the generator's), so
//!   it shows up there, in no process; the generator's own user and system ticks stay out.
//! - `system_cpu_ns_per_pkt`: pearld's process time plus the irq+softirq ticks of the other CPUs
//!   (delivering the generator's frames into pearld's rx rings), comparable with the kernel's.
//!
//! Frame sizes count the 4-byte FCS as RFC 2544 does: `--sizes 64,1518` puts 60- and 1514-byte
//! frames on veth, so the largest fills the 1500-byte MTU exactly. `--family v6` sends IPv6 UDP
//! instead, 78,512,1518 by default: 64 B cannot hold IPv6 UDP, and 78 B (74 on veth) is the
//! usual smallest IPv6 test frame.

use crate::args::Args;
use crate::generator::{Generator, Lane};
use crate::netns::{gen_mac, kernel_in_mac, mac_text, next_hop_mac, Family, Link, SinkCounters, Topology};
use crate::pearld_process::Pearld;
use crate::report::{median, round3, Figure};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use pearl_wire::{
    ethertype, ip_proto, EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, PseudoHeader, UdpPacket, UdpRepr,
    VlanTags,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const OPTIONS: &[&str] = &[
    "family",
    "sizes",
    "vrs",
    "seconds",
    "repeat",
    "warmup",
    "pearld",
    "gen-cpu",
    "router-cpu",
    "driver",
    "rx",
    "kinds",
    "plugins",
    "rate-pps",
];
/// VR kinds this benchmark can run: each kind's VRs in their own pearld run. The plugin kinds
/// run an example program (built by scripts/build-plugins.sh into `--plugins DIR`) on plugin
/// VRs: the IPv4 router in WebAssembly and in a process (`wasm-lpm`, `process-lpm`, routing by
/// the VR's FIB as the built-in `fast` does) and as an XDP program (`xdp-lpm`, by the LPM trie
/// the benchmark fills through the API as an owner would; IPv4 only), and cables (frames out of
/// the other interface as they came) in WebAssembly, in a process and as an XDP program.
const KINDS: &[&str] = &["fast", "kernel", "shared", "wasm-lpm", "wasm-wire", "process-lpm", "process-wire", "xdp-lpm", "xdp-wire"];
/// pearld's port drivers this benchmark can ask for.
const DRIVERS: &[&str] = &["af_xdp", "af_packet"];

/// Distinct flows per VR: destinations spread over the benchmark prefix, source ports vary too.
const FLOWS: u32 = 1024;
pub const FCS: usize = 4;
const ETHERNET_HEADER: usize = 14;
const UDP_HEADER: usize = 8;
/// Long enough for the frames still in flight when the generator stops to reach the sink.
pub const DRAIN: Duration = Duration::from_millis(50);
/// A 1500-byte IP packet in an Ethernet frame: veth's default MTU.
const MAX_FRAME: usize = ETHERNET_HEADER + 1500;

pub fn run(argv: &[String]) -> Result<(), String> {
    let args = Args::parse(argv, OPTIONS)?;
    let family = match args.get::<String>("family", "v4".into())?.as_str() {
        "v4" => Family::V4,
        "v6" => Family::V6,
        other => return Err(format!("--family: expected v4 or v6, got {other:?}")),
    };
    let sizes = list(&args, "sizes", default_sizes(family))?;
    let vr_counts = list(&args, "vrs", "1,2,3,4")?;
    let seconds: f64 = args.get("seconds", 3.0)?;
    let warmup: f64 = args.get("warmup", 0.5)?;
    let repeat: usize = args.get("repeat", 3)?;
    let rate_pps = match args.get::<f64>("rate-pps", 0.0)? {
        0.0 => None,
        r if r.is_finite() && r > 0.0 => Some(r),
        r => return Err(format!("--rate-pps: {r} is not a positive rate")),
    };
    let gen_cpu: usize = args.get("gen-cpu", 0)?;
    let router_cpu: usize = args.get("router-cpu", 1)?;
    let driver: String = args.get("driver", DRIVERS[0].to_string())?;
    let driver =
        *DRIVERS.iter().find(|&&d| d == driver).ok_or_else(|| format!("--driver: {driver:?} is not one of {}", DRIVERS.join(", ")))?;
    let rx: String = args.get("rx", driver.to_string())?;
    let rx = *DRIVERS.iter().find(|&&d| d == rx).ok_or_else(|| format!("--rx: {rx:?} is not one of {}", DRIVERS.join(", ")))?;
    if rx != driver && driver != "af_xdp" {
        return Err(format!("--rx: only af_xdp ports receive through another driver, not {driver}"));
    }
    let kinds: Vec<&'static str> = args
        .get::<String>("kinds", "fast".to_string())?
        .split(',')
        .map(|k| KINDS.iter().copied().find(|&x| x == k).ok_or_else(|| format!("--kinds: {k:?} is not one of {}", KINDS.join(", "))))
        .collect::<Result<_, _>>()?;
    let pearld = match args.get::<String>("pearld", String::new())? {
        p if p.is_empty() => std::env::current_exe().map_err(|e| format!("locating pearl-bench: {e}"))?.with_file_name("pearld"),
        p => PathBuf::from(p),
    };
    let smallest = min_frame(family) + FCS;
    if let Some(s) = sizes.iter().find(|&&s| !(smallest..=MAX_FRAME + FCS).contains(&s)) {
        let ip = ip_version(family);
        return Err(format!("--sizes: {s} is outside {smallest}..=1518 ({ip} UDP on a 1500-byte MTU, FCS included)"));
    }
    if vr_counts.iter().any(|&v| v == 0 || v > 200) || repeat == 0 || seconds <= 0.0 || warmup < 0.0 {
        return Err("--vrs must be in 1..=200, --repeat and --seconds positive, --warmup not negative".into());
    }
    if gen_cpu == router_cpu {
        return Err("--gen-cpu and --router-cpu must differ".into());
    }
    // SAFETY: geteuid has no memory effects.
    if unsafe { libc::geteuid() } != 0 {
        return Err("e2e must run as root: it creates network namespaces and veth pairs".into());
    }
    if !pearld.is_file() {
        return Err(format!("no pearld at {} (build it with `cargo build --release -p pearld`, or pass --pearld PATH)", pearld.display()));
    }

    let max_vrs = *vr_counts.iter().max().expect("the list is not empty");
    let prefix = format!("e2{}", std::process::id());
    let topology = Topology::build(&prefix, max_vrs, family)?;
    let mut sink = SinkCounters::open(&topology.sink)?;
    let plugins = match args.required("plugins") {
        Ok(dir) => PathBuf::from(dir),
        // target/release/pearld → target/plugins
        Err(_) => pearld.parent().and_then(Path::parent).map_or_else(|| PathBuf::from("target/plugins"), |t| t.join("plugins")),
    };
    let bench = Bench {
        topology: &topology,
        family,
        pearld: &pearld,
        driver,
        rx,
        seconds,
        warmup,
        gen_cpu,
        router_cpu,
        prefix: &prefix,
        plugins: &plugins,
        rate_pps,
    };
    for &size in &sizes {
        for &vrs in &vr_counts {
            // The kernel router once per size and VR count, alternating with every kind's runs.
            let mut kernel = Vec::new();
            let mut pearl: Vec<Vec<Run>> = kinds.iter().map(|_| Vec::new()).collect();
            for _ in 0..repeat {
                kernel.push(bench.measure(Router::Kernel, vrs, size, &mut sink)?);
                for (k, &kind) in kinds.iter().enumerate() {
                    pearl[k].push(bench.measure(Router::Pearld(kind), vrs, size, &mut sink)?);
                }
            }
            let k = Summary::of(&kernel);
            for (&kind, runs) in kinds.iter().zip(&pearl) {
                let p = Summary::of(runs);
                eprintln!(
                    "e2e: {} size {size} vrs {vrs} kind {kind}: pearld {:.0} pps {:.0} ns/pkt | kernel {:.0} pps {:.0} ns/pkt",
                    family.name(),
                    p.pps,
                    p.process_cpu_ns,
                    k.pps,
                    k.system_cpu_ns
                );
                Figure::new("e2e")
                .set("family", family.name())
                .set("size", size)
                .set("frame_bytes", size - FCS)
                .set("vrs", vrs)
                .set("kind", kind)
                .set("driver", driver)
                .set("rx", rx)
                .set("pps", p.pps.round())
                .set("cpu_ns_per_pkt", round3(p.process_cpu_ns))
                .set("cpu_user_ns_per_pkt", round3(p.user_cpu_ns))
                .set("system_cpu_ns_per_pkt", round3(p.system_cpu_ns))
                .set("kernel_pps", k.pps.round())
                .set("kernel_cpu_ns_per_pkt", round3(k.system_cpu_ns))
                .set("pps_ratio", round3(p.pps / k.pps))
                .set("cpu_ratio", round3(p.process_cpu_ns / k.system_cpu_ns))
                .set("system_cpu_ratio", round3(p.system_cpu_ns / k.system_cpu_ns))
                .set("offered_pps", p.offered_pps.round())
                .set("kernel_offered_pps", k.offered_pps.round())
                .set("rate_pps", rate_pps)
                .set("offered", p.offered)
                .set("received", p.received)
                .set("lost", p.lost)
                .set("kernel_offered", k.offered)
                .set("kernel_received", k.received)
                .set("kernel_lost", k.lost)
                .set("seconds", seconds)
                .set("repeat", repeat)
                .set(
                    "cpu_accounting",
                    "cpu_ns_per_pkt: pearld process utime+stime (cpu_user_ns_per_pkt: utime); kernel_cpu_ns_per_pkt: irq+softirq ticks of all CPUs; \
                     system_cpu_ns_per_pkt: pearld process time + irq+softirq ticks of the other CPUs; per packet counted at the sink",
                )
                .print();
            }
        }
    }
    Ok(())
}

/// 64/512/1518 B, with 78 B in place of 64 for IPv6 (see the module docs).
fn default_sizes(family: Family) -> &'static str {
    match family {
        Family::V4 => "64,512,1518",
        Family::V6 => "78,512,1518",
    }
}

fn ip_version(family: Family) -> &'static str {
    match family {
        Family::V4 => "IPv4",
        Family::V6 => "IPv6",
    }
}

/// The fixed header, without options or extension headers.
fn ip_header_len(family: Family) -> usize {
    match family {
        Family::V4 => 20,
        Family::V6 => 40,
    }
}

/// An empty UDP datagram's frame, without FCS.
fn min_frame(family: Family) -> usize {
    ETHERNET_HEADER + ip_header_len(family) + UDP_HEADER
}

fn list(args: &Args, name: &str, default: &str) -> Result<Vec<usize>, String> {
    let text = args.get::<String>(name, default.into())?;
    let values: Result<Vec<usize>, _> = text.split(',').map(|s| s.trim().parse()).collect();
    match values {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => Err(format!("--{name}: expected a comma-separated list of numbers, got {text:?}")),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Router {
    Kernel,
    /// pearld with VRs of this kind.
    Pearld(&'static str),
}

/// One measured run.
struct Run {
    /// Packets per second counted at the sink.
    pps: f64,
    /// Frames per second the generator's links accepted.
    offered_pps: f64,
    /// pearld's process CPU per packet (0 for the kernel, which has no process).
    process_cpu_ns: f64,
    /// The user-space part of it: pearld's own code, the rest is the kernel working for it.
    user_cpu_ns: f64,
    /// The process CPU plus the softirq CPU that ran for the router (see the module docs).
    system_cpu_ns: f64,
    /// Over the generator's whole run, warm-up included: frames offered, counted at the sink,
    /// and the difference.
    offered: f64,
    received: f64,
    lost: f64,
}

/// Medians over the repetitions.
struct Summary {
    pps: f64,
    offered_pps: f64,
    process_cpu_ns: f64,
    user_cpu_ns: f64,
    system_cpu_ns: f64,
    offered: f64,
    received: f64,
    lost: f64,
}

impl Summary {
    fn of(runs: &[Run]) -> Summary {
        let m = |f: fn(&Run) -> f64| median(runs.iter().map(f).collect());
        Summary {
            pps: m(|r| r.pps),
            offered_pps: m(|r| r.offered_pps),
            process_cpu_ns: m(|r| r.process_cpu_ns),
            user_cpu_ns: m(|r| r.user_cpu_ns),
            system_cpu_ns: m(|r| r.system_cpu_ns),
            offered: m(|r| r.offered),
            received: m(|r| r.received),
            lost: m(|r| r.lost),
        }
    }
}

struct Bench<'a> {
    topology: &'a Topology,
    family: Family,
    pearld: &'a Path,
    driver: &'static str,
    /// How pearld's ports receive (`rx` in its config).
    rx: &'static str,
    seconds: f64,
    warmup: f64,
    gen_cpu: usize,
    router_cpu: usize,
    prefix: &'a str,
    /// Where the example plugins are built (scripts/build-plugins.sh).
    plugins: &'a Path,
    /// The offered load over all VRs, or `None` for as fast as the generator goes.
    rate_pps: Option<f64>,
}

impl Bench<'_> {
    fn measure(&self, router: Router, vrs: usize, size: usize, sink: &mut SinkCounters) -> Result<Run, String> {
        let daemon = match router {
            Router::Kernel => {
                self.topology.kernel_forwarding(true)?;
                None
            }
            Router::Pearld(kind) => {
                self.topology.kernel_forwarding(false)?;
                let config = pearld_config(self.family, vrs, self.driver, self.rx, kind, self.prefix, self.plugins);
                let daemon = Pearld::start(self.pearld, &self.topology.rtr, &config, self.driver, self.router_cpu, self.prefix)?;
                if kind == "xdp-lpm" {
                    daemon.route_in_xdp_tries(self.pearld, self.family, vrs, self.prefix)?;
                }
                Some(daemon)
            }
        };
        let dst_mac = |v| match router {
            Router::Kernel => kernel_in_mac(v),
            Router::Pearld(kind) => pearld_in_mac(v, kind),
        };
        let lanes = (1..=vrs).map(|v| Lane { ifname: format!("g{v}"), frames: frames(self.family, v, dst_mac(v), size - FCS) }).collect();
        let before = sink.rx_packets(vrs)?;
        let generator = Generator::start(&self.topology.gen, lanes, self.gen_cpu, self.rate_pps)?;
        std::thread::sleep(Duration::from_secs_f64(self.warmup));

        let (rx0, sent0) = (sink.rx_packets(vrs)?, generator.sent());
        let t0 = Instant::now();
        let cpu0 = SoftirqTicks::read()?;
        let proc0 = daemon.as_ref().map(Pearld::cpu_ticks).transpose()?;
        std::thread::sleep(Duration::from_secs_f64(self.seconds));
        let (rx1, sent1) = (sink.rx_packets(vrs)?, generator.sent());
        let elapsed = t0.elapsed().as_secs_f64();
        let cpu1 = SoftirqTicks::read()?;
        let proc1 = daemon.as_ref().map(Pearld::cpu_ticks).transpose()?;

        let totals = generator.stop()?;
        std::thread::sleep(DRAIN);
        let received = sink.rx_packets(vrs)? - before;
        if let Some(d) = daemon {
            d.stop()?;
        } else {
            self.topology.kernel_forwarding(false)?;
        }
        let forwarded = rx1 - rx0;
        if forwarded == 0 {
            return Err(format!("{}: nothing reached the sink: the set-up is broken", router.name()));
        }
        let tick_ns = 1e9 / clock_ticks_per_second();
        let per_packet = |ticks: u64| ticks as f64 * tick_ns / forwarded as f64;
        let run = |(user, system): (u64, u64), softirq_ticks: u64| Run {
            pps: forwarded as f64 / elapsed,
            offered_pps: (sent1 - sent0) as f64 / elapsed,
            process_cpu_ns: per_packet(user + system),
            user_cpu_ns: per_packet(user),
            system_cpu_ns: per_packet(user + system + softirq_ticks),
            offered: totals.offered as f64,
            received: received as f64,
            lost: totals.offered as f64 - received as f64,
        };
        Ok(match (proc0, proc1) {
            // pearld's own time already holds the softirq work run on its CPU (delivering to the
            // sink); add what ran on the other CPUs (delivering into its rx rings).
            (Some(a), Some(b)) => run((b.0 - a.0, b.1 - a.1), cpu0.delta(&cpu1, Some(self.router_cpu))),
            // The kernel router runs in softirq only, wherever that is.
            _ => run((0, 0), cpu0.delta(&cpu1, None)),
        })
    }
}

impl Router {
    fn name(self) -> &'static str {
        match self {
            Router::Kernel => "kernel router",
            Router::Pearld(_) => "pearld",
        }
    }
}

/// pearld's MAC on VR `v`'s ingress interface (the kernel's i{v} has another, so frames meant
/// for pearld are not the kernel's to route).
pub fn pearld_in_mac(vr: usize, kind: &str) -> [u8; 6] {
    match kind {
        // Shared VRs' MACs encode their id and interface.
        "shared" => pearl_control::shared_mac((vr - 1) as u16, 0),
        _ => [2, 0, 0, 0, vr as u8, 0],
    }
}

/// FLOWS UDP frames of `len` bytes from VR `vr`'s generator to destinations spread over the
/// family's benchmark prefix.
pub fn frames(family: Family, vr: usize, dst_mac: [u8; 6], len: usize) -> Vec<Vec<u8>> {
    let payload = vec![0u8; len - min_frame(family)];
    let l4 = ETHERNET_HEADER + ip_header_len(family);
    (0..FLOWS)
        .map(|flow| {
            let mut f = vec![0u8; len];
            let udp = UdpRepr { src_port: 1024 + flow as u16, dst_port: 4000, payload: &payload };
            let (ethertype, pseudo) =
                emit_ip(family.gen_addr(vr), destination(family, flow), udp.buffer_len(), &mut f[ETHERNET_HEADER..l4]);
            let eth = EthernetRepr { dst_addr: dst_mac, src_addr: gen_mac(vr), tags: VlanTags::Untagged, ethertype };
            eth.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
            udp.emit(&mut UdpPacket::new_unchecked(&mut f[l4..]), &pseudo);
            f
        })
        .collect()
}

/// Flow `flow`'s destination: a stride coprime to 2^17 (2^16) spreads the flows evenly over the
/// addresses of 198.18.0.0/15 (the /64s of 2001:2::/48).
fn destination(family: Family, flow: u32) -> IpAddr {
    let spread = flow * 40_503;
    match family {
        Family::V4 => Ipv4Addr::from(u32::from(Ipv4Addr::new(198, 18, 0, 0)) + spread % (1 << 17)).into(),
        Family::V6 => Ipv6Addr::new(0x2001, 2, 0, spread as u16, 0, 0, 0, 1).into(),
    }
}

/// Writes the IP header of a UDP datagram of `udp_len` bytes into `header`; returns the frame's
/// EtherType and the pseudo-header the UDP checksum covers.
fn emit_ip(src: IpAddr, dst: IpAddr, udp_len: usize, header: &mut [u8]) -> (u16, PseudoHeader) {
    match (src, dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => {
            Ipv4Repr::new(src, dst, ip_proto::UDP, udp_len).emit(&mut Ipv4Packet::new_unchecked(header));
            (ethertype::IPV4, PseudoHeader::V4 { src, dst })
        }
        (IpAddr::V6(src), IpAddr::V6(dst)) => {
            Ipv6Repr::new(src, dst, ip_proto::UDP, udp_len).emit(&mut Ipv6Packet::new_unchecked(header));
            (ethertype::IPV6, PseudoHeader::V6 { src, dst })
        }
        _ => unreachable!("source {src} and destination {dst} of different families"),
    }
}

/// One worker, one VR of `kind` per veth pair, each routing the family's benchmark prefix to its
/// sink.
pub fn pearld_config(family: Family, vrs: usize, driver: &str, rx: &str, kind: &str, prefix: &str, plugins: &Path) -> String {
    let code = match family {
        Family::V4 => "ipv4",
        Family::V6 => "ipv6",
    };
    let wasm = plugins.join("wasm32-unknown-unknown/release");
    let program = match kind {
        "wasm-lpm" => Some(format!("{{wasm: {}}}", wasm.join("pearl_plugin_lpm.wasm").display())),
        "wasm-wire" => Some(format!("{{wasm: {}}}", wasm.join("pearl_plugin_wire.wasm").display())),
        "process-lpm" => Some(format!("{{process: [{}]}}", plugins.join("native/pearl_plugin_c_lpm").display())),
        "process-wire" => Some(format!("{{process: [{}]}}", plugins.join("native/pearl_plugin_c_wire").display())),
        "xdp-lpm" => Some(format!("{{xdp: {}}}", plugins.join("xdp/router.o").display())),
        "xdp-wire" => Some(format!("{{xdp: {}}}", plugins.join("xdp/wire.o").display())),
        _ => None,
    };
    let (kind, code) = match &program {
        Some(p) => ("plugin", format!("plugin: {p}")),
        None => (kind, format!("code: {code}")),
    };
    let mut yaml = String::from("workers: 1\nports:\n");
    let rx = if rx == driver { String::new() } else { format!(", rx: {rx}") };
    for v in 1..=vrs {
        yaml += &format!(
            "  - {{name: i{v}, interface: i{v}, driver: {driver}{rx}}}\n  - {{name: o{v}, interface: o{v}, driver: {driver}{rx}}}\n"
        );
    }
    yaml += "vrs:\n";
    for v in 1..=vrs {
        // VR names are namespace names: the run's prefix keeps them its own.
        yaml += &format!(
            "  - name: {prefix}v{v}
    id: {id}
    kind: {kind}
    {code}
    interfaces:
      - {{name: eth0, port: i{v}, mac: \"{in_mac}\", addresses: [\"{in_addr}\"]}}
      - {{name: eth1, port: o{v}, mac: \"{out_mac}\", addresses: [\"{out_addr}\"]}}
    routes: [{{prefix: \"{bench}\", via: \"{next_hop}\"}}]
    neighbors: [{{ip: \"{next_hop}\", mac: \"{sink}\", interface: eth1}}]
",
            id = v - 1,
            in_addr = family.router_addr(v, Link::Gen),
            out_addr = family.router_addr(v, Link::Sink),
            bench = family.bench_prefix(),
            next_hop = family.next_hop(v),
            in_mac = mac_text(pearld_in_mac(v, kind)),
            out_mac = mac_text(if kind == "shared" { [2, (v - 1) as u8, 0, 0, 0, 1] } else { [2, 0, 0, 0, v as u8, 1] }),
            sink = mac_text(next_hop_mac(v)),
        );
    }
    yaml
}

/// Per-CPU irq + softirq ticks from /proc/stat.
struct SoftirqTicks {
    cpus: Vec<u64>,
}

impl SoftirqTicks {
    fn read() -> Result<SoftirqTicks, String> {
        let text = std::fs::read_to_string("/proc/stat").map_err(|e| format!("/proc/stat: {e}"))?;
        let mut cpus = Vec::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("cpu") else { continue };
            let Some((index, counters)) = rest.split_once(' ') else { continue };
            if index.parse::<usize>().is_err() {
                continue;
            }
            // user nice system idle iowait irq softirq …
            let f: Vec<u64> = counters.split_whitespace().skip(5).take(2).filter_map(|x| x.parse().ok()).collect();
            match f[..] {
                [irq, softirq] => cpus.push(irq + softirq),
                _ => return Err(format!("/proc/stat: cannot parse {line:?}")),
            }
        }
        Ok(SoftirqTicks { cpus })
    }

    /// Ticks from `self` to `later`, over every CPU but `except`.
    fn delta(&self, later: &SoftirqTicks, except: Option<usize>) -> u64 {
        self.cpus.iter().zip(&later.cpus).enumerate().filter(|&(cpu, _)| Some(cpu) != except).map(|(_, (a, b))| b - a).sum()
    }
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_the_requested_length_and_valid_headers() {
        for len in [60, 508, 1514] {
            let fs = frames(Family::V4, 2, pearld_in_mac(2, "fast"), len);
            assert_eq!(fs.len(), FLOWS as usize);
            for f in &fs {
                assert_eq!(f.len(), len);
                let ip = Ipv4Packet::new_checked(&f[14..]).expect("an IPv4 header");
                assert!(ip.verify_checksum());
                let dst = ip.dst_addr().octets();
                assert!(dst[0] == 198 && (dst[1] == 18 || dst[1] == 19), "{dst:?} is outside 198.18.0.0/15");
            }
        }
    }

    #[test]
    fn ipv6_frames_have_the_requested_length_and_valid_headers() {
        for len in [74, 508, 1514] {
            let fs = frames(Family::V6, 2, pearld_in_mac(2, "fast"), len);
            assert_eq!(fs.len(), FLOWS as usize);
            let mut destinations = std::collections::HashSet::new();
            for f in &fs {
                assert_eq!(f.len(), len);
                assert_eq!(EthernetFrame::new_checked(&f[..]).expect("an Ethernet header").ethertype(), ethertype::IPV6);
                let ip = Ipv6Packet::new_checked(&f[14..]).expect("an IPv6 header");
                assert_eq!(usize::from(ip.payload_len()), len - 14 - 40);
                assert_eq!((ip.next_header(), ip.hop_limit()), (ip_proto::UDP, 64));
                let (src, dst) = (ip.src_addr(), ip.dst_addr());
                assert_eq!(IpAddr::V6(src), Family::V6.gen_addr(2));
                assert_eq!(dst.segments()[..3], [0x2001, 2, 0], "{dst} is outside 2001:2::/48");
                destinations.insert(dst);
                let udp = UdpPacket::new_checked(ip.payload()).expect("a UDP header");
                assert_eq!(usize::from(udp.len()), len - 14 - 40);
                assert!(udp.verify_checksum(&PseudoHeader::V6 { src, dst }));
            }
            assert_eq!(destinations.len(), FLOWS as usize);
        }
    }

    #[test]
    fn sizes_below_a_familys_smallest_frame_are_refused_by_name() {
        let argv = |args: &[&str]| args.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let err = run(&argv(&["--family", "v6", "--sizes", "64"])).expect_err("64 B is too small for IPv6 UDP");
        assert!(err.starts_with("--sizes: 64 is outside 66..=1518 (IPv6"), "{err}");
        assert_eq!(run(&argv(&["--family", "x"])).err().as_deref(), Some(r#"--family: expected v4 or v6, got "x""#));
    }

    #[test]
    fn config_names_every_vr_and_port() {
        for family in [Family::V4, Family::V6] {
            for (driver, rx) in [("af_xdp", "af_xdp"), ("af_xdp", "af_packet"), ("af_packet", "af_packet")] {
                for kind in KINDS {
                    let yaml = pearld_config(family, 3, driver, rx, kind, "e2test", Path::new("/nonexistent"));
                    if kind.contains('-') {
                        // A plugin's file must exist to be parsed: its configuration is checked below.
                        assert!(yaml.contains("kind: plugin") && yaml.contains("/nonexistent/"), "{yaml}");
                        continue;
                    }
                    let config = pearl_control::parse_config(&yaml).expect("a valid pearld configuration");
                    let want = if rx == "af_packet" { pearl_control::Driver::AfPacket } else { pearl_control::Driver::AfXdp };
                    assert!(config.ports.iter().all(|p| p.rx == want), "{yaml}");
                    assert_eq!(config.vrs.len(), 3);
                    assert_eq!(config.ports.len(), 6);
                    let vr = &config.vrs[2];
                    assert_eq!(vr.routes[0].prefix.to_string(), family.bench_prefix());
                    assert_eq!((vr.routes[0].via, vr.neighbors[0].ip), (family.next_hop(3), family.next_hop(3)));
                }
            }
        }
    }
}
