//! A worker thread: polls its ports, runs each received batch through the pipeline, and drains
//! its output schedulers into the ports. Poll mode while traffic flows; when a whole round finds
//! nothing it waits in `poll(2)` for a little while instead of spinning.

mod coalesce;

use crate::capture::{CapturePoint, TapCommand, Taps};
use crate::counters::{PortCounters, WorkerCounters, STALL_NS};
use crate::impair::{ImpairedOutput, Impairments};
use crate::output::{QueueCounters, Schedulers};
use crate::packet::{Packet, PacketPool};
use crate::pipeline::Pipeline;
use crate::plan::{carry_queue_totals, Retired, WorkerPlan};
use crate::port::link::{PortLink, Reopen};
use crate::port::steering::Insn;
use crate::port::tx_offload::{Transmitted, TxOffload};
use crate::port::{Offloads, Port};
use crate::slowpath::{Doorbell, FrameConsumer};
use coalesce::RxCoalescer;
use pearl_lookup::rcu::RcuReader;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Instant;

use crate::batch::{RX_BATCH, TX_BATCH};
/// Frames taken from the slow path per round: one ring carries every VR's kernel's frames.
const INJECT_BATCH: usize = 4 * TX_BATCH;
/// How long an idle worker sleeps in poll(2) when a port of its cannot wake it (a memory or
/// pcap port has no descriptor to poll).
const IDLE_WAIT_MS: i32 = 1;
/// How long an idle worker sleeps when its ports, the slow path and the control side all wake
/// it: only a safety net, so that an idle node costs no CPU.
const IDLE_SLEEP_MS: i32 = 1000;
/// Idle rounds before the worker sleeps (keeps latency low under light load).
const SPIN_ROUNDS: u32 = 64;
/// How often a busy worker copies its schedulers' queue statistics to the readers' mirror (an
/// idle one, every round): often enough for live counters. A copy costs a miss per queue that
/// changed; by time rather than rounds, each of thousands of VRs' queues changes many times
/// between copies, not about once.
const MIRROR_NS: u64 = 10_000_000;
/// How often the ports' drivers are asked what they lost (a syscall for a kernel ring).
const DRIVER_COUNT_NS: u64 = 100_000_000;

/// The shortest slice the kernel grants a normal task.
const WORKER_SLICE_NS: u64 = 100_000;

pub struct Worker {
    pub ports: Vec<Box<dyn Port>>,
    pub pipeline: Pipeline,
    pub schedulers: Schedulers,
    pub pool: PacketPool,
    pub reader: RcuReader,
    pub counters: Arc<WorkerCounters>,
    pub queues: Arc<QueueCounters>,
    /// Frames from the slow path: the VRs' kernels' frames this worker sends.
    pub inject: FrameConsumer,
    /// Rung by the control side after it sent a plan or a capture command.
    pub wake: Arc<Doorbell>,
    /// New plans from the control side, taken between batches.
    pub plans: Receiver<WorkerPlan>,
    /// The generation of the plan in force, for the control side to wait on.
    pub applied: Arc<AtomicU64>,
    /// Where what a plan replaced goes to be dropped by the control side.
    pub retire: Sender<Retired>,
    /// Schedulers of earlier plans that still hold packets: sent out first, then dropped.
    pub draining: Vec<Schedulers>,
    /// Packet captures starting and stopping.
    pub taps: Receiver<TapCommand>,
    /// The emulated links of impaired VR interfaces, holding packets until they are due.
    pub impairments: Impairments,
    /// This worker's index among the workers.
    pub index: usize,
    /// `[port]`: the Linux interface a port was opened on, if it has one.
    pub links: Vec<Option<PortLink>>,
    /// Opens a port again once its interface is back; `None`: a port that goes stays gone.
    pub reopen: Option<Reopen>,
    /// `[port]`: the steering program of the current plan.
    pub steering: Vec<Option<Arc<[Insn]>>>,
}

