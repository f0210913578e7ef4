//! Emulated links on a worker's output: each impaired VR interface (a VR on a port) holds its
//! packets in a delay line until their time on the emulated link is over, after losing some,
//! marking some to be sent twice, and spacing them at the link's rate, as netem does on an
//! interface (netem is not on every kernel). Packets reach the port's scheduler, in the VR's
//! queue, once due: the VR's share and rate limits still hold after the link.
//!
//! Per packet this costs a random number or two and a heap push and pop; nothing allocates
//! (the heaps keep their room) and nothing waits: the worker releases what is due once per
//! round, and sleeps no longer than until the next packet is due.

use crate::counters::WorkerCounters;
use crate::output::{OutputSink, Schedulers};
use crate::packet::{Packet, PacketPool};
use pearl_control::Impairment;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Packets one emulated link holds at most (netem's default limit); more are dropped as a full
/// queue's would be.
const LINE_LIMIT: usize = 1000;
/// Packets all of a worker's links hold at most: held packets keep their pool buffers, and the
/// pool has 8,192 to spare beyond what its queues and rings need.
const HELD_LIMIT: usize = 4096;

/// Where an impairment applies: VR `vr`'s interface on `port`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkImpairment {
    pub port: u16,
    pub vr: u16,
    pub params: Impairment,
}

struct Held {
    due: u64,
    /// Arrival order, so that packets due at the same time leave in the order they came.
    seq: u64,
    queue: u16,
    twice: bool,
    packet: Packet,
}

/// Reversed, so that `BinaryHeap` pops the packet due first.
impl Ord for Held {
    fn cmp(&self, other: &Held) -> Ordering {
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Held) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Held {
    fn eq(&self, other: &Held) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}

impl Eq for Held {}

struct DelayLine {
    link: LinkImpairment,
    held: BinaryHeap<Held>,
    /// When the emulated link has sent what it was given so far (rate-limited links).
    free_at: u64,
}

/// A worker's emulated links.
#[derive(Default)]
pub struct Impairments {
    lines: Vec<DelayLine>,
    /// Lines whose impairment was lifted while they held packets: sent on as they fall due.
    lifted: Vec<DelayLine>,
    /// Lost packets, handed back to the pool once per round.
    lost: Vec<Packet>,
    held: usize,
    seq: u64,
    rng: u64,
}

impl Impairments {
    /// Takes the links of a new plan: a link that stays keeps what it holds under its new
    /// parameters.
    pub fn apply(&mut self, links: &[LinkImpairment]) {
        let mut kept = Vec::with_capacity(links.len());
        for link in links.iter().filter(|l| !l.params.is_none()) {
            let line = match self.lines.iter().position(|l| (l.link.port, l.link.vr) == (link.port, link.vr)) {
                Some(i) => {
                    let mut line = self.lines.swap_remove(i);
                    line.link = *link;
                    line
                }
                None => DelayLine { link: *link, held: BinaryHeap::new(), free_at: 0 },
            };
            kept.push(line);
        }
        self.lifted.extend(self.lines.drain(..).filter(|l| !l.held.is_empty()));
        self.lines = kept;
        if self.rng == 0 {
            // Any odd seed will do: the draws need to be fair, not secret.
            self.rng = 0x9e37_79b9_7f4a_7c15 ^ (self as *const Impairments as u64);
        }
    }

    /// Whether no link is impaired and none holds a packet.
    pub fn is_idle(&self) -> bool {
        self.lines.is_empty() && self.lifted.is_empty()
    }

    /// When the next held packet is due, if one is held.
    pub fn next_due(&self) -> Option<u64> {
        self.lines.iter().chain(&self.lifted).filter_map(|l| l.held.peek().map(|h| h.due)).min()
    }

    /// Takes `packet` onto VR `vr`'s link out of `port` at time `now` (a lost one is kept for
    /// the pool), or hands it back: the link is not impaired, or it is full.
    #[inline]
    fn admit(&mut self, port: u16, vr: u16, queue: u16, packet: Packet, now: u64, counters: &WorkerCounters) -> Admission {
        let Some(i) = self.lines.iter().position(|l| (l.link.port, l.link.vr) == (port, vr)) else {
            return Admission::Unimpaired(packet);
        };
        let p = self.lines[i].link.params;
        if p.loss > 0.0 && self.chance() < p.loss {
            counters.vrs[vr as usize].impaired_lost.add(1);
            self.lost.push(packet);
            return Admission::Taken;
        }
        if self.held >= HELD_LIMIT || self.lines[i].held.len() >= LINE_LIMIT {
            return Admission::Full(packet);
        }
        let twice = p.duplicate > 0.0 && self.chance() < p.duplicate;
        let jitter = if p.jitter_ns > 0 { (self.chance() * 2.0 - 1.0) * p.jitter_ns as f64 } else { 0.0 };
        let line = &mut self.lines[i];
        let sent = match p.rate_bps {
            Some(rate) => {
                let on_wire = (packet.len() as u64 * 8 * 1_000_000_000).div_ceil(rate);
                line.free_at = line.free_at.max(now) + on_wire;
                line.free_at
            }
            None => now,
        };
        let due = sent + (p.delay_ns as f64 + jitter).max(0.0) as u64;
        self.seq += 1;
        line.held.push(Held { due, seq: self.seq, queue, twice, packet });
        self.held += 1;
        Admission::Taken
    }

