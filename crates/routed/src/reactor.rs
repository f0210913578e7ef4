//! One thread follows every VR's kernel: one notification socket that hears every VR namespace
//! (the namespaces are told apart by the id pearld's namespace gives each), a doorbell for
//! commands and hold-down changes, and a queue of the times mirrors asked to be woken at (a
//! batch that waits its turn, a resync to retry). A node with thousands of VRs thus has one
//! routed thread and one subscribed socket, and an idle VR costs it nothing: it is only woken
//! for what its kernel says.
//!
//! One socket rather than one per namespace: the kernel hands every notification, in any
//! namespace, to each subscribed route socket on the host in turn, so N sockets made each of
//! N idle VRs' neighbour updates walk N sockets.

use crate::runner::{thread_cpu_ns, Runner};
use pearl_netlink::consts::*;
use pearl_netlink::socket::{NlSocket, MANY, MANY_SLOT, RECV_BUFFER};
use std::collections::{BTreeSet, HashMap};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::{Duration, Instant};

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
    /// Start collecting what namespace `nsid` says, for a mirror that is about to dump it.
    Reserve(i32, mpsc::Sender<SlotId>),
    /// The reserved slot's mirror, past its first sync.
    Fill(SlotId, Box<Runner>, mpsc::Sender<()>),
    Remove(SlotId, mpsc::Sender<()>),
    /// Step a mirror now (its hold-down switch changed).
    Wake(usize),
}

/// The process's reactor, started on first use with a notification socket of `rcvbuf` bytes
/// (the first caller's figure holds for the process).
pub fn reactor_with(rcvbuf: usize) -> io::Result<&'static Reactor> {
    static REACTOR: OnceLock<Result<Reactor, String>> = OnceLock::new();
    REACTOR
        .get_or_init(|| Reactor::spawn(rcvbuf).map_err(|e| format!("routed: starting its thread: {e}")))
        .as_ref()
        .map_err(|e| io::Error::other(e.clone()))
}

/// The reactor, as started (or with the default buffer if nothing started it yet).
pub fn reactor() -> io::Result<&'static Reactor> {
    reactor_with(crate::Options::default().rcvbuf)
}

impl Reactor {
    fn spawn(rcvbuf: usize) -> io::Result<Reactor> {
        // SAFETY: plain epoll_create1(2) call.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let epoll = unsafe { OwnedFd::from_raw_fd(raw) };
        let doorbell = Arc::new(eventfd()?);
        ctl(&epoll, libc::EPOLL_CTL_ADD, doorbell.as_raw_fd(), libc::EPOLLIN as u32, DOORBELL)?;
        let groups = RTMGRP_LINK | RTMGRP_NEIGH | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
        let hub =
            NlSocket::open_all_namespaces(groups, rcvbuf).map_err(|e| io::Error::new(e.kind(), format!("notification socket: {e}")))?;
        ctl(&epoll, libc::EPOLL_CTL_ADD, hub.as_raw_fd(), HUB_EVENTS, HUB)?;
        let (commands, inbox) = mpsc::channel();
        let serving = Serving {
            epoll,
            doorbell: Arc::clone(&doorbell),
            hub,
            inbox,
            slots: Vec::new(),
            free: Vec::new(),
            listeners: HashMap::new(),
            timers: BTreeSet::new(),
            hub_rearm: None,
        };
        std::thread::Builder::new().name("pearl-routed".into()).spawn(move || serving.run())?;
        Ok(Reactor { commands, doorbell })
    }

    /// Has the reactor collect what namespace `nsid` says from now on, for a mirror that will
    /// dump it next and then be handed over with [`Reactor::fill`].
    pub fn reserve(&self, nsid: i32) -> io::Result<SlotId> {
        let (done, reserved) = mpsc::channel();
        self.send(Command::Reserve(nsid, done))?;
        reserved.recv().map_err(|_| gone())
    }

    /// Hands a mirror (past its first sync) to its reserved slot; what its namespace said
    /// meanwhile is replayed into it.
    pub fn fill(&self, slot: SlotId, runner: Runner) -> io::Result<()> {
        let (done, filled) = mpsc::channel();
        self.send(Command::Fill(slot, Box::new(runner), done))?;
        filled.recv().map_err(|_| gone())
    }

