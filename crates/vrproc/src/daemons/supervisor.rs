//! The thread that watches one VR's control-plane daemons: it sleeps in poll(2) on their pidfds, restarts
//! a daemon that died (after a backoff that grows while it keeps dying), tells the listener
//! (see `Daemons::on_event`), and on request stops them all in reverse start order.
//! Daemons taken over from an earlier pearld are watched the same way; once one dies, its
//! successor is an ordinary child.

use super::process::{self, Running};
use super::suite::{self, Suite};
use super::{DaemonEvent, DaemonStatus, Listener};
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
    /// How its last process ended, as wait(2) told it.
    last_exit: Option<String>,
    backoff: Duration,
    /// When to start it again, while it is down.
    due: Option<Instant>,
}

impl Slot {
    pub fn new(name: &str, running: Running) -> Slot {
        Slot {
            name: name.to_string(),
            last_pid: Some(running.pid),
            running: Some(running),
            restarts: 0,
            last_exit: None,
            backoff: FIRST_BACKOFF,
            due: None,
        }
    }

    pub fn status(&self) -> DaemonStatus {
        DaemonStatus {
            name: self.name.clone(),
            pid: self.last_pid,
            running: self.running.is_some(),
            restarts: self.restarts,
            last_exit: self.last_exit.clone(),
        }
    }

    fn reap(&mut self, suite: &dyn Suite, listener: &Listener) {
        let Some(mut r) = self.running.take() else { return };
        let how = r.reap();
        if r.since.elapsed() >= STABLE {
            self.backoff = FIRST_BACKOFF;
        }
        tracing::warn!(vr = %suite.vr(), "{} (pid {}) ended ({how}); restarting in {:?}", self.name, r.pid, self.backoff);
        self.last_exit = Some(how);
        self.schedule();
        tell(listener, &DaemonEvent::Exited { daemon: self.name.clone(), pid: r.pid });
    }

    fn schedule(&mut self) {
        self.due = Some(Instant::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    fn restart(&mut self, suite: &dyn Suite, placement: &Placement, listener: &Listener) {
        self.due = None;
        self.restarts += 1;
        match process::start(suite, &self.name, placement) {
            Ok(r) => {
                let pid = r.pid;
                self.last_pid = Some(pid);
                self.running = Some(r);
                let configured = suite.apply_config(Some(&self.name)).and_then(|()| suite::mark_configured(suite, &self.name, pid));
                if let Err(e) = configured {
                    tracing::warn!(vr = %suite.vr(), "{} restarted without all of its configuration: {e}", self.name);
                }
                tell(listener, &DaemonEvent::Restarted { daemon: self.name.clone(), pid });
            }
            Err(e) => {
                tracing::warn!(vr = %suite.vr(), "restarting {}: {e}; next try in {:?}", self.name, self.backoff);
                self.schedule();
            }
        }
    }
}

fn tell(listener: &Listener, event: &DaemonEvent) {
    if let Some(f) = listener.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        f(event);
    }
}

/// Runs until `stop` is closed (or written to), then stops the daemons.
pub(crate) fn run(
    suite: &dyn Suite,
    mut slots: Vec<Slot>,
    placement: Placement,
    stop: UnixStream,
    status: Arc<Mutex<Vec<DaemonStatus>>>,
    listener: Listener,
) -> io::Result<()> {
    let watched = watch(suite, &mut slots, &placement, &stop, &status, &listener);
    if let Err(e) = &watched {
        tracing::error!(vr = %suite.vr(), "watching its {} daemons failed ({e}); stopping them", suite.kind());
    }
    let stopped = stop_all(&mut slots);
    *status.lock().unwrap_or_else(|p| p.into_inner()) = slots.iter().map(Slot::status).collect();
    let removed = suite.remove();
    watched.and(stopped).and(removed)
}

fn watch(
    suite: &dyn Suite,
    slots: &mut [Slot],
    placement: &Placement,
    stop: &UnixStream,
    status: &Mutex<Vec<DaemonStatus>>,
    listener: &Listener,
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
                slots[i].reap(suite, listener);
            }
        }
        let now = Instant::now();
        // In start order, so that a zebra due at the same time as a client comes up first.
        for s in slots.iter_mut() {
            if s.due.is_some_and(|d| d <= now) {
                s.restart(suite, placement, listener);
            }
        }
    }
}

/// Stops the daemons in reverse start order (FRR's zebra last); returns the first error.
pub(crate) fn stop_all(slots: &mut [Slot]) -> io::Result<()> {
    let mut result = Ok(());
    for s in slots.iter_mut().rev() {
        s.due = None;
        if let Some(r) = s.running.take() {
            if let Err(e) = process::stop(r) {
                result = result.and(Err(io::Error::new(e.kind(), format!("stopping {}: {e}", s.name))));
            }
        }
    }
    result
}
