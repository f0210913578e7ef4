//! The mirror's thread: it lives in the VR's namespace, follows the kernel's notifications and
//! publishes batches at a pace that keeps single changes fast and bursts cheap.
//!
//! When a batch is due is [`Pacer`]'s rule; while one waits, notifications pile up in the
//! socket rather than being woken for.

use crate::hold::HoldSwitch;
use crate::mirror::Mirror;
use crate::netlink::consts::*;
use crate::netlink::message::{messages, Message, ParseError};
use crate::netlink::request::Dump;
use crate::netlink::socket::{NlSocket, RECV_BUFFER};
use crate::pace::Pacer;
use crate::stats::RoutedStats;
use crate::{Options, RoutedInterface};
use pearl_dataplane::vr::VrTables;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Notifications read before a due batch is applied anyway.
const DRAIN_CAP: usize = 1 << 17;
/// Dump attempts when the kernel keeps reporting interrupted dumps.
const DUMP_ATTEMPTS: usize = 5;
const RESYNC_RETRY: Duration = Duration::from_millis(100);

pub struct Runner {
    netns: String,
    mirror: Mirror,
    tables: Arc<Mutex<VrTables>>,
    monitor: NlSocket,
    dumper: NlSocket,
    buf: Vec<u8>,
    stop: Arc<OwnedFd>,
    hold: HoldSwitch,
    shared: Arc<Mutex<RoutedStats>>,
    stats: RoutedStats,
    pacer: Pacer,
    resync_failed: bool,
}

impl Runner {
    /// Enters the namespace (this thread only, for good), opens the sockets and mirrors the
    /// kernel's tables once.
    pub fn open(
        netns: &str,
        interfaces: Vec<RoutedInterface>,
        tables: Arc<Mutex<VrTables>>,
        options: &Options,
        stop: Arc<OwnedFd>,
        hold: HoldSwitch,
        shared: Arc<Mutex<RoutedStats>>,
    ) -> io::Result<Runner> {
        enter_netns(netns)?;
        if std::fs::read_to_string("/proc/sys/net/ipv4/nexthop_compat_mode").is_ok_and(|v| v.trim() == "0") {
            eprintln!("routed[{netns}]: net.ipv4.nexthop_compat_mode is 0: routes using next-hop objects will be refused");
        }
        let groups = RTMGRP_LINK | RTMGRP_NEIGH | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
        // Subscribe before dumping: a change made during the dump then arrives as a
        // notification too, and replaying it changes nothing if the dump already had it.
        let monitor = NlSocket::open(groups, options.rcvbuf, true).map_err(|e| context(netns, "monitor socket", e))?;
        let dumper = NlSocket::open(0, 0, false).map_err(|e| context(netns, "dump socket", e))?;
        let current = lock(&tables).next_hops().clone();
        let mut r = Runner {
            netns: netns.to_owned(),
            mirror: Mirror::new(interfaces, &current),
            tables,
            monitor,
            dumper,
            buf: vec![0; RECV_BUFFER],
            stop,
            hold,
            shared,
            stats: RoutedStats::default(),
            pacer: Pacer::new(Instant::now()),
            resync_failed: false,
        };
        r.dump().map_err(|e| context(netns, "first dump", e))?;
        r.drain();
        r.cycle();
        Ok(r)
    }

    pub fn run(mut self) {
        loop {
            let now = Instant::now();
            let due = self.pacer.due();
            let pending = self.mirror.pending();
            let waiting = pending && now < due;
            let timeout = if self.resync_failed {
                Some(RESYNC_RETRY)
            } else if waiting {
                Some(due - now)
            } else if pending {
                Some(Duration::ZERO)
            } else {
                None
            };
            // While a batch waits, notifications are left to pile up rather than woken for.
            if poll(&self.stop, self.hold.wake_fd(), (!waiting).then_some(&self.monitor), timeout) {
                return;
            }
            // Before reading: a deletion that arrives with the hold must already be held.
            self.follow_hold();
            self.drain();
            if let Some(why) = self.mirror.state.needs_resync.take() {
                self.resync(why);
            } else if self.resync_failed {
                self.resync("retrying a failed resync");
            }
            if self.mirror.pending() && Instant::now() >= due {
                self.cycle();
            }
        }
    }

    fn follow_hold(&mut self) {
        let on = self.hold.wanted();
        if on == self.mirror.held() {
            return;
        }
        self.mirror.set_hold(on);
        let what = if on {
            "holding the fast path on its routes: the kernel's removals wait for the release"
        } else {
            "released: the fast path follows the kernel again"
        };
        eprintln!("routed[{}]: {what}", self.netns);
        self.publish_stats();
    }