impl Worker {
    pub fn run(mut self, stop: Arc<AtomicBool>) {
        ask_for_short_slices();
        // Nothing is received before the first plan: without VRs every frame would be dropped
        // as unclaimed (a pcap port would lose its file's first frames).
        loop {
            match self.plans.recv_timeout(std::time::Duration::from_millis(100)) {
                Ok(plan) => {
                    self.apply(plan);
                    break;
                }
                Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::Relaxed) => continue,
                Err(_) => return,
            }
        }
        let epoch = Instant::now();
        let mut rx = Vec::with_capacity(RX_BATCH);
        let mut tx = Vec::with_capacity(TX_BATCH);
        let mut idle_rounds = 0u32;
        let mut mirrored_ns = 0u64;
        let mut driver_counted_ns = 0u64;
        let mut fds = Vec::new();
        let mut plan_changed = true;
        let coalesce = !self.ports.is_empty() && self.ports.iter().all(|p| p.trickles());
        if coalesce {
            // The pause is worth it only if the kernel does not stretch it by its default
            // 50 µs timer slack.
            // SAFETY: prctl on the calling thread with a plain integer argument.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        }
        let mut coalescer = coalesce.then(RxCoalescer::default);
        let mut caps: Vec<Offloads> = self.ports.iter().map(|p| p.offloads()).collect();
        self.pipeline.set_port_offloads(&caps);
        let mut tx_offload = TxOffload::default();
        let idle_wait = if self.ports.iter().all(|p| p.rx_fd().is_some() || p.fed_by_its_worker()) { IDLE_SLEEP_MS } else { IDLE_WAIT_MS };
        // The previous round's start, unless the worker paused by choice since.
        let mut previous_round = None;
        while !stop.load(Ordering::Relaxed) {
            plan_changed |= self.take_commands();
            if plan_changed {
                fds = self.poll_fds();
                plan_changed = false;
            }
            let mut received = 0;
            let mut drained = true;
            let round_start = epoch.elapsed().as_nanos() as u64;
            if let Some(previous) = previous_round.replace(round_start) {
                self.note_gap(round_start - previous);
            }
            {
                let guard = self.reader.read();
                let mut out = ImpairedOutput {
                    schedulers: &mut self.schedulers,
                    impairments: &mut self.impairments,
                    counters: &self.counters,
                    now: round_start,
                };
                // Each batch is charged from the previous one's end: its receive call with it.
                let mut batch_start = round_start;
                for (i, port) in self.ports.iter_mut().enumerate() {
                    if self.links[i].as_ref().is_some_and(PortLink::is_gone) {
                        continue;
                    }
                    // A port that fails to receive is counted as receiving nothing this round;
                    // the error repeats visibly in its counters rather than stopping the worker.
                    let n = port.rx_batch(&mut self.pool, &mut rx, RX_BATCH).unwrap_or_else(|_| {
                        self.counters.ports[i].rx_errors.add(1);
                        0
                    });
                    drained &= n < RX_BATCH;
                    if n > 0 {
                        received += n;
                        self.pipeline.run(&guard, i as u16, &mut rx, &mut self.pool, &mut out);
                        let end = epoch.elapsed().as_nanos() as u64;
                        self.pipeline.end_batch(end - batch_start);
                        batch_start = end;
                    }
                }
            }
            received += self.take_injected(round_start);
            if !self.pipeline.taps.is_empty() {
                self.pipeline.taps.flush();
            }
            let now = epoch.elapsed().as_nanos() as u64;
            if !self.impairments.is_idle() {
                self.impairments.release(now, &mut self.schedulers, &mut self.pool, &self.counters);
            }
            let mut sent = self.send_draining(now, &mut tx, &caps, &mut tx_offload);
            for (i, port) in self.ports.iter_mut().enumerate() {
                let sched = &mut self.schedulers.ports[i];
                let gone = self.links[i].as_ref().is_some_and(PortLink::is_gone);
                while !sched.is_empty() {
                    if sched.dequeue_batch(now, &mut tx, TX_BATCH) == 0 {
                        break; // rate-limited: tokens come back on a later round
                    }
                    if gone {
                        if !self.pipeline.taps.is_empty() {
                            note_gone(&mut self.pipeline.taps, i as u16, &tx);
                        }
                        self.counters.ports[i].tx_errors.add(tx.len() as u64);
                        tx.drain(..).for_each(|p| self.pool.give(p));
                        continue;
                    }
                    let t = if self.pipeline.taps.is_empty() {
                        tx_offload.transmit(port.as_mut(), caps[i], &mut tx, &mut self.pool)
                    } else {
                        transmit_traced(
                            &mut self.pipeline.taps,
                            &mut tx_offload,
                            (i as u16, port.as_mut(), caps[i]),
                            &mut tx,
                            &mut self.pool,
                        )
                    };
                    sent += count_sent(&self.counters.ports[i], t);
                }
            }
            let round_end = if received > 0 { epoch.elapsed().as_nanos() as u64 } else { now };
            self.pipeline.end_round(round_start, round_end, thread_cpu_ns);
            if now >= mirrored_ns + MIRROR_NS || received == 0 {
                mirrored_ns = now;
                for (i, sched) in self.schedulers.ports.iter_mut().enumerate() {
                    let mirrors = &self.queues.ports[i];
                    sched.take_changed(|q, stats| mirrors[q.0 as usize].copy(&stats));
                }
                if now >= driver_counted_ns + DRIVER_COUNT_NS {
                    driver_counted_ns = now;
                    let mut overflowed = false;
                    for (port, c) in self.ports.iter_mut().zip(&self.counters.ports) {
                        let refused = port.tunnel_refused();
                        let dropped = port.rx_dropped() + refused.overflowed;
                        overflowed |= dropped > c.rx_dropped.get();
                        c.rx_dropped.set(dropped);
                        c.vxlan_malformed.set(refused.malformed);
                        c.vxlan_unknown_vni.set(refused.unknown_vni);
                    }
                    if overflowed {
                        self.pipeline.rings_overflowed(now + DRIVER_COUNT_NS);
                    }
                    if self.watch_links(now, &mut caps) {
                        plan_changed = true;
                    }
                }
            }
            self.counters.batches.add(1);
            // A worker that does not keep up takes no pause: it would only let its rings overflow.
            let drained = drained && !self.pipeline.falling_behind();
            if let Some(pause) = coalescer.as_mut().and_then(|c| c.after_round(now, received, drained)) {
                std::thread::sleep(pause);
                previous_round = None;
            }
            if received + sent > 0 || self.schedulers.ports.iter().any(|s| !s.is_empty()) || !self.draining.is_empty() {
                idle_rounds = 0;
                continue;
            }
            self.counters.idle_polls.add(1);
            idle_rounds += 1;
            if idle_rounds > SPIN_ROUNDS {
                self.inject.doorbell().arm();
                self.wake.arm();
                // A plan or capture command sent just before the arming rang nothing: take it
                // now rather than sleep past it.
                let commands = self.take_commands();
                plan_changed |= commands;
                if !commands && self.inject.is_empty() && !stop.load(Ordering::Relaxed) {
                    // No later than the next packet an emulated link holds is due.
                    let wait_ns = match self.impairments.next_due() {
                        Some(due) => due.saturating_sub(epoch.elapsed().as_nanos() as u64).min(idle_wait as u64 * 1_000_000),
                        None => idle_wait as u64 * 1_000_000,
                    };
                    let timeout = libc::timespec {
                        tv_sec: (wait_ns / 1_000_000_000) as libc::time_t,
                        tv_nsec: (wait_ns % 1_000_000_000) as libc::c_long,
                    };
                    // SAFETY: `fds` is a valid array of pollfd and `timeout` a valid timespec for
                    // the duration of the call; no signal mask is given.
                    unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &timeout, std::ptr::null()) };
                    previous_round = None;
                }
                self.inject.doorbell().disarm();
                self.wake.disarm();
            }
        }
    }

    /// Counts a gap between two rounds the worker did not choose as a stall if it is one.
    fn note_gap(&self, gap_ns: u64) {
        if gap_ns > STALL_NS {
            self.counters.stalls.add(1);
            if gap_ns > self.counters.longest_stall_ns.get() {
                self.counters.longest_stall_ns.set(gap_ns);
            }
        }
    }

    /// Takes the plans and capture commands sent since the last look; true if there were any.
    fn take_commands(&mut self) -> bool {
        let mut any = false;
        while let Ok(plan) = self.plans.try_recv() {
            self.apply(plan);
            any = true;
        }
        while let Ok(cmd) = self.taps.try_recv() {
            self.pipeline.taps.apply(cmd);
            any = true;
        }
        any
    }

    /// Takes a new plan: the pipeline's VRs, classifier and channels, and fresh schedulers (the
    /// old ones drain out first, so no queued packet is lost).
    fn apply(&mut self, mut plan: WorkerPlan) {
        let replaced = self.pipeline.apply(&mut plan);
        self.impairments.apply(&plan.impairments);
        carry_queue_totals(
            &self.queues,
            &self.schedulers.first_queue,
            &plan.queues,
            &plan.schedulers.first_queue,
            &plan.schedulers.queues_per_vr,
            &plan.fresh_vrs,
        );
        // This worker is the counters' only writer, so it may zero them.
        for &vr in &plan.fresh_vrs {
            self.counters.vrs[vr as usize].reset();
        }
        let old = std::mem::replace(&mut self.schedulers, plan.schedulers);
        // Empty ones go with the rest of what the plan replaced: thousands of VRs' queues take
        // a while to free.
        let idle = if old.ports.iter().any(|s| !s.is_empty()) {
            self.draining.push(old);
            None
        } else {
            Some(old)
        };
        let queues = std::mem::replace(&mut self.queues, plan.queues);
        // The program belongs to the port's fanout group: one worker's socket installs it.
        for (port, program) in plan.steering.iter().enumerate() {
            if self.index == 0 && *program != self.steering[port] {
                steer(self.ports[port].as_mut(), program.as_deref(), port);
            }
        }
        self.steering = plan.steering;
        // The control side gone, there is nobody to wait on this plan either.
        let _ = self.retire.send(Box::new((replaced, queues, idle)));
        self.applied.store(plan.generation, Ordering::Release);
    }

    /// Sends what schedulers of earlier plans still hold; forgets those that are empty.
    fn send_draining(&mut self, now: u64, tx: &mut Vec<Packet>, caps: &[Offloads], tx_offload: &mut TxOffload) -> usize {
        let mut sent = 0;
        for old in self.draining.iter_mut() {
            for (i, sched) in old.ports.iter_mut().enumerate() {
                if sched.dequeue_batch(now, tx, TX_BATCH) > 0 {
                    let t = if self.pipeline.taps.is_empty() {
                        tx_offload.transmit(self.ports[i].as_mut(), caps[i], tx, &mut self.pool)
                    } else {
                        transmit_traced(
                            &mut self.pipeline.taps,
                            tx_offload,
                            (i as u16, self.ports[i].as_mut(), caps[i]),
                            tx,
                            &mut self.pool,
                        )
                    };
                    sent += count_sent(&self.counters.ports[i], t);
                }
            }
        }
        self.draining.retain(|s| s.ports.iter().any(|p| !p.is_empty()));
        sent
    }

    /// Stops a port whose interface went and reopens one whose interface is back; true if a
    /// port stopped or started.
    fn watch_links(&mut self, now: u64, caps: &mut [Offloads]) -> bool {
        let mut changed = false;
        for (i, link) in self.links.iter_mut().enumerate() {
            let Some(link) = link else { continue };
            if link.check(now) {
                tracing::warn!(
                    "worker {}: ports[{i}] ({}): the interface is gone; the port is stopped until an interface of that name is back",
                    self.index,
                    link.name()
                );
                changed = true;
            }
            let Some(reopen) = self.reopen.as_ref().filter(|_| link.due_for_reopen(now)) else { continue };
            match reopen(i, self.index, &mut self.pool) {
                Ok(port) => {
                    caps[i] = port.offloads();
                    self.ports[i] = port;
                    link.reopened();
                    // A group that lost all its sockets lost its program with them.
                    steer(self.ports[i].as_mut(), self.steering[i].as_deref(), i);
                    tracing::info!("worker {}: ports[{i}] ({}): the interface is back; the port runs again", self.index, link.name());
                    changed = true;
                }
                Err(e) => tracing::debug!("worker {}: ports[{i}] ({}): not reopened yet: {e}", self.index, link.name()),
            }
        }
        if changed {
            self.pipeline.set_port_offloads(caps);
        }
        changed
    }

    fn poll_fds(&self) -> Vec<libc::pollfd> {
        self.ports
            .iter()
            .zip(&self.links)
            .filter(|(_, link)| !link.as_ref().is_some_and(PortLink::is_gone))
            .filter_map(|(p, _)| p.rx_fd())
            .chain([self.inject.doorbell().fd(), self.wake.fd()])
            .map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 })
            .collect()
    }

    /// Queues the frames the slow path sent (VRs' kernels) on their VR's first queue of their
    /// port, so they share the VR's output share and rate (and its links' impairments) like
    /// forwarded traffic.
    fn take_injected(&mut self, now: u64) -> usize {
        let Worker { inject, pool, schedulers, counters, pipeline, impairments, .. } = self;
        let taps = &mut pipeline.taps;
        let mut out = ImpairedOutput { schedulers, impairments, counters, now };
        inject.drain(INJECT_BATCH, |meta, frame| {
            if !taps.is_empty() {
                taps.offer(CapturePoint::Slow, meta.vr, meta.port, frame);
                taps.offer(CapturePoint::Tx, meta.vr, meta.port, frame);
            }
            let c = &counters.vrs[meta.vr as usize];
            let Some(mut p) = pool.take_for(frame.len()) else {
                c.injected_drops.add(1);
                return;
            };
            p.fill(frame);
            p.offload = meta.offload;
            p.in_port = meta.port;
            match out.enqueue(meta.port, meta.vr, 0, p) {
                Ok(()) => c.injected_packets.add(1),
                Err(p) => {
                    c.injected_drops.add(1);
                    pool.give(p);
                }
            }
        })
    }
}

