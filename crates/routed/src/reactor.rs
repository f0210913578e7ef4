//! One thread follows every VR's kernel: an epoll set over each mirror's notification socket
//! (and a doorbell for commands and hold-down changes), and a queue of the times mirrors asked
//! to be woken at (a batch that waits its turn, a resync to retry). A node with thousands of VRs
//! thus has one routed thread, and an idle VR costs it nothing: it is only woken for what its
//! kernel says.
//!
//! The notification socket is armed one-shot: once it woke its mirror it stays quiet until the
//! mirror wants to read again, so notifications arriving while a batch waits pile up unread.

use crate::netlink::socket::RECV_BUFFER;
use crate::runner::Runner;
use std::collections::BTreeSet;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::Instant;

/// A mirror's place in the reactor, handed back to remove it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotId(usize);

impl SlotId {
    pub(crate) fn index(self) -> usize {
        self.0
    }
}

/// The handle other threads use; the reactor's thread lives as long as the process.
pub struct Reactor {
    commands: mpsc::Sender<Command>,
    doorbell: Arc<OwnedFd>,
}

enum Command {
    Add(Box<Runner>, mpsc::Sender<SlotId>),
    Remove(SlotId, mpsc::Sender<()>),
    /// Step a mirror now (its hold-down switch changed).
    Wake(usize),
}

/// The process's reactor, started on first use.
pub fn reactor() -> io::Result<&'static Reactor> {
    static REACTOR: OnceLock<Result<Reactor, String>> = OnceLock::new();
    REACTOR.get_or_init(|| Reactor::spawn().map_err(|e| format!("routed: starting its thread: {e}"))).as_ref().map_err(|e| io::Error::other(e.clone()))
}

impl Reactor {
    fn spawn() -> io::Result<Reactor> {
        // SAFETY: plain epoll_create1(2) call.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let epoll = unsafe { OwnedFd::from_raw_fd(raw) };
        let doorbell = Arc::new(eventfd()?);
        ctl(&epoll, libc::EPOLL_CTL_ADD, doorbell.as_raw_fd(), libc::EPOLLIN as u32, DOORBELL)?;
        let (commands, inbox) = mpsc::channel();
        let serving = Serving { epoll, doorbell: Arc::clone(&doorbell), inbox, slots: Vec::new(), free: Vec::new(), timers: BTreeSet::new() };
        std::thread::Builder::new().name("pearl-routed".into()).spawn(move || serving.run())?;
        Ok(Reactor { commands, doorbell })
    }

    /// Hands a mirror (past its first sync) to the reactor.
    pub fn add(&self, runner: Runner) -> io::Result<SlotId> {
        let (done, added) = mpsc::channel();
        self.send(Command::Add(Box::new(runner), done))?;
        added.recv().map_err(|_| gone())
    }

    /// Stops following a mirror; returns once the reactor has dropped it.
    pub fn remove(&self, slot: SlotId) {
        let (done, removed) = mpsc::channel();
        if self.send(Command::Remove(slot, done)).is_ok() {
            let _ = removed.recv();
        }
    }

    /// Steps slot `slot`'s mirror soon.
    pub(crate) fn wake(&self, slot: usize) {
        let _ = self.send(Command::Wake(slot));
    }

    fn send(&self, c: Command) -> io::Result<()> {
        self.commands.send(c).map_err(|_| gone())?;
        notify(&self.doorbell);
        Ok(())
    }
}

fn gone() -> io::Error {
    io::Error::other("routed: its thread is gone")
}

const DOORBELL: u64 = u64::MAX;
const EVENTS: usize = 64;

struct Slot {
    runner: Box<Runner>,
    /// Whether its socket is armed in the epoll set.
    armed: bool,
    /// When its timer is set for, if it is.
    timer: Option<Instant>,
    /// A step panicked: the mirror is left out of the epoll set until removed.
    broken: bool,
}

struct Serving {
    epoll: OwnedFd,
    doorbell: Arc<OwnedFd>,
    inbox: mpsc::Receiver<Command>,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    timers: BTreeSet<(Instant, usize)>,
}

