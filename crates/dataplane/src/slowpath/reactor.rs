//! The netio reactor: one thread serves the slow path of every VR (PEARL's netio_proxy), however
//! many there are. It sleeps in epoll(7) on what can bring work — each channel's exception
//! doorbells (one per worker) and each VR interface's TAP — and wakes for the ones that did,
//! so an idle VR costs nothing and a busy one costs in proportion to its frames. Frames from
//! the VRs' kernels go into one ring per worker, of which the reactor is the single producer.
//!
//! Channels come and go by command (`add`, `remove`) while the reactor runs; a removed
//! channel's TAPs are handed back, to be served by the channel that replaces it.

use super::netio::{Netio, NetioVr, TapRead};
use super::ChannelId;
use super::{Doorbell, FrameProducer};
use crate::port::Port;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Readiness events taken per `epoll_wait`.
const EVENTS: usize = 256;
/// The token of the command doorbell; channel tokens are `slot << 16 | what`.
const COMMAND_TOKEN: u64 = u64::MAX;
/// `what` of a TAP: this bit, then the interface's index in the channel's flat order.
const TAP_BIT: u64 = 0x8000;

enum Command {
    Add(Netio),
    Remove(ChannelId, Sender<Vec<NetioVr>>),
}

/// The handle the control side keeps: commands in, the thread's end out.
pub struct NetioReactor {
    commands: Sender<Command>,
    wake: Arc<Doorbell>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl NetioReactor {
    /// Starts the reactor thread; `inject[w]` carries the VRs' frames to worker `w`.
    pub fn start(inject: Vec<FrameProducer>) -> io::Result<NetioReactor> {
        let epoll = epoll_create()?;
        let wake = Arc::new(Doorbell::new()?);
        epoll_add(&epoll, wake.fd(), COMMAND_TOKEN)?;
        wake.arm();
        let (commands, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let mut state =
            Reactor { epoll, wake: Arc::clone(&wake), commands: rx, inject, slots: Vec::new(), by_id: HashMap::new(), pending: Vec::new() };
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new().name("pearl-netio".into()).spawn(move || state.run(&flag))?;
        Ok(NetioReactor { commands, wake, stop, thread: Some(thread) })
    }

    /// Starts serving `netio`'s channel.
    pub fn add(&self, netio: Netio) {
        let _ = self.commands.send(Command::Add(netio));
        self.wake.ring_if_armed();
    }

    /// Stops serving channel `id`; returns its VRs (with their TAPs) once the reactor let go.
    pub fn remove(&self, id: ChannelId) -> Vec<NetioVr> {
        let (tx, rx) = channel();
        if self.commands.send(Command::Remove(id, tx)).is_err() {
            return Vec::new();
        }
        self.wake.ring_if_armed();
        rx.recv().unwrap_or_default()
    }
}

impl Drop for NetioReactor {
    /// Stops the thread; the channels' TAPs close with it.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake.ring_if_armed();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Slot {
    netio: Netio,
    /// `(vr index, interface index)` by a TAP token's index.
    taps: Vec<(usize, usize)>,
    /// TAPs that failed for good, by the same index.
    broken: Vec<bool>,
}

struct Reactor {
    epoll: OwnedFd,
    wake: Arc<Doorbell>,
    commands: Receiver<Command>,
    inject: Vec<FrameProducer>,
    slots: Vec<Option<Slot>>,
    by_id: HashMap<ChannelId, usize>,
    /// Exception rings `(slot, worker)` left non-empty by their budget: served again before the
    /// reactor sleeps.
    pending: Vec<(usize, usize)>,
}

impl Reactor {
    fn run(&mut self, stop: &AtomicBool) {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        let mut pending = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let timeout = if self.pending.is_empty() { -1 } else { 0 };
            // SAFETY: `events` is a valid buffer of EVENTS entries for the kernel to fill.
            let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), EVENTS as i32, timeout) };
            let mut commands = false;
            std::mem::swap(&mut pending, &mut self.pending);
            for (slot, w) in pending.drain(..) {
                self.serve_ring(slot, w);
            }
            for ev in &events[..n.max(0) as usize] {
                match ev.u64 {
                    COMMAND_TOKEN => commands = true,
                    token => {
                        let (slot, what) = ((token >> 16) as usize, token & 0xffff);
                        if what & TAP_BIT != 0 {
                            self.serve_tap(slot, (what & !TAP_BIT) as usize);
                        } else {
                            self.wake_ring(slot, what as usize);
                        }
                    }
                }
            }
            for p in self.inject.iter_mut() {
                p.flush();
            }
            if commands {
                self.wake.disarm();
                self.wake.arm();
                while let Ok(c) = self.commands.try_recv() {
                    self.apply(c);
                }
            }
        }
    }

    /// A ring's doorbell rang: it is disarmed until the ring is empty again.
    fn wake_ring(&mut self, slot: usize, w: usize) {
        if let Some(s) = self.slots.get(slot).and_then(Option::as_ref) {
            s.netio.ends.exceptions[w].doorbell().disarm();
            self.serve_ring(slot, w);
        }
    }

    /// Drains a ring by one budget; re-arms its doorbell once it is empty, or comes back to it.
    fn serve_ring(&mut self, slot: usize, w: usize) {
        let Some(s) = self.slots.get_mut(slot).and_then(Option::as_mut) else { return };
        s.netio.to_kernel(w);
        let ring = &s.netio.ends.exceptions[w];
        if ring.is_empty() {
            ring.doorbell().arm();
            if ring.is_empty() {
                return;
            }
            ring.doorbell().disarm();
        }
        self.pending.push((slot, w));
    }

    fn serve_tap(&mut self, slot: usize, index: usize) {
        let Some(s) = self.slots.get_mut(slot).and_then(Option::as_mut) else { return };
        let Some(&(v, i)) = s.taps.get(index) else { return };
        if s.broken[index] {
            return;
        }
        let inject = &mut self.inject[s.netio.ends.worker];
        if let TapRead::Broken = s.netio.from_kernel(v, i, inject) {
            s.broken[index] = true;
            if let Some(fd) = s.netio.vrs[v].interfaces[i].tap.rx_fd() {
                epoll_del(&self.epoll, fd);
            }
        }
    }

    fn apply(&mut self, command: Command) {
        match command {
            Command::Add(netio) => {
                let slot = self.slots.iter().position(Option::is_none).unwrap_or_else(|| {
                    self.slots.push(None);
                    self.slots.len() - 1
                });
                let taps: Vec<(usize, usize)> = netio.interfaces().collect();
                let mut broken = vec![false; taps.len()];
                for (w, ring) in netio.ends.exceptions.iter().enumerate() {
                    if let Err(e) = epoll_add(&self.epoll, ring.doorbell().fd(), token(slot, w as u64)) {
                        tracing::warn!("slow path of channel {}: {e}", netio.id);
                    }
                    ring.doorbell().arm();
                    // Frames that came before the doorbell was armed.
                    self.pending.push((slot, w));
                }
                for (index, &(v, i)) in taps.iter().enumerate() {
                    let fd = netio.vrs[v].interfaces[i].tap.rx_fd();
                    if let Err(e) = fd.map_or(Ok(()), |fd| epoll_add(&self.epoll, fd, token(slot, TAP_BIT | index as u64))) {
                        tracing::warn!("slow path of VR {}: {e}; interface not served", netio.vrs[v].vr);
                        broken[index] = true;
                    }
                }
                self.by_id.insert(netio.id, slot);
                self.slots[slot] = Some(Slot { netio, taps, broken });
            }
            Command::Remove(id, reply) => {
                let Some(slot) = self.by_id.remove(&id) else {
                    let _ = reply.send(Vec::new());
                    return;
                };
                let Some(s) = self.slots[slot].take() else { return };
                self.pending.retain(|&(p, _)| p != slot);
                for ring in &s.netio.ends.exceptions {
                    epoll_del(&self.epoll, ring.doorbell().fd());
                    ring.doorbell().disarm();
                }
                // Explicitly: a TAP's descriptor has copies (the holder process keeps one), so
                // closing ours would not take it out of the epoll set.
                for (index, &(v, i)) in s.taps.iter().enumerate() {
                    if let (false, Some(fd)) = (s.broken[index], s.netio.vrs[v].interfaces[i].tap.rx_fd()) {
                        epoll_del(&self.epoll, fd);
                    }
                }
                let _ = reply.send(s.netio.into_vrs());
            }
        }
    }
}

fn token(slot: usize, what: u64) -> u64 {
    (slot as u64) << 16 | what
}

fn epoll_create() -> io::Result<OwnedFd> {
    // SAFETY: plain epoll creation; the descriptor is owned below.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("epoll_create1: {e}")));
    }
    // SAFETY: `fd` is fresh and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn epoll_add(epoll: &OwnedFd, fd: RawFd, token: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
    // SAFETY: `ev` is a valid event for the duration of the call.
    if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("epoll_ctl(ADD, fd {fd}): {e}")));
    }
    Ok(())
}

fn epoll_del(epoll: &OwnedFd, fd: RawFd) {
    // SAFETY: removing a descriptor from our epoll set; a stale one fails harmlessly.
    unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
}