    /// Stops following a mirror (or a reservation); returns once the reactor has dropped it.
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
const HUB: u64 = u64::MAX - 1;
const EVENTS: usize = 64;
/// The shared socket is armed one-shot and, once read empty, armed again this much later: a
/// burst (a full table arriving) is then read in large turns, not woken for datagram by
/// datagram, at the cost of at most this much delay for one route change.
const HUB_COALESCE: Duration = Duration::from_millis(1);
const HUB_EVENTS: u32 = (libc::EPOLLIN | libc::EPOLLONESHOT) as u32;
/// Datagrams read in one turn before the mirrors they woke are stepped (a due batch is then
/// applied even while a burst goes on).
const TURN_CAP: usize = 1 << 14;

struct Slot {
    nsid: i32,
    /// `None` while the mirror makes its first sync; what its namespace says meanwhile waits in
    /// `backlog` (and `lost` if some of it was lost).
    runner: Option<Box<Runner>>,
    backlog: Vec<Vec<u8>>,
    lost: bool,
    /// When its timer is set for, if it is.
    timer: Option<Instant>,
    /// A step panicked: the mirror is no longer stepped or fed.
    broken: bool,
}

struct Serving {
    epoll: OwnedFd,
    doorbell: Arc<OwnedFd>,
    hub: NlSocket,
    inbox: mpsc::Receiver<Command>,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// The slots following each namespace id.
    listeners: HashMap<i32, Vec<usize>>,
    timers: BTreeSet<(Instant, usize)>,
    /// When the shared socket, read empty, is armed again.
    hub_rearm: Option<Instant>,
}

impl Serving {
    fn run(mut self) {
        let mut buf = vec![0u8; RECV_BUFFER];
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        let mut woken: Vec<usize> = Vec::new();
        loop {
            let next = self.timers.first().map(|&(t, _)| t).into_iter().chain(self.hub_rearm).min();
            let timeout = next
                .map_or(-1, |t| t.saturating_duration_since(Instant::now()).as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32);
            // SAFETY: `events` has room for EVENTS entries.
            let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), EVENTS as i32, timeout) };
            woken.clear();
            for e in &events[..n.max(0) as usize] {
                match e.u64 {
                    DOORBELL => self.take_commands(&mut woken, &mut buf),
                    HUB => {
                        if self.read_hub(&mut woken, &mut buf) {
                            self.arm_hub();
                        } else {
                            self.hub_rearm = Some(Instant::now() + HUB_COALESCE);
                        }
                    }
                    _ => {}
                }
            }
            let now = Instant::now();
            if self.hub_rearm.is_some_and(|t| t <= now) {
                self.hub_rearm = None;
                self.arm_hub();
            }
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

    fn arm_hub(&self) {
        if let Err(e) = ctl(&self.epoll, libc::EPOLL_CTL_MOD, self.hub.as_raw_fd(), HUB_EVENTS, HUB) {
            tracing::warn!("re-arming the notification socket: {e}");
        }
    }