impl Serving {
    fn run(mut self) {
        let mut buf = vec![0u8; RECV_BUFFER];
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        let mut woken: Vec<usize> = Vec::new();
        loop {
            let timeout = self.timers.first().map_or(-1, |&(t, _)| {
                t.saturating_duration_since(Instant::now()).as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32
            });
            // SAFETY: `events` has room for EVENTS entries.
            let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), EVENTS as i32, timeout) };
            woken.clear();
            for e in &events[..n.max(0) as usize] {
                let t = e.u64;
                if t == DOORBELL {
                    self.take_commands(&mut woken);
                    continue;
                }
                let slot = t as usize;
                if let Some(Some(s)) = self.slots.get_mut(slot) {
                    s.armed = false;
                    woken.push(slot);
                }
            }
            let now = Instant::now();
            while let Some(&(t, slot)) = self.timers.first() {
                if t > now {
                    break;
                }
                self.timers.pop_first();
                if let Some(Some(s)) = self.slots.get_mut(slot) {
                    s.timer = None;
                    woken.push(slot);
                }
            }
            woken.sort_unstable();
            woken.dedup();
            for &slot in &woken {
                self.step(slot, &mut buf);
            }
        }
    }

    fn take_commands(&mut self, woken: &mut Vec<usize>) {
        let mut n = [0u8; 8];
        // SAFETY: reads at most 8 bytes into `n` from our own non-blocking eventfd.
        unsafe { libc::read(self.doorbell.as_raw_fd(), n.as_mut_ptr().cast(), n.len()) };
        while let Ok(c) = self.inbox.try_recv() {
            match c {
                Command::Add(runner, done) => {
                    let _ = done.send(self.add(runner));
                }
                Command::Remove(SlotId(slot), done) => {
                    if let Some(s) = self.slots.get_mut(slot).and_then(Option::take) {
                        if let Some(t) = s.timer {
                            self.timers.remove(&(t, slot));
                        }
                        // Dropping the runner closes its socket, which leaves the epoll set.
                        self.free.push(slot);
                    }
                    let _ = done.send(());
                }
                Command::Wake(slot) => woken.push(slot),
            }
        }
    }

    fn add(&mut self, runner: Box<Runner>) -> SlotId {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        let oneshot = (libc::EPOLLIN | libc::EPOLLONESHOT) as u32;
        let registered = ctl(&self.epoll, libc::EPOLL_CTL_ADD, runner.monitor_fd(), oneshot, slot as u64);
        let broken = if let Err(e) = registered {
            eprintln!("routed[{}]: cannot follow its notifications (epoll: {e}); the tables keep the first sync", runner.netns());
            true
        } else {
            false
        };
        self.slots[slot] = Some(Slot { runner, armed: true, timer: None, broken });
        self.rearm(slot);
        SlotId(slot)
    }

    fn step(&mut self, slot: usize, buf: &mut [u8]) {
        let Some(Some(s)) = self.slots.get_mut(slot) else { return };
        if s.broken {
            return;
        }
        if catch_unwind(AssertUnwindSafe(|| s.runner.step(buf))).is_err() {
            eprintln!("routed[{}]: a step panicked; this VR's fast path keeps its tables as they are, unmirrored", s.runner.netns());
            s.broken = true;
            let monitor = s.runner.monitor_fd();
            if let Some(t) = s.timer.take() {
                self.timers.remove(&(t, slot));
            }
            self.forget(monitor);
            return;
        }
        self.rearm(slot);
    }

    /// Arms the slot's socket and timer for what its runner waits for next.
    fn rearm(&mut self, slot: usize) {
        let Some(Some(s)) = self.slots.get_mut(slot) else { return };
        if s.broken {
            return;
        }
        let wait = s.runner.wait();
        if wait.monitor && !s.armed {
            let oneshot = (libc::EPOLLIN | libc::EPOLLONESHOT) as u32;
            match ctl(&self.epoll, libc::EPOLL_CTL_MOD, s.runner.monitor_fd(), oneshot, slot as u64) {
                Ok(()) => s.armed = true,
                Err(e) => eprintln!("routed[{}]: re-arming its socket: {e}", s.runner.netns()),
            }
        }
        if s.timer != wait.until {
            if let Some(t) = s.timer {
                self.timers.remove(&(t, slot));
            }
            if let Some(t) = wait.until {
                self.timers.insert((t, slot));
            }
            s.timer = wait.until;
        }
    }

    fn forget(&self, fd: RawFd) {
        // SAFETY: removing a descriptor from our epoll set; a closed or unknown one fails harmlessly.
        unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }
}

fn ctl(epoll: &OwnedFd, op: i32, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
    let mut e = libc::epoll_event { events, u64: token };
    // SAFETY: a valid epoll descriptor and event.
    if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), op, fd, &mut e) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain eventfd(2) call.
    let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if raw < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("eventfd: {e}")));
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

fn notify(fd: &OwnedFd) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: writes 8 bytes to an eventfd; a full counter (EAGAIN) still wakes the reader.
    unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
}