/// A transmit while a capture or trace is armed: a traced packet in the batch learns what the
/// port did with it.
#[cold]
#[inline(never)]
fn transmit_traced(
    taps: &mut Taps,
    tx_offload: &mut TxOffload,
    (index, port, caps): (u16, &mut dyn Port, Offloads),
    tx: &mut Vec<Packet>,
    pool: &mut PacketPool,
) -> Transmitted {
    let Some(trace) = taps.trace().filter(|t| t.awaits_tx()) else {
        return tx_offload.transmit(port, caps, tx, pool);
    };
    trace.before_tx(index, tx);
    let handed = tx.len();
    let t = tx_offload.transmit(port, caps, tx, pool);
    trace.after_tx(t, t.handed == handed && t.dropped == 0);
    t
}

/// A traced packet in `tx` is dropped with the batch: its port's interface is gone.
#[cold]
#[inline(never)]
fn note_gone(taps: &mut Taps, index: u16, tx: &[Packet]) {
    if let Some(trace) = taps.trace().filter(|t| t.awaits_tx()) {
        trace.before_tx(index, tx);
        trace.tx_gone();
    }
}

/// Counts what one transmit did on its port (bytes in proportion when the port took only some
/// frames); returns the frames sent.
fn count_sent(c: &PortCounters, t: Transmitted) -> usize {
    c.tx_packets.add(t.sent as u64);
    c.tx_bytes.add(if t.sent == t.handed { t.bytes } else { t.bytes * t.sent as u64 / t.handed.max(1) as u64 });
    c.tx_errors.add((t.handed - t.sent + t.dropped) as u64);
    t.sent
}

