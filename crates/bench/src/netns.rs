//! The e2e benchmark's network: a generator, a router and a sink namespace joined by veth pairs,
//! one pair on each side of the router per VR, made with `ip` and removed on drop whatever
//! happened in between (error or panic).
//!
//! ```text
//!   gen            rtr                       sink
//!   g{v} ──veth── i{v}  [pearld | kernel]  o{v} ──veth── s{v}   for each VR v = 1..=N
//! ```
//!
//! The router namespace also carries the kernel router's configuration for every VR, in the
//! family the run measures, so that switching between pearld and the kernel is one sysctl: a
//! VR's addresses on i{v}/o{v}, its own routing table selected by `ip rule iif i{v}` (VRF devices
//! are not in this kernel, and one table per ingress interface is how one kernel keeps VRs with
//! identical prefixes apart), the benchmark prefix routed to the sink, and a permanent neighbour
//! on the sink's link. That neighbour's MAC is not the sink interface's own, so the sink's kernel
//! discards every frame at its first check (not for this host) right after the interface counted
//! it: the cheapest drop there is, which matters because on veth the sink's receive work runs on
//! the router's CPU. (Frames addressed to the sink itself cost a route lookup, a dst allocation
//! and an RCU free each, as destinations that are not local on a host that does not forward.)

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::process::Command;

/// A bound on every `ip`/`ethtool`/`sysctl` call, so a wedged tool cannot hang the benchmark.
const TOOL_TIMEOUT: &str = "10";

/// The IP version a run routes: the kernel router and pearld are configured for that one only.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    V4,
    V6,
}

/// The two links of a VR: g{v}–i{v} from the generator, o{v}–s{v} to the sink.
#[derive(Clone, Copy)]
pub enum Link {
    Gen = 0,
    Sink = 1,
}

/// The routers are host 1 on both links of a VR; host 2 is the generator on its link and the
/// next hop on the sink's.
const ROUTER_HOST: u8 = 1;
const PEER_HOST: u8 = 2;

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::V4 => "v4",
            Family::V6 => "v6",
        }
    }

    /// The destinations the generator uses and the routers send to the sink: the benchmarking
    /// ranges of RFC 2544 and RFC 5180.
    pub fn bench_prefix(self) -> &'static str {
        match self {
            Family::V4 => "198.18.0.0/15",
            Family::V6 => "2001:2::/48",
        }
    }

    /// The router's address on VR `vr`'s `link`, with its subnet's length, as `ip addr` and
    /// pearld's configuration take it.
    pub fn router_addr(self, vr: usize, link: Link) -> String {
        format!("{}/{}", self.host(vr, link, ROUTER_HOST), self.subnet_len())
    }

    /// The generator's source address on VR `vr`'s link.
    pub fn gen_addr(self, vr: usize) -> IpAddr {
        self.host(vr, Link::Gen, PEER_HOST)
    }

    /// The next hop both routers send VR `vr`'s benchmark prefix to; it resolves to
    /// [`next_hop_mac`].
    pub fn next_hop(self, vr: usize) -> IpAddr {
        self.host(vr, Link::Sink, PEER_HOST)
    }

    /// 10.{vr}.{link}.{host} or 2001:db8:{vr}:{link}::{host}.
    fn host(self, vr: usize, link: Link, host: u8) -> IpAddr {
        match self {
            Family::V4 => Ipv4Addr::new(10, vr as u8, link as u8, host).into(),
            Family::V6 => Ipv6Addr::new(0x2001, 0xdb8, vr as u16, link as u16, 0, 0, 0, host.into()).into(),
        }
    }

    fn subnet_len(self) -> u8 {
        match self {
            Family::V4 => 24,
            Family::V6 => 64,
        }
    }

    /// `ip`'s family flag, which `ip rule` needs (it cannot tell from the arguments).
    fn ip_flag(self) -> &'static str {
        match self {
            Family::V4 => "-4",
            Family::V6 => "-6",
        }
    }
}

/// The MAC of the kernel router's ingress interface i{v} (pearld's VR interface uses another).
pub fn kernel_in_mac(vr: usize) -> [u8; 6] {
    [2, 0, 0, 1, vr as u8, 0]
}

/// The MAC of sink interface s{v}.
fn sink_mac(vr: usize) -> [u8; 6] {
    [2, 0xcc, 0, 0, vr as u8, 2]
}

/// The MAC both routers resolve VR `vr`'s next hop to: a host on the sink's link that is not the
/// sink, so the sink counts the frames and discards them unrouted.
pub fn next_hop_mac(vr: usize) -> [u8; 6] {
    [2, 0xcc, 0, 0, vr as u8, 0x99]
}

