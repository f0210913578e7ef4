//! The thread that watches one VR's FRR daemons: it sleeps in poll(2) on their pidfds, restarts
//! a daemon that died (after a backoff that grows while it keeps dying), and on request stops
//! them all in reverse start order.

use super::daemon::{self, Running};
use super::layout::Layout;
use super::DaemonStatus;
use crate::cgroup::Placement;
use crate::sys;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A daemon that ran this long before dying is restarted after `FIRST_BACKOFF` again.
const STABLE: Duration = Duration::from_secs(60);

pub(crate) struct Slot {
    pub name: String,
    pub running: Option<Running>,
    pub last_pid: Option<u32>,
    pub restarts: u32,
    backoff: Duration,
    /// When to start it again, while it is down.
    due: Option<Instant>,
}

impl Slot {
    pub fn new(name: &str, running: Running) -> Slot {
        Slot {
            name: name.to_string(),
            last_pid: Some(running.pid()),
            running: Some(running),
            restarts: 0,
            backoff: FIRST_BACKOFF,
            due: None,
        }
    }

    pub fn status(&self) -> DaemonStatus {
        DaemonStatus { name: self.name.clone(), pid: self.last_pid, running: self.running.is_some(), restarts: self.restarts }
    }

    fn reap(&mut self, layout: &Layout) {
        let Some(mut r) = self.running.take() else { return };
        let how = r.child.wait().map_or_else(|e| format!("could not be reaped: {e}"), |s| s.to_string());
        if r.since.elapsed() >= STABLE {
            self.backoff = FIRST_BACKOFF;
        }
        eprintln!(
            "pearld: vr {}: {} (pid {}) ended ({how}); restarting in {:?}",
            layout.vr,
            self.name,
            r.pid(),
            self.backoff
        );
        self.schedule();
    }

    fn schedule(&mut self) {
        self.due = Some(Instant::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    fn restart(&mut self, layout: &Layout, placement: &Placement) {
        self.due = None;
        self.restarts += 1;
        match daemon::start(layout, &self.name, placement) {
            Ok(r) => {
                self.last_pid = Some(r.pid());
                self.running = Some(r);
                if let Err(e) = daemon::apply_config(layout, Some(&self.name)) {
                    eprintln!("pearld: vr {}: {} restarted without all of its configuration: {e}", layout.vr, self.name);
                }
            }
            Err(e) => {
                eprintln!("pearld: vr {}: restarting {}: {e}; next try in {:?}", layout.vr, self.name, self.backoff);
                self.schedule();
            }
        }
    }
}

/// Runs until `stop` is closed (or written to), then stops the daemons.
pub(crate) fn run(
    layout: Layout,
    mut slots: Vec<Slot>,
    placement: Placement,
    stop: UnixStream,
    status: Arc<Mutex<Vec<DaemonStatus>>>,
) -> io::Result<()> {
    let watched = watch(&layout, &mut slots, &placement, &stop, &status);
    if let Err(e) = &watched {
        eprintln!("pearld: vr {}: watching FRR failed ({e}); stopping its daemons", layout.vr);
    }
    let stopped = stop_all(&mut slots);
    *status.lock().unwrap_or_else(|p| p.into_inner()) = slots.iter().map(Slot::status).collect();
    let removed = layout.remove();
    watched.and(stopped).and(removed)
}

fn watch(
    layout: &Layout,
    slots: &mut [Slot],
    placement: &Placement,
    stop: &UnixStream,
    status: &Mutex<Vec<DaemonStatus>>,
) -> io::Result<()> {
    loop {
        *status.lock().unwrap_or_else(|p| p.into_inner()) = slots.iter().map(Slot::status).collect();
        let mut fds = vec![stop.as_raw_fd()];
        let mut owners = Vec::new();
        for (i, s) in slots.iter().enumerate() {
            if let Some(r) = &s.running {
                fds.push(r.pidfd.as_raw_fd());
                owners.push(i);
            }
        }
        let now = Instant::now();
        let timeout = slots.iter().filter_map(|s| s.due).min().map(|d| d.saturating_duration_since(now));
        let ready = sys::poll_readable(&fds, timeout)?;
        if ready[0] {
            return Ok(());
        }
        for (k, &i) in owners.iter().enumerate() {
            if ready[k + 1] {
                slots[i].reap(layout);
            }
        }
        let now = Instant::now();
        // In start order, so that a zebra due at the same time as a client comes up first.
        for s in slots.iter_mut() {
            if s.due.is_some_and(|d| d <= now) {
                s.restart(layout, placement);
            }
        }
    }
}

/// Stops the daemons in reverse start order (zebra last); returns the first error.
pub(crate) fn stop_all(slots: &mut [Slot]) -> io::Result<()> {
    let mut result = Ok(());
    for s in slots.iter_mut().rev() {
        s.due = None;
        if let Some(r) = s.running.take() {
            if let Err(e) = daemon::stop(r) {
                result = result.and(Err(io::Error::new(e.kind(), format!("stopping {}: {e}", s.name))));
            }
        }
    }
    result
}
