//! `pearl-bench routed` (root): how fast routed mirrors a VR namespace's kernel routes into the
//! fast path.
//!
//! - latency: `ip -n NS route add` returns → a FIB lookup of that prefix finds the route
//!   (the thread that ran `ip` spins on lookups); and the same from the kernel's
//!   acknowledgement of a route added over our own netlink socket, without a process around
//!   it, which is the mirror's own share;
//! - full table: every IPv4 prefix of the table installed with `ip -n NS -batch` while a reader
//!   thread keeps looking up addresses of the table: the mirror thread's CPU time, the wall time
//!   until the FIB holds every route, and the reader's lookup rate during the install; then a
//!   resync of the full table (a full dump diffed against the FIB), as after lost notifications.
//!
//! Each run uses its own namespace `rtdb<pid>` with one TAP interface, deleted afterwards.

use crate::args::Args;
use crate::netns::{in_netns, sh};
use crate::report::{median, round3, Figure};
use crate::table::{self, BenchAddr, Order};
use pearl_dataplane::port::TapPort;
use pearl_lookup::fib::{FibView, Prefix, BATCH, MISS};
use pearl_lookup::rcu::RcuDomain;
use pearl_routed::{Routed, RoutedInterface, RoutedStats};
use pearl_tables::VrTables;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const OPTIONS: &[&str] = &["table", "latency-runs", "repeat", "gateways"];
const MAC: [u8; 6] = [2, 0, 0, 0, 0xb0, 0];
/// Longest a run may take before it counts as stuck.
const DEADLINE: Duration = Duration::from_secs(300);

pub fn run(argv: &[String]) -> Result<(), String> {
    let args = Args::parse(argv, OPTIONS)?;
    let runs: usize = args.get("latency-runs", 25)?;
    let repeat: usize = args.get("repeat", 3)?;
    let gateways: u32 = args.get("gateways", 8)?;
    if runs == 0 || repeat == 0 || !(1..=200).contains(&gateways) {
        return Err("--latency-runs and --repeat must be positive, --gateways in 1..=200".into());
    }
    let path = args.required("table")?;
    latency(runs)?.print();
    let list = table::load(path)?;
    full_table(&list.v4, repeat, gateways)?.set("table", path).print();
    Ok(())
}

/// A namespace with TAP `t0` (10.0.0.1/24), routed mirroring it into fresh tables.
struct Vr {
    name: String,
    domain: Arc<RcuDomain>,
    tables: Arc<Mutex<VrTables>>,
    routed: Option<Routed>,
    _tap: Option<TapPort>,
}

impl Vr {
    fn new() -> Result<Vr, String> {
        let name = format!("rtdb{}", std::process::id());
        let _ = sh(&["ip", "netns", "del", &name]);
        sh(&["ip", "netns", "add", &name])?;
        let domain = RcuDomain::new();
        let tables = Arc::new(Mutex::new(VrTables::empty(&domain, 1 << 22)));
        let mut vr = Vr { name, domain, tables, routed: None, _tap: None };
        vr._tap = Some(TapPort::open_in_netns(&vr.name, "t0").map_err(|e| e.to_string())?);
        vr.ip(&["link", "set", "t0", "address", "02:00:00:00:b0:00", "addrgenmode", "none"])?;
        vr.ip(&["link", "set", "t0", "up"])?;
        vr.ip(&["addr", "add", "10.0.0.1/24", "dev", "t0"])?;
        let interfaces = vec![RoutedInterface { name: "t0".into(), port: 0, mac: MAC }];
        vr.routed = Some(Routed::start(&vr.name, interfaces, Arc::clone(&vr.tables)).map_err(|e| e.to_string())?);
        Ok(vr)
    }

    fn ip(&self, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["ip", "-n", &self.name];
        all.extend_from_slice(args);
        sh(&all)
    }

    fn stats(&self) -> RoutedStats {
        self.routed.as_ref().expect("started").stats()
    }

    fn view(&self) -> FibView<u32> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner()).fib4().view()
    }
}