    /// Sends on what is due by `now` into the schedulers, with second copies where drawn, and
    /// hands lost packets back to the pool. Returns how many packets reached the schedulers.
    pub fn release(&mut self, now: u64, schedulers: &mut Schedulers, pool: &mut PacketPool, counters: &WorkerCounters) -> usize {
        let Impairments { lines, lifted, lost, held, .. } = self;
        pool.give_all(lost);
        let mut sent = 0;
        for line in lines.iter_mut().chain(lifted.iter_mut()) {
            let LinkImpairment { port, vr, .. } = line.link;
            let c = &counters.vrs[vr as usize];
            while line.held.peek().is_some_and(|h| h.due <= now) {
                let h = line.held.pop().expect("peeked");
                *held -= 1;
                if h.twice {
                    if let Some(mut copy) = pool.take_for(h.packet.len()) {
                        copy.fill(h.packet.data());
                        copy.offload = h.packet.offload;
                        copy.in_port = h.packet.in_port;
                        c.impaired_duplicates.add(1);
                        sent += enqueue(schedulers, pool, (port, vr, h.queue), copy, counters);
                    }
                }
                sent += enqueue(schedulers, pool, (port, vr, h.queue), h.packet, counters);
            }
        }
        lifted.retain(|l| !l.held.is_empty());
        sent
    }

    /// A uniform draw in [0, 1) (xorshift64*).
    #[inline]
    fn chance(&mut self) -> f64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

enum Admission {
    Taken,
    Unimpaired(Packet),
    Full(Packet),
}

fn enqueue(
    schedulers: &mut Schedulers,
    pool: &mut PacketPool,
    (port, vr, queue): (u16, u16, u16),
    p: Packet,
    counters: &WorkerCounters,
) -> usize {
    match schedulers.enqueue(port, vr, queue, p) {
        Ok(()) => 1,
        Err(p) => {
            counters.vrs[vr as usize].queue_drops.add(1);
            pool.give(p);
            0
        }
    }
}

/// The output the pipeline enqueues into: impaired links first, the schedulers for the rest.
pub struct ImpairedOutput<'a> {
    pub schedulers: &'a mut Schedulers,
    pub impairments: &'a mut Impairments,
    pub counters: &'a WorkerCounters,
    pub now: u64,
}

impl ImpairedOutput<'_> {
    /// Queues one packet (from the slow path); what a full link or queue refuses is handed back.
    pub fn enqueue(&mut self, port: u16, vr: u16, queue: u16, packet: Packet) -> Result<(), Packet> {
        if self.impairments.lines.is_empty() {
            return self.schedulers.enqueue(port, vr, queue, packet);
        }
        match self.impairments.admit(port, vr, queue, packet, self.now, self.counters) {
            Admission::Taken => Ok(()),
            Admission::Unimpaired(p) => self.schedulers.enqueue(port, vr, queue, p),
            Admission::Full(p) => Err(p),
        }
    }
}

impl OutputSink for ImpairedOutput<'_> {
    #[inline]
    fn enqueue_run(&mut self, port: u16, vr: u16, queue: u16, run: &mut Vec<Packet>, refused: &mut Vec<Packet>) {
        if !self.impairments.lines.iter().any(|l| (l.link.port, l.link.vr) == (port, vr)) {
            return self.schedulers.enqueue_run(port, vr, queue, run, refused);
        }
        for p in run.drain(..) {
            match self.impairments.admit(port, vr, queue, p, self.now, self.counters) {
                Admission::Taken => {}
                Admission::Unimpaired(p) | Admission::Full(p) => refused.push(p),
            }
        }
    }

    fn prefetch_queue(&self, port: u16, vr: u16, queue: u16) {
        self.schedulers.prefetch_queue(port, vr, queue);
    }

    fn prefetch_tail(&self, port: u16, vr: u16, queue: u16) {
        self.schedulers.prefetch_tail(port, vr, queue);
    }
}