/// The calling thread's CPU time (a system call: the worker reads it once a share window).
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill; CLOCK_THREAD_CPUTIME_ID always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A worker asleep in `poll` between frames must run when they come, not after the time slice
/// of whatever else holds its CPU (the control side applying a change, a VR's kernel, a host):
/// a task asking for a short slice (EEVDF's `sched_runtime` for normal tasks, Linux 6.12)
/// preempts the running one when it wakes, without a larger share of the CPU, which a lower
/// nice value would give it. Older kernels ignore the request; the thread's nice value stays.
fn ask_for_short_slices() {
    #[repr(C)]
    struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        nice: i32,
        priority: u32,
        runtime_ns: u64,
        deadline_ns: u64,
        period_ns: u64,
    }
    // SAFETY: getpriority of the calling thread; errno is not needed (-1 is a valid nice).
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice,
        priority: 0,
        runtime_ns: WORKER_SLICE_NS,
        deadline_ns: 0,
        period_ns: 0,
    };
    // SAFETY: sched_setattr on the calling thread (0) with a sched_attr the kernel reads `size` of.
    if unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) } != 0 {
        tracing::debug!("worker: no short time slice: {}", std::io::Error::last_os_error());
    }
}

fn steer(port: &mut dyn Port, program: Option<&[Insn]>, index: usize) {
    let Some(program) = program else { return };
    match port.steer(program) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => tracing::debug!("ports[{index}]: {e}"),
        Err(e) => tracing::warn!("ports[{index}]: frames are not steered to their VRs' workers: {e}"),
    }
}