impl Drop for Vr {
    fn drop(&mut self) {
        drop(self.routed.take());
        drop(self._tap.take());
        let _ = Command::new("ip").args(["netns", "del", &self.name]).status();
    }
}

/// One route at a time: from `ip route add` returning (and, as an upper bound, from its start)
/// to a FIB lookup finding the route.
fn latency(runs: usize) -> Result<Figure, String> {
    let vr = Vr::new()?;
    let view = vr.view();
    let mut reader = vr.domain.register();
    let (mut after_exit, mut after_start, mut ip_runs) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        let prefix = format!("198.18.{i}.0/24");
        let probe = 0xc612_0001 | (i as u32) << 8;
        let start = Instant::now();
        let status = Command::new("ip").args(["-n", &vr.name, "route", "add", &prefix, "via", "10.0.0.2"]).status();
        let exited = Instant::now();
        if !status.as_ref().is_ok_and(|s| s.success()) {
            return Err(format!("ip -n {} route add {prefix}: {status:?}", vr.name));
        }
        while view.lookup(&reader.read(), probe).is_none() {
            if exited.elapsed() > Duration::from_secs(5) {
                return Err(format!("routed never mirrored {prefix}: {:?}", vr.stats()));
            }
            std::hint::spin_loop();
        }
        let seen = Instant::now();
        after_exit.push((seen - exited).as_secs_f64() * 1e6);
        after_start.push((seen - start).as_secs_f64() * 1e6);
        ip_runs.push((exited - start).as_secs_f64() * 1e6);
        // A quiet spell between changes, as for a single route change.
        std::thread::sleep(Duration::from_millis(20));
    }
    let p90 = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[(xs.len() * 9 / 10).min(xs.len() - 1)]
    };
    let socket = RouteSocket::open(&vr.name)?;
    let (mut after_ack, mut after_send) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let dst = 0xc613_0000 | (i as u32) << 8;
        let sent = Instant::now();
        socket.add(dst, 24, 0x0a00_0002)?;
        let acked = Instant::now();
        while view.lookup(&reader.read(), dst | 1).is_none() {
            if acked.elapsed() > Duration::from_secs(5) {
                return Err(format!("routed never mirrored route {i} added over netlink: {:?}", vr.stats()));
            }
            std::hint::spin_loop();
        }
        let seen = Instant::now();
        after_ack.push((seen - acked).as_secs_f64() * 1e6);
        after_send.push((seen - sent).as_secs_f64() * 1e6);
        std::thread::sleep(Duration::from_millis(20));
    }
    let (exit_med, start_med, ip_med) = (median(after_exit.clone()), median(after_start.clone()), median(ip_runs));
    let (ack_med, send_med) = (median(after_ack.clone()), median(after_send.clone()));
    eprintln!(
        "routed latency over {runs} routes: median {exit_med:.0} µs after ip exits, {start_med:.0} µs after it starts (ip itself {ip_med:.0} µs); \
         over netlink {ack_med:.0} µs after the kernel's ack, {send_med:.0} µs after the request"
    );
    Ok(Figure::new("routed_latency")
        .set("runs", runs)
        .set("after_ack_median_us", round3(ack_med))
        .set("after_ack_p90_us", round3(p90(after_ack)))
        .set("after_request_median_us", round3(send_med))
        .set("after_request_p90_us", round3(p90(after_send)))
        .set("after_exit_median_us", round3(exit_med))
        .set("after_exit_p90_us", round3(p90(after_exit)))
        .set("after_start_median_us", round3(start_med))
        .set("after_start_p90_us", round3(p90(after_start)))
        .set("ip_median_us", round3(ip_med))
        .set("bar_us", 10_000))
}

/// A netlink route socket opened inside a namespace, adding routes as `ip` does.
struct RouteSocket {
    fd: OwnedFd,
}