    /// Reads what the namespaces said (up to [`TURN_CAP`] datagrams), hands each datagram to
    /// the mirrors following its namespace, and charges them the turn's CPU time by datagrams.
    /// Returns whether more may be waiting (the turn ended at its cap).
    fn read_hub(&mut self, woken: &mut Vec<usize>, buf: &mut [u8]) -> bool {
        let cpu_start = thread_cpu_ns();
        let first = woken.len();
        let mut more = true;
        let mut got = Vec::with_capacity(MANY);
        let mut read = 0;
        while read < TURN_CAP {
            match self.hub.recv_tagged_many(buf, &mut got) {
                Ok(()) => {
                    read += got.len().max(1);
                    for (i, &(n, nsid, truncated)) in got.iter().enumerate() {
                        // The reactor's own namespace: no VR's.
                        let Some(nsid) = nsid else { continue };
                        let Some(followers) = self.listeners.get(&nsid) else { continue };
                        let datagram = &buf[i * MANY_SLOT..i * MANY_SLOT + n];
                        for &slot in followers {
                            let Some(Some(s)) = self.slots.get_mut(slot) else { continue };
                            match &mut s.runner {
                                // Cut short: what it said is unknown, as if lost.
                                Some(r) if truncated => r.lost(),
                                None if truncated => s.lost = true,
                                Some(r) if !s.broken => {
                                    if catch_unwind(AssertUnwindSafe(|| r.take(datagram))).is_err() {
                                        tracing::error!(netns = %r.netns(), "reading a notification panicked; this VR's fast path keeps its tables as they are, unmirrored");
                                        s.broken = true;
                                        continue;
                                    }
                                }
                                Some(_) => continue,
                                None => s.backlog.push(datagram.to_vec()),
                            }
                            woken.push(slot);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    more = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    // Whose notifications were lost is unknown: every mirror dumps again.
                    for (slot, s) in self.slots.iter_mut().enumerate() {
                        let Some(s) = s else { continue };
                        match &mut s.runner {
                            Some(r) => r.lost(),
                            None => s.lost = true,
                        }
                        woken.push(slot);
                    }
                }
                Err(e) => {
                    tracing::warn!("reading notifications: {e}");
                    more = false;
                    break;
                }
            }
        }
        let fed = &mut woken[first..];
        if fed.is_empty() {
            return more;
        }
        fed.sort_unstable();
        let each = thread_cpu_ns().saturating_sub(cpu_start) / fed.len() as u64;
        for run in fed.chunk_by(|a, b| a == b) {
            if let Some(Some(Slot { runner: Some(r), .. })) = self.slots.get_mut(run[0]) {
                r.charge(each * run.len() as u64);
            }
        }
        more
    }

    fn take_commands(&mut self, woken: &mut Vec<usize>, buf: &mut [u8]) {
        let mut n = [0u8; 8];
        // SAFETY: reads at most 8 bytes into `n` from our own non-blocking eventfd.
        unsafe { libc::read(self.doorbell.as_raw_fd(), n.as_mut_ptr().cast(), n.len()) };
        while let Ok(c) = self.inbox.try_recv() {
            match c {
                Command::Reserve(nsid, done) => {
                    // What is queued was said before the mirror's dump, which will see its
                    // outcome; read now, it also cannot be mistaken for the new namespace's
                    // if a namespace that had this id before is gone.
                    // Read even while the socket waits to be armed again: reading needs no event.
                    self.read_hub(woken, buf);
                    let _ = done.send(self.reserve(nsid));
                }
                Command::Fill(SlotId(slot), runner, done) => {
                    self.fill(slot, runner);
                    woken.push(slot);
                    let _ = done.send(());
                }
                Command::Remove(SlotId(slot), done) => {
                    self.remove(slot);
                    let _ = done.send(());
                }
                Command::Wake(slot) => woken.push(slot),
            }
        }
    }

    fn reserve(&mut self, nsid: i32) -> SlotId {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        self.slots[slot] = Some(Slot { nsid, runner: None, backlog: Vec::new(), lost: false, timer: None, broken: false });
        self.listeners.entry(nsid).or_default().push(slot);
        SlotId(slot)
    }

    fn fill(&mut self, slot: usize, mut runner: Box<Runner>) {
        let Some(Some(s)) = self.slots.get_mut(slot) else { return };
        for datagram in s.backlog.drain(..) {
            runner.take(&datagram);
        }
        s.backlog = Vec::new();
        if std::mem::take(&mut s.lost) {
            runner.lost();
        }
        s.runner = Some(runner);
    }

    fn remove(&mut self, slot: usize) {
        let Some(s) = self.slots.get_mut(slot).and_then(Option::take) else { return };
        if let Some(t) = s.timer {
            self.timers.remove(&(t, slot));
        }
        if let Some(followers) = self.listeners.get_mut(&s.nsid) {
            followers.retain(|&f| f != slot);
            if followers.is_empty() {
                self.listeners.remove(&s.nsid);
            }
        }
        self.free.push(slot);
    }

    fn step(&mut self, slot: usize, buf: &mut [u8]) {
        let Some(Some(s)) = self.slots.get_mut(slot) else { return };
        let Some(runner) = s.runner.as_mut().filter(|_| !s.broken) else { return };
        if catch_unwind(AssertUnwindSafe(|| runner.step(buf))).is_err() {
            tracing::error!(netns = %runner.netns(), "a step panicked; this VR's fast path keeps its tables as they are, unmirrored");
            s.broken = true;
            if let Some(t) = s.timer.take() {
                self.timers.remove(&(t, slot));
            }
            return;
        }
        let until = runner.wait();
        if s.timer != until {
            if let Some(t) = s.timer {
                self.timers.remove(&(t, slot));
            }
            if let Some(t) = until {
                self.timers.insert((t, slot));
            }
            s.timer = until;
        }
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