/// The generator's source MAC on g{v}.
pub fn gen_mac(vr: usize) -> [u8; 6] {
    [2, 0xee, 0, 0, vr as u8, 2]
}

pub fn mac_text(mac: [u8; 6]) -> String {
    mac.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// Runs a command (bounded by TOOL_TIMEOUT); returns its stdout or an error naming it.
pub fn sh(args: &[&str]) -> Result<String, String> {
    let out = Command::new("timeout").arg(TOOL_TIMEOUT).args(args).output().map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!("{}: {} {}", args.join(" "), out.status, String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub struct Topology {
    pub gen: String,
    pub rtr: String,
    pub sink: String,
    family: Family,
    /// Namespaces created so far, deleted on drop.
    made: Vec<String>,
}

impl Topology {
    /// Builds the network for `vrs` VRs routing `family`, with namespaces `{prefix}gen`,
    /// `{prefix}rtr`, `{prefix}sink`. Kernel forwarding starts off.
    pub fn build(prefix: &str, vrs: usize, family: Family) -> Result<Topology, String> {
        let mut t =
            Topology { gen: format!("{prefix}gen"), rtr: format!("{prefix}rtr"), sink: format!("{prefix}sink"), family, made: Vec::new() };
        for ns in [t.gen.clone(), t.rtr.clone(), t.sink.clone()] {
            sh(&["ip", "netns", "add", &ns])?;
            t.made.push(ns.clone());
            if family == Family::V6 && ns == t.rtr {
                t.quiet_ipv6(&ns)?;
            } else {
                // No IPv6: router solicitations, DAD and MLD reports would be counted at the sink.
                t.sysctl(&ns, "net.ipv6.conf.default.disable_ipv6=1")?;
                t.sysctl(&ns, "net.ipv6.conf.all.disable_ipv6=1")?;
            }
            sh(&["ip", "-n", &ns, "link", "set", "lo", "up"])?;
        }
        let rtr = t.rtr.clone();
        t.kernel_forwarding(false)?;
        for key in ["all", "default"] {
            t.sysctl(&rtr, &format!("net.ipv4.conf.{key}.rp_filter=0"))?;
        }
        for v in 1..=vrs {
            t.cable(v)?;
        }
        Ok(t)
    }

    /// IPv6 for the kernel router, set before the veths exist so that they inherit it: no DAD,
    /// so that addresses are usable at once, and no router solicitations, which would be
    /// counted at the sink. MLD reports remain: a few frames at set-up and at each forwarding
    /// toggle, against millions counted.
    fn quiet_ipv6(&self, ns: &str) -> Result<(), String> {
        for key in ["all", "default"] {
            self.sysctl(ns, &format!("net.ipv6.conf.{key}.accept_dad=0"))?;
            self.sysctl(ns, &format!("net.ipv6.conf.{key}.accept_ra=0"))?;
        }
        Ok(())
    }

    fn sysctl(&self, ns: &str, setting: &str) -> Result<(), String> {
        sh(&["ip", "netns", "exec", ns, "sysctl", "-qw", setting]).map(drop)
    }

    /// Cables VR `v`'s two veth pairs and configures its kernel router and sink side.
    fn cable(&self, v: usize) -> Result<(), String> {
        let (gen, rtr, sink) = (self.gen.as_str(), self.rtr.as_str(), self.sink.as_str());
        let (g, i, o, s) = (format!("g{v}"), format!("i{v}"), format!("o{v}"), format!("s{v}"));
        sh(&["ip", "link", "add", &g, "netns", gen, "type", "veth", "peer", "name", &i, "netns", rtr])?;
        sh(&["ip", "link", "add", &o, "netns", rtr, "type", "veth", "peer", "name", &s, "netns", sink])?;
        let out_mac = [2, 0, 0, 1, v as u8, 1];
        for (ns, dev, mac) in [(gen, &g, gen_mac(v)), (rtr, &i, kernel_in_mac(v)), (rtr, &o, out_mac), (sink, &s, sink_mac(v))] {
            sh(&["ip", "-n", ns, "link", "set", dev, "address", &mac_text(mac)])?;
            // A frame must stay a frame: no GSO/GRO super-packets, no deferred checksums.
            sh(&["ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off", "gro", "off"])?;
            sh(&["ip", "-n", ns, "link", "set", dev, "up"])?;
        }
        let f = self.family;
        if f == Family::V4 {
            // The sink holds the next hop's address (not its MAC); it has no IPv6 (see `build`).
            sh(&["ip", "-n", sink, "addr", "add", &format!("{}/{}", f.next_hop(v), f.subnet_len()), "dev", &s])?;
        }
        self.kernel_router(v, &i, &o)
    }

    /// VR `v`'s kernel router: its addresses, its routing table and its next hop.
    fn kernel_router(&self, v: usize, i: &str, o: &str) -> Result<(), String> {
        let f = self.family;
        let ip = |args: &[&str]| sh(&[&["ip", f.ip_flag(), "-n", &self.rtr], args].concat());
        ip(&["addr", "add", &f.router_addr(v, Link::Gen), "dev", i])?;
        ip(&["addr", "add", &f.router_addr(v, Link::Sink), "dev", o])?;
        let table = (100 + v).to_string();
        ip(&["rule", "add", "iif", i, "lookup", &table, "pref", &table])?;
        let via = f.next_hop(v).to_string();
        ip(&["route", "add", f.bench_prefix(), "via", &via, "dev", o, "onlink", "table", &table])?;
        ip(&["neigh", "replace", &via, "lladdr", &mac_text(next_hop_mac(v)), "dev", o, "nud", "permanent"])?;
        Ok(())
    }

    /// Turns the kernel router on or off (it must be off while pearld owns the ports).
    pub fn kernel_forwarding(&self, on: bool) -> Result<(), String> {
        let key = match self.family {
            Family::V4 => "net.ipv4.ip_forward",
            Family::V6 => "net.ipv6.conf.all.forwarding",
        };
        self.sysctl(&self.rtr, &format!("{key}={}", u8::from(on)))
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for ns in self.made.iter().rev() {
            // Anything still running in a namespace (a pearld that would not stop) keeps it alive.
            if let Ok(pids) = sh(&["ip", "netns", "pids", ns]) {
                for pid in pids.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                    // SAFETY: kill has no memory effects; the pid was listed as inside our namespace.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            if let Err(e) = sh(&["ip", "netns", "del", ns]) {
                eprintln!("pearl-bench e2e: cleaning up: {e}");
            }
        }
    }
}

/// The sink's interface counters, read from /proc/net/dev as the sink namespace sees it: the file
/// is opened by a thread inside that namespace and keeps showing it, so a read costs no process
/// and no namespace switch.
pub struct SinkCounters {
    file: File,
    text: String,
}

impl SinkCounters {
    pub fn open(netns: &str) -> Result<SinkCounters, String> {
        let path = format!("/run/netns/{netns}");
        let file = in_netns(&path, || File::open("/proc/thread-self/net/dev").map_err(|e| format!("/proc/thread-self/net/dev: {e}")))?;
        Ok(SinkCounters { file, text: String::new() })
    }

    /// Packets received so far on s1..=s{vrs}.
    pub fn rx_packets(&mut self, vrs: usize) -> Result<u64, String> {
        self.rx_packets_on("s", vrs)
    }

    /// Packets received so far on {name}1..={name}{vrs} of the namespace opened.
    pub fn rx_packets_on(&mut self, name: &str, vrs: usize) -> Result<u64, String> {
        self.text.clear();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.file.read_to_string(&mut self.text))
            .map_err(|e| format!("reading the sink's /proc/net/dev: {e}"))?;
        let mut total = 0;
        for v in 1..=vrs {
            let dev = format!("{name}{v}");
            let line = self
                .text
                .lines()
                .find_map(|l| l.trim_start().strip_prefix(dev.as_str()).and_then(|rest| rest.strip_prefix(':')))
                .ok_or_else(|| format!("sink interface {dev} is missing from /proc/net/dev"))?;
            // rx_bytes rx_packets …
            let packets = line.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok());
            total += packets.ok_or_else(|| format!("cannot parse the counters of {dev}: {line:?}"))?;
        }
        Ok(total)
    }
}

/// Runs `f` on a short-lived thread that has entered network namespace file `path`.
pub fn in_netns<T: Send + 'static>(path: &str, f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    let path = path.to_owned();
    std::thread::spawn(move || {
        enter_netns(&path)?;
        f()
    })
    .join()
    .map_err(|_| "a thread inside a namespace panicked".to_string())?
}

/// Moves the calling thread into network namespace file `path`.
pub fn enter_netns(path: &str) -> Result<(), String> {
    let ns = File::open(path).map_err(|e| format!("open {path}: {e}"))?;
    // SAFETY: setns changes only the calling thread's network namespace.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!("setns({path}): {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes inside it; sched_setaffinity
    // with pid 0 affects only the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("pinning to CPU {cpu}: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}