impl RouteSocket {
    fn open(netns: &str) -> Result<RouteSocket, String> {
        let fd = in_netns(&format!("/run/netns/{netns}"), || {
            // SAFETY: plain socket(2) call; the descriptor is owned right away.
            let raw = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
            if raw < 0 {
                return Err(format!("socket(NETLINK_ROUTE): {}", std::io::Error::last_os_error()));
            }
            // SAFETY: fresh descriptor.
            Ok(unsafe { OwnedFd::from_raw_fd(raw) })
        })?;
        Ok(RouteSocket { fd })
    }

    /// Adds `dst/len via gateway` to the main table and waits for the kernel's acknowledgement.
    fn add(&self, dst: u32, len: u8, gateway: u32) -> Result<(), String> {
        const RTM_NEWROUTE: u16 = 24;
        const FLAGS: u16 = 0x1 | 0x4 | 0x200 | 0x400; // REQUEST | ACK | EXCL | CREATE
        let mut m = Vec::with_capacity(44);
        m.extend_from_slice(&44u32.to_ne_bytes());
        m.extend_from_slice(&RTM_NEWROUTE.to_ne_bytes());
        m.extend_from_slice(&FLAGS.to_ne_bytes());
        m.extend_from_slice(&dst.to_ne_bytes()); // any sequence number will do
        m.extend_from_slice(&0u32.to_ne_bytes());
        // rtmsg: AF_INET, /len, main table, static, universe scope, unicast.
        m.extend_from_slice(&[2, len, 0, 0, 254, 4, 0, 1, 0, 0, 0, 0]);
        for (kind, value) in [(1u16, dst), (5u16, gateway)] {
            m.extend_from_slice(&8u16.to_ne_bytes());
            m.extend_from_slice(&kind.to_ne_bytes());
            m.extend_from_slice(&value.to_be_bytes());
        }
        let fd = self.fd.as_raw_fd();
        // SAFETY: sends the message buffer, which outlives the call.
        if unsafe { libc::send(fd, m.as_ptr().cast(), m.len(), 0) } < 0 {
            return Err(format!("netlink RTM_NEWROUTE: {}", std::io::Error::last_os_error()));
        }
        let mut ack = [0u8; 1024];
        // SAFETY: receives into the stack buffer.
        let n = unsafe { libc::recv(fd, ack.as_mut_ptr().cast(), ack.len(), 0) };
        if n < 20 {
            return Err(format!("netlink ack: {}", std::io::Error::last_os_error()));
        }
        match i32::from_ne_bytes([ack[16], ack[17], ack[18], ack[19]]) {
            0 => Ok(()),
            e => Err(format!("the kernel refused a route: {}", std::io::Error::from_raw_os_error(-e))),
        }
    }
}

struct FullRun {
    /// `ip -batch` from start to exit.
    install_s: f64,
    /// From the start of `ip -batch` until the FIB holds every route.
    mirrored_s: f64,
    /// The mirror thread's CPU time over the same span.
    cpu_s: f64,
    batches: u64,
    resyncs: u64,
    /// One more route with the full table in place: from our request to the FIB finding it,
    /// and how long its batch held the tables' lock.
    single_us: f64,
    single_apply_us: f64,
    /// A resync of the full table: wall and mirror CPU time from the trigger to the diff
    /// applied.
    resync_s: f64,
    resync_cpu_s: f64,
    /// The reader's lookups per second during the install, and after it with the table full
    /// and nothing else running.
    reader_mlps: f64,
    after_mlps: f64,
    rss_mib: f64,
}

