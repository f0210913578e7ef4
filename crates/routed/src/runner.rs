//! One VR's mirror: what it knows of the kernel, what the reactor hands it of the VR
//! namespace's notifications ([`Runner::take`]), and the step the reactor runs after that, or
//! when the mirror's hold-down switch or timer wakes it. The step resynchronises if it must and
//! publishes a batch when [`Pacer`] says one is due; [`Runner::wait`] tells the reactor when to
//! wake it next (notifications arriving while a batch waits its turn join that batch).

use crate::hold::HoldSwitch;
use crate::mirror::Mirror;
use crate::pace::Pacer;
use crate::stats::RoutedStats;
use crate::RoutedInterface;
use pearl_netlink::message::{messages, Message, ParseError};
use pearl_netlink::request::Dump;
use pearl_netlink::socket::{NlSocket, RECV_BUFFER};
use pearl_tables::VrTables;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Dump attempts when the kernel keeps reporting interrupted dumps.
const DUMP_ATTEMPTS: usize = 5;
const RESYNC_RETRY: Duration = Duration::from_millis(100);

pub struct Runner {
    netns: String,
    mirror: Mirror,
    tables: Arc<Mutex<VrTables>>,
    hold: HoldSwitch,
    shared: Arc<Mutex<RoutedStats>>,
    stats: RoutedStats,
    pacer: Pacer,
    resync_failed: bool,
    /// The calling thread's CPU clock when this mirror's current step began or last published.
    cpu_mark: u64,
}

impl Runner {
    /// Mirrors the kernel's tables once, on the calling thread. The reactor must already be
    /// collecting the namespace's notifications for it (a change made during the dump then
    /// arrives as a notification too, and replaying it changes nothing if the dump had it).
    pub fn open(
        netns: &str,
        interfaces: Vec<RoutedInterface>,
        tables: Arc<Mutex<VrTables>>,
        hold: HoldSwitch,
        shared: Arc<Mutex<RoutedStats>>,
    ) -> io::Result<Runner> {
        let cpu_mark = thread_cpu_ns();
        let mut dumper = pearl_vrproc::in_netns(netns, || {
            if std::fs::read_to_string("/proc/sys/net/ipv4/nexthop_compat_mode").is_ok_and(|v| v.trim() == "0") {
                tracing::warn!(netns = %netns, "net.ipv4.nexthop_compat_mode is 0: routes using next-hop objects will be refused");
            }
            NlSocket::open(0, 0, false).map_err(|e| io::Error::new(e.kind(), format!("dump socket: {e}")))
        })
        .map_err(|e| io::Error::new(e.kind(), format!("routed[{netns}]: {e}")))?;
        let current = lock(&tables).next_hops().clone();
        let mut r = Runner {
            netns: netns.to_owned(),
            mirror: Mirror::new(interfaces, &current),
            tables,
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
        r.cycle();
        Ok(r)
    }

    pub fn netns(&self) -> &str {
        &self.netns
    }

    /// When the reactor must wake the runner even if nothing arrives: a batch waiting its turn,
    /// a failed resync to retry.
    pub fn wait(&self) -> Option<Instant> {
        let now = Instant::now();
        if self.resync_failed {
            Some(now + RESYNC_RETRY)
        } else if self.mirror.pending() {
            Some(self.pacer.due().max(now))
        } else {
            None
        }
    }

    /// Takes one datagram of the namespace's notifications into the kernel state.
    pub fn take(&mut self, datagram: &[u8]) {
        // First: a deletion that arrives with the hold must already be held.
        self.follow_hold();
        for m in messages(datagram) {
            handle(&mut self.mirror, &mut self.stats, &self.netns, m, false);
        }
    }

    /// The kernel dropped notifications (`ENOBUFS`): only a full dump can tell what they said.
    pub fn lost(&mut self) {
        self.mirror.state.needs_resync.get_or_insert("the kernel dropped notifications (ENOBUFS)");
    }

    /// Adds CPU time the reactor spent on this mirror's notifications while reading them.
    pub fn charge(&mut self, cpu_ns: u64) {
        self.stats.cpu_ns += cpu_ns;
    }

    /// One step: whatever woke the runner, it follows the hold-down switch, resynchronises if
    /// it must, and publishes a batch if one is due. `buf` is the reactor's, for dumping.
    pub fn step(&mut self, buf: &mut [u8]) {
        self.cpu_mark = thread_cpu_ns();
        self.follow_hold();
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
        tracing::info!(netns = %self.netns, "{what}");
        self.publish_stats();
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
                tracing::warn!(netns = %self.netns, "the kernel's tables kept changing during {DUMP_ATTEMPTS} dumps; using the last");
            }
        }
        self.mirror.refresh_all();
        Ok(())
    }

    fn resync(&mut self, why: &str, buf: &mut [u8]) {
        tracing::info!(netns = %self.netns, "resynchronising: {why}");
        let dumper = pearl_vrproc::in_netns(&self.netns, || NlSocket::open(0, 0, false));
        match dumper.and_then(|mut d| self.dump(&mut d, buf)) {
            Ok(()) => {
                self.resync_failed = false;
                self.stats.resyncs += 1;
            }
            Err(e) => {
                tracing::warn!(netns = %self.netns, "resync failed, retrying: {e}");
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
            tracing::info!(netns = %self.netns, "{line}");
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
            tracing::warn!(netns = %netns, "skipped a malformed netlink message: {e}");
        }
    }
}

/// A lock that a panicked holder did not leave unusable: the tables stay consistent because
/// every change to them is a whole published batch.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn thread_cpu_ns() -> u64 {
    // SAFETY: timespec is plain data, filled by the call.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: valid clock id and pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn context(netns: &str, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("routed[{netns}]: {what}: {e}"))
}
