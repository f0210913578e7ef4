//! One VR's mirror: its sockets in the VR's namespace, what it knows of the kernel, and the
//! step the reactor runs when the mirror's socket, hold-down switch or timer wakes it. The step
//! reads every notification there is, resynchronises if it must, and publishes a batch when
//! [`Pacer`] says one is due; [`Runner::wait`] tells the reactor what to wake it for next
//! (while a batch waits its turn, notifications pile up in the socket rather than being woken for).

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
use std::io;
use std::os::fd::{AsRawFd, RawFd};
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
    hold: HoldSwitch,
    shared: Arc<Mutex<RoutedStats>>,
    stats: RoutedStats,
    pacer: Pacer,
    resync_failed: bool,
    /// The calling thread's CPU clock when this mirror's current step began or last published.
    cpu_mark: u64,
}

/// What a runner waits for next.
pub struct Wait {
    /// Its notification socket (not while a batch waits its turn).
    pub monitor: bool,
    /// A time it must be woken at even if nothing arrives.
    pub until: Option<Instant>,
}

impl Runner {
    /// Opens the sockets in the VR's namespace and mirrors the kernel's tables once, on the
    /// calling thread.
    pub fn open(
        netns: &str,
        interfaces: Vec<RoutedInterface>,
        tables: Arc<Mutex<VrTables>>,
        options: &Options,
        hold: HoldSwitch,
        shared: Arc<Mutex<RoutedStats>>,
    ) -> io::Result<Runner> {
        let cpu_mark = thread_cpu_ns();
        let rcvbuf = options.rcvbuf;
        let (monitor, mut dumper) = pearl_vrproc::in_netns(netns, || {
            if std::fs::read_to_string("/proc/sys/net/ipv4/nexthop_compat_mode").is_ok_and(|v| v.trim() == "0") {
                eprintln!("routed[{netns}]: net.ipv4.nexthop_compat_mode is 0: routes using next-hop objects will be refused");
            }
            let groups = RTMGRP_LINK | RTMGRP_NEIGH | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
            // Subscribe before dumping: a change made during the dump then arrives as a
            // notification too, and replaying it changes nothing if the dump already had it.
            let monitor = NlSocket::open(groups, rcvbuf, true).map_err(|e| io::Error::new(e.kind(), format!("monitor socket: {e}")))?;
            let dumper = NlSocket::open(0, 0, false).map_err(|e| io::Error::new(e.kind(), format!("dump socket: {e}")))?;
            Ok((monitor, dumper))
        })
        .map_err(|e| io::Error::new(e.kind(), format!("routed[{netns}]: {e}")))?;
        let current = lock(&tables).next_hops().clone();
        let mut r = Runner {
            netns: netns.to_owned(),
            mirror: Mirror::new(interfaces, &current),
            tables,
            monitor,
            hold,
            shared,
            stats: RoutedStats::default(),
            pacer: Pacer::new(Instant::now()),
            resync_failed: false,
            cpu_mark,
        };
        let mut buf = vec![0; RECV_BUFFER];
        r.dump(&mut dumper, &mut buf).map_err(|e| context(netns, "first dump", e))?;
        // The dump socket is opened again for a resync: kept, it would be one more descriptor
        // per VR for something rare.
        drop(dumper);
        r.drain(&mut buf);
        r.cycle();
        Ok(r)
    }

    pub fn netns(&self) -> &str {
        &self.netns
    }

    pub fn monitor_fd(&self) -> RawFd {
        self.monitor.as_raw_fd()
    }

    pub fn wait(&self) -> Wait {
        let now = Instant::now();
        let due = self.pacer.due();
        let pending = self.mirror.pending();
        let until = if self.resync_failed {
            Some(now + RESYNC_RETRY)
        } else if pending {
            Some(due.max(now))
        } else {
            None
        };
        Wait { monitor: !(pending && now < due), until }
    }

    /// One step: whatever woke the runner, it follows the hold-down switch, reads what the
    /// kernel said, and publishes a batch if one is due. `buf` is the reactor's, for reading.
    pub fn step(&mut self, buf: &mut [u8]) {
        self.cpu_mark = thread_cpu_ns();
        // Before reading: a deletion that arrives with the hold must already be held.
        self.follow_hold();
        self.drain(buf);
        if let Some(why) = self.mirror.state.needs_resync.take() {
            self.resync(why, buf);
        } else if self.resync_failed {
            self.resync("retrying a failed resync", buf);
        }
        if self.mirror.pending() && Instant::now() >= self.pacer.due() {
            self.cycle();
        }
        self.count_cpu();
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
    fn drain(&mut self, buf: &mut [u8]) {
        for _ in 0..DRAIN_CAP {
            match self.monitor.recv(buf) {
                Ok(n) => {
                    for m in messages(&buf[..n]) {
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
    fn dump(&mut self, dumper: &mut NlSocket, buf: &mut [u8]) -> io::Result<()> {
        for attempt in 1..=DUMP_ATTEMPTS {
            self.mirror.state.forget();
            let mut interrupted = false;
            for what in [Dump::Links, Dump::Routes, Dump::Neighbours] {
                let (mirror, stats, netns) = (&mut self.mirror, &mut self.stats, self.netns.as_str());
                let end = dumper.dump(what, buf, |m| handle(mirror, stats, netns, Ok(m), true))?;
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

    fn resync(&mut self, why: &str, buf: &mut [u8]) {
        eprintln!("routed[{}]: resynchronising: {why}", self.netns);
        let dumper = pearl_vrproc::in_netns(&self.netns, || NlSocket::open(0, 0, false));
        match dumper.and_then(|mut d| self.dump(&mut d, buf)) {
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
        self.count_cpu();
        *lock(&self.shared) = self.stats;
    }

    /// Adds the CPU time the calling thread spent on this mirror since the last mark.
    fn count_cpu(&mut self) {
        let now = thread_cpu_ns();
        self.stats.cpu_ns += now.saturating_sub(self.cpu_mark);
        self.cpu_mark = now;
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