fn full_table(prefixes: &[Prefix<u32>], repeat: usize, gateways: u32) -> Result<Figure, String> {
    if prefixes.is_empty() {
        return Err("--table holds no IPv4 prefixes".into());
    }
    let batch = std::env::temp_dir().join(format!("rtdb{}.batch", std::process::id()));
    let mut text = String::with_capacity(prefixes.len() * 40);
    for (i, p) in prefixes.iter().enumerate() {
        // Routes spread over `gateways` next hops, as over a router's BGP peers.
        let gw = 2 + (i as u32 % gateways);
        text.push_str(&format!("route add {}/{} via 10.0.0.{gw}\n", p.addr().text(), p.len()));
    }
    std::fs::write(&batch, text).map_err(|e| format!("{}: {e}", batch.display()))?;
    let mut runs = Vec::new();
    for r in 0..repeat {
        let run = one_full_table(prefixes, &batch);
        let run = match run {
            Ok(run) => run,
            Err(e) => {
                let _ = std::fs::remove_file(&batch);
                return Err(e);
            }
        };
        eprintln!(
            "routed full table run {}: ip -batch {:.2} s, mirrored {:.0} ms later, mirror CPU {:.2} s in {} batches ({} resyncs); reader {:.1} M lookups/s (after: {:.1}); RSS +{:.0} MiB; one more route {:.0} µs (batch {:.0} µs); resync {:.2} s, {:.2} s CPU",
            r + 1, run.install_s, (run.mirrored_s - run.install_s) * 1e3, run.cpu_s, run.batches, run.resyncs, run.reader_mlps, run.after_mlps, run.rss_mib, run.single_us, run.single_apply_us, run.resync_s, run.resync_cpu_s
        );
        runs.push(run);
    }
    let _ = std::fs::remove_file(&batch);
    let m = |f: fn(&FullRun) -> f64| round3(median(runs.iter().map(f).collect()));
    Ok(Figure::new("routed_full_table")
        .set("routes", prefixes.len())
        .set("gateways", gateways)
        .set("repeat", repeat)
        .set("install_s", m(|r| r.install_s))
        .set("mirrored_s", m(|r| r.mirrored_s))
        .set("lag_after_install_ms", m(|r| (r.mirrored_s - r.install_s) * 1e3))
        .set("mirror_cpu_s", m(|r| r.cpu_s))
        .set("cpu_bar_s", 5)
        .set("batches", m(|r| r.batches as f64))
        .set("resyncs", m(|r| r.resyncs as f64))
        .set("reader_mlookups_per_s", m(|r| r.reader_mlps))
        .set("reader_after_mlookups_per_s", m(|r| r.after_mlps))
        .set("rss_mib", m(|r| r.rss_mib))
        .set("single_route_us", m(|r| r.single_us))
        .set("single_route_batch_us", m(|r| r.single_apply_us))
        .set("resync_s", m(|r| r.resync_s))
        .set("resync_cpu_s", m(|r| r.resync_cpu_s)))
}