    /// Reads every notification there is (up to [`DRAIN_CAP`]) into the kernel state.
    fn drain(&mut self) {
        for _ in 0..DRAIN_CAP {
            match self.monitor.recv(&mut self.buf) {
                Ok(n) => {
                    for m in messages(&self.buf[..n]) {
                        handle(&mut self.mirror, &mut self.stats, &self.netns, m, false);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.mirror.state.needs_resync.get_or_insert("the kernel dropped notifications (ENOBUFS)");
                }
                Err(e) => {
                    eprintln!("routed[{}]: reading notifications: {e}", self.netns);
                    return;
                }
            }
        }
    }

    /// Dumps links, routes and neighbours into a forgotten state.
    fn dump(&mut self) -> io::Result<()> {
        for attempt in 1..=DUMP_ATTEMPTS {
            self.mirror.state.forget();
            let mut interrupted = false;
            for what in [Dump::Links, Dump::Routes, Dump::Neighbours] {
                let (mirror, stats, netns) = (&mut self.mirror, &mut self.stats, self.netns.as_str());
                let end = self.dumper.dump(what, &mut self.buf, |m| handle(mirror, stats, netns, Ok(m), true))?;
                interrupted |= end.interrupted;
            }
            if !interrupted {
                break;
            }
            if attempt == DUMP_ATTEMPTS {
                eprintln!("routed[{}]: the kernel's tables kept changing during {DUMP_ATTEMPTS} dumps; using the last", self.netns);
            }
        }
        self.mirror.refresh_all();
        Ok(())
    }

    fn resync(&mut self, why: &str) {
        eprintln!("routed[{}]: resynchronising: {why}", self.netns);
        match self.dump() {
            Ok(()) => {
                self.resync_failed = false;
                self.stats.resyncs += 1;
            }
            Err(e) => {
                eprintln!("routed[{}]: resync failed, retrying: {e}", self.netns);
                self.resync_failed = true;
            }
        }
        self.publish_stats();
    }

    /// Computes and publishes one batch.
    fn cycle(&mut self) {
        let start = Instant::now();
        let limit = lock(&self.tables).fib_limit;
        let batch = self.mirror.prepare(limit);
        if batch.updates() > 0 || batch.next_hops.is_some() || batch.replace_all {
            self.stats.last_batch_updates = batch.updates() as u64;
            let applying = Instant::now();
            self.mirror.commit(&mut lock(&self.tables), batch);
            self.stats.last_apply_ns = applying.elapsed().as_nanos() as u64;
            self.stats.batches += 1;
        }
        for line in self.mirror.take_log() {
            eprintln!("routed[{}]: {line}", self.netns);
        }
        self.pacer.spent(start, start.elapsed());
        self.publish_stats();
    }

    fn publish_stats(&mut self) {
        let c = self.mirror.counts();
        let s = &mut self.stats;
        s.routes_v4 = c.installed[0] as u64;
        s.routes_v6 = c.installed[1] as u64;
        s.kernel_routes_v4 = self.mirror.state.v4.kernel_routes as u64;
        s.kernel_routes_v6 = self.mirror.state.v6.kernel_routes as u64;
        s.neighbors = self.mirror.state.world.neighbour_count() as u64;
        s.next_hops = self.mirror.next_hops_live() as u64;
        s.refused = c.refused as u64;
        s.over_quota = c.over_quota as u64;
        s.fib_errors = c.fib_errors;
        s.held = self.mirror.held();
        s.deferred_removals = c.deferred as u64;
        s.cpu_ns = thread_cpu_ns();
        *lock(&self.shared) = *s;
    }
}

fn handle(mirror: &mut Mirror, stats: &mut RoutedStats, netns: &str, m: Result<Message<'_>, ParseError>, dumping: bool) {
    stats.events += 1;
    if let Err(e) = m.and_then(|m| mirror.state.handle(&m, dumping)) {
        stats.malformed += 1;
        if stats.malformed <= 16 {
            eprintln!("routed[{netns}]: skipped a malformed netlink message: {e}");
        }
    }
}

/// A lock that a panicked holder did not leave unusable: the tables stay consistent because
/// every change to them is a whole published batch.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn enter_netns(netns: &str) -> io::Result<()> {
    let path = format!("/run/netns/{netns}");
    let ns = File::open(&path).map_err(|e| io::Error::new(e.kind(), format!("open {path}: {e}")))?;
    // SAFETY: setns changes only this thread's network namespace; this thread is routed's own.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("setns({path}): {e}")));
    }
    Ok(())
}

/// Waits for `stop`, `wake` or `monitor` to become readable or `timeout` to pass; true if
/// stopped.
fn poll(stop: &OwnedFd, wake: &OwnedFd, monitor: Option<&NlSocket>, timeout: Option<Duration>) -> bool {
    let mut fds = [stop.as_raw_fd(), wake.as_raw_fd(), monitor.map_or(-1, |m| m.as_raw_fd())]
        .map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
    let ms = timeout.map_or(-1, |t| t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32);
    // SAFETY: three valid pollfd entries (a negative fd is ignored by poll).
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    fds[0].revents & libc::POLLIN != 0
}

fn thread_cpu_ns() -> u64 {
    // SAFETY: timespec is plain data, filled by the call.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: valid clock id and pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn context(netns: &str, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("routed[{netns}]: {what}: {e}"))
}