fn one_full_table(prefixes: &[Prefix<u32>], batch: &std::path::Path) -> Result<FullRun, String> {
    let rss_before = rss_mib();
    let vr = Vr::new()?;
    let before = vr.stats();
    let want = before.routes_v4 + prefixes.len() as u64;
    let mut rng = SmallRng::seed_from_u64(1);
    let addrs = table::addresses(prefixes, 1 << 20, Order::Uniform, &mut rng);
    let (stop, lookups) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let reader = {
        let (view, mut reader, stop, lookups) = (vr.view(), vr.domain.register(), Arc::clone(&stop), Arc::clone(&lookups));
        std::thread::spawn(move || {
            let mut out = [MISS; BATCH];
            let mut hits = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for chunk in addrs.chunks(BATCH) {
                    view.lookup_batch(&reader.read(), chunk, &mut out);
                    hits += out[..chunk.len()].iter().filter(|&&nh| nh != MISS).count() as u64;
                    lookups.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                }
            }
            hits
        })
    };
    let rate = |span: Duration| {
        let n0 = lookups.load(Ordering::Relaxed);
        std::thread::sleep(span);
        (lookups.load(Ordering::Relaxed) - n0) as f64 / span.as_secs_f64() / 1e6
    };
    let start = Instant::now();
    let n_start = lookups.load(Ordering::Relaxed);
    let status = Command::new("ip").args(["-n", &vr.name, "-batch"]).arg(batch).status().map_err(|e| format!("ip -batch: {e}"))?;
    let install_s = start.elapsed().as_secs_f64();
    if !status.success() {
        stop.store(true, Ordering::Relaxed);
        let _ = reader.join();
        return Err(format!("ip -n {} -batch {}: {status}", vr.name, batch.display()));
    }
    let done = loop {
        let s = vr.stats();
        if s.routes_v4 >= want {
            break s;
        }
        if start.elapsed() > DEADLINE {
            stop.store(true, Ordering::Relaxed);
            let _ = reader.join();
            return Err(format!("routed mirrored {} of {want} routes in {DEADLINE:?}: {s:?}", s.routes_v4));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let mirrored_s = start.elapsed().as_secs_f64();
    let reader_mlps = (lookups.load(Ordering::Relaxed) - n_start) as f64 / mirrored_s / 1e6;
    let rss_mib = rss_mib() - rss_before;
    let after_mlps = rate(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let (single_us, single_apply_us) = single_routes(&vr)?;
    let (resync_s, resync_cpu_s) = resync(&vr)?;
    let hits = reader.join().map_err(|_| "the reader thread panicked".to_string())?;
    if hits == 0 {
        return Err("the reader never found a route".into());
    }
    Ok(FullRun {
        install_s,
        mirrored_s,
        cpu_s: (done.cpu_ns - before.cpu_ns) as f64 / 1e9,
        batches: done.batches - before.batches,
        resyncs: done.resyncs - before.resyncs,
        reader_mlps,
        after_mlps,
        rss_mib,
        single_us,
        single_apply_us,
        resync_s,
        resync_cpu_s,
    })
}

/// Medians over a few routes added one at a time to a full table: request → FIB, and the
/// batch's time under the tables' lock.
fn single_routes(vr: &Vr) -> Result<(f64, f64), String> {
    let socket = RouteSocket::open(&vr.name)?;
    let view = vr.view();
    let mut reader = vr.domain.register();
    let (mut latency, mut apply) = (Vec::new(), Vec::new());
    for i in 0..9u32 {
        // 198.19.x.0/24 is in no real table.
        let dst = 0xc613_0000 | i << 8;
        let before = vr.stats().batches;
        let sent = Instant::now();
        socket.add(dst, 24, 0x0a00_0002)?;
        while view.lookup(&reader.read(), dst | 1).is_none() {
            if sent.elapsed() > Duration::from_secs(5) {
                return Err(format!("routed never mirrored a route added to the full table: {:?}", vr.stats()));
            }
            std::hint::spin_loop();
        }
        latency.push(sent.elapsed().as_secs_f64() * 1e6);
        while vr.stats().batches == before {
            std::thread::sleep(Duration::from_micros(100));
        }
        apply.push(vr.stats().last_apply_ns as f64 / 1e3);
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((median(latency), median(apply)))
}

/// Removing an IPv4 address makes routed dump and diff everything (the kernel drops routes
/// through a removed address without notifications): returns the wall and mirror CPU seconds
/// until the diff is in the FIB.
fn resync(vr: &Vr) -> Result<(f64, f64), String> {
    let probe = 0xc000_0201; // 192.0.2.1
    vr.ip(&["addr", "add", "192.0.2.1/32", "dev", "t0"])?;
    let view = vr.view();
    let mut reader = vr.domain.register();
    let deadline = Instant::now() + DEADLINE;
    while view.lookup(&reader.read(), probe).is_none() {
        if Instant::now() > deadline {
            return Err("routed never mirrored 192.0.2.1's local route".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let before = vr.stats();
    let start = Instant::now();
    vr.ip(&["addr", "del", "192.0.2.1/32", "dev", "t0"])?;
    while vr.stats().resyncs == before.resyncs || view.lookup(&reader.read(), probe).is_some() {
        if Instant::now() > deadline {
            return Err(format!("no resync after removing an address: {:?}", vr.stats()));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let wall = start.elapsed().as_secs_f64();
    // The diff's batch is published before its stats: wait for them.
    while vr.stats().batches == before.batches {
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok((wall, (vr.stats().cpu_ns - before.cpu_ns) as f64 / 1e9))
}

/// This process's resident memory, in MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}
