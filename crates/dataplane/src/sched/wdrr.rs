//! The port scheduler: two-level weighted deficit round robin under token-bucket caps.
//!
//! Deficit round robin, per level: the backlogged members (VRs at the top, a VR's queues below)
//! take turns in a fixed rotation. A member starting its turn is credited its quantum in bytes
//! and sends head packets while they fit its credit; what is left carries into its next turn,
//! so over many rounds each member sends its quantum per round and shares come out in
//! proportion to the quanta, whatever the packet sizes. A member that empties forfeits its
//! credit (DRR never lets an idle member save up).
//!
//! Quanta are `weight * quantum_per_weight` bytes, with `quantum_per_weight` chosen so that the
//! smallest weight's quantum is at least [`MIN_QUANTUM_BYTES`]: every turn then sends at least
//! one frame, and a round costs O(backlogged members) work however the weights are set.
//!
//! A VR's quantum is its share's (the operator's weight for the VR), or by default the sum of
//! its queues' quanta, so that with every queue backlogged the shares are exactly those of one
//! flat WDRR over all queues; when some of a VR's queues are idle, its
//! busy queues inherit the VR's share instead of handing it to other VRs, which keeps VRs
//! isolated from how their neighbours spread traffic over queues. The inner rotation keeps its
//! place when the VR's turn ends, so the queues inside a VR share fairly even when the VR's
//! turns are cut short by its rate cap.
//!
//! A VR that had nothing queued and now has (a sparse one: pings, a BGP keepalive, a light VR
//! beside a flooding one) takes its first turn ahead of the rotation, as fq_codel serves new
//! flows before old ones: otherwise it would wait behind a full quantum of every busy VR, which
//! at a low port rate is milliseconds. That turn is one quantum at most; a VR still backlogged
//! after it joins the rotation's end. A VR gains the head of the line only by emptying first,
//! so a busy VR never does, and shares among busy VRs are as below.
//!
//! Rates: the port bucket is checked before every packet and an empty one ends the batch. A VR
//! whose bucket is empty is passed over without being credited (its cap, not its weight, is
//! what limits it then), and the bandwidth goes to the next backlogged VR: work conservation.
//! A turn cut short by the cap keeps at most one quantum of credit, so a capped VR cannot bank
//! credit without bound and then crowd out the others when the cap is lifted.
//!
//! Straight out: while no packet waits anywhere on the port and the port has no cap, a run of
//! an uncapped VR's packets skips its queue and goes out first, in arrival order, up to a
//! transmit batch per round (`with_direct`). Nothing waits then, so there is nobody to be fair
//! to: the rotation would hand the same packets to the port a few lines later, after touching
//! the VR's class, its rotation's slot and the queue's ring, three more of its cache lines each,
//! which with thousands of VRs are cold. The packets still count as the queue's, enqueued and
//! sent. Beyond a batch, or once anything waits, packets queue and the rotation decides.
//!
//! Bound used by the property test, with every queue backlogged throughout and no caps: at any
//! moment, let `M` be the largest frame, `n` the number of VRs, `n_v` the queues of VR `v`, `Q_i`
//! queue `i`'s quantum and `T` the bytes sent. Every VR has been credited `K` or `K + 1` times
//! and holds less than `Q_v + M` of unspent credit, so VR `v` has sent `K * Q_v + e_v` with
//! `-(Q_v + M) < e_v <= Q_v`; summing, `|sent_v - T * Q_v / Q| < 2 Q_v + (n + 1) M`. The same
//! holds inside the VR, and the two compose to
//! `|sent_i - T * w_i / W| < 4 Q_i + (n + n_v + 2) M`.

use super::config::{check_rate, check_weight, PortSchedConfig, SchedConfigError};
use super::queue::{PacketQueue, QueueStats};
use super::rate::RateLimit;
use super::ring::Ring;
use super::shared_credit::SharedCredit;
use super::token_bucket::TokenBucket;
use super::{QueueId, VrClassId};
use crate::packet::BUF_SIZE;
use std::sync::Arc;

/// The smallest quantum: a full packet buffer, so every turn sends at least one frame of any
/// size the pool can hold. Larger wire lengths still go out, by saving credit over turns.
pub const MIN_QUANTUM_BYTES: u64 = BUF_SIZE as u64;

/// One port's queues and the schedule that empties them. `P` is the packet type: the pipeline's
/// [`Packet`](crate::packet::Packet), or anything a test likes.
pub struct PortScheduler<P> {
    port_bucket: Option<TokenBucket>,
    vrs: Box<[VrClass]>,
    queues: Box<[QueueSlot<P>]>,
    /// Backlogged VRs in rotation order; a backlogged VR is here or in `new_vrs`.
    active_vrs: Ring<u32>,
    /// VRs that joined from idle and have not had their first turn: served before `active_vrs`.
    new_vrs: Ring<u32>,
    /// Whether the VR at the front of `active_vrs` has been credited for its current turn.
    vr_turn_open: bool,
    /// The same for the front of `new_vrs`.
    new_turn_open: bool,
    quantum_per_weight: u64,
    /// The VRs with a rate cap: the only ones whose buckets a batch refills, so that a batch
    /// costs nothing per VR that has none (thousands of VRs share a port).
    rated: Vec<u32>,
    /// Queues whose statistics changed since `take_changed` last ran (each listed once, as its
    /// `changed` flag says): readers' copies are refreshed for these alone.
    changed: Vec<u32>,
    /// Packets that skipped their queues (see the module comment), sent before the rotation.
    direct: Vec<P>,
    /// How many packets may wait in `direct`; 0: none skips its queue.
    direct_max: usize,
}

struct VrClass {
    bucket: Option<TokenBucket>,
    /// This VR's queues are `first_queue..first_queue + queue_count`.
    first_queue: u32,
    queue_count: u32,
    /// Backlogged queues of this VR in rotation order; a queue is here exactly when it is not
    /// empty.
    active: Ring<u32>,
    /// Whether the queue at the front of `active` has been credited for its current turn.
    queue_turn_open: bool,
    share: Option<u32>,
    quantum: u64,
    deficit: u64,
}

/// What a packet that passes straight out touches (the flags and the queue's counts) fills the
/// first of its two lines.
#[repr(C, align(64))]
struct QueueSlot<P> {
    changed: bool,
    /// Its VR has a rate cap: its packets always queue.
    capped: bool,
    vr: u32,
    weight: u32,
    fifo: PacketQueue<P>,
    quantum: u64,
    deficit: u64,
}

impl<P> PortScheduler<P> {
    /// Builds the scheduler; each queue takes its slots when its first packet arrives.
    pub fn new(config: &PortSchedConfig) -> Result<PortScheduler<P>, SchedConfigError> {
        config.validate()?;
        let mut vrs = Vec::with_capacity(config.vrs.len());
        let mut queues = Vec::with_capacity(config.vrs.iter().map(|vr| vr.queues.len()).sum());
        for (v, vr) in config.vrs.iter().enumerate() {
            vrs.push(VrClass {
                bucket: vr.rate.map(TokenBucket::new),
                first_queue: index_u32(queues.len()),
                queue_count: index_u32(vr.queues.len()),
                // Made with every plan for thousands of VRs, most of them idle: like the
                // queues, the list takes its slots with the VR's first packet.
                active: Ring::lazy(vr.queues.len()),
                queue_turn_open: false,
                share: vr.share,
                quantum: 0,
                deficit: 0,
            });
            for q in &vr.queues {
                queues.push(QueueSlot {
                    fifo: PacketQueue::new(q.length),
                    vr: index_u32(v),
                    weight: q.weight,
                    quantum: 0,
                    deficit: 0,
                    changed: false,
                    capped: vr.rate.is_some(),
                });
            }
        }
        let rated = (0..vrs.len()).filter(|&v| vrs[v].bucket.is_some()).map(index_u32).collect();
        let changed = Vec::with_capacity(queues.len());
        let mut sched = PortScheduler {
            port_bucket: config.rate.map(TokenBucket::new),
            active_vrs: Ring::with_capacity(vrs.len()),
            new_vrs: Ring::with_capacity(vrs.len()),
            vrs: vrs.into_boxed_slice(),
            queues: queues.into_boxed_slice(),
            vr_turn_open: false,
            new_turn_open: false,
            quantum_per_weight: 0,
            rated,
            changed,
            direct: Vec::new(),
            direct_max: 0,
        };
        sched.set_quanta();
        Ok(sched)
    }

    /// Lets up to `max` packets a round skip their queues while nothing waits (see the module
    /// comment).
    pub fn with_direct(mut self, max: usize) -> PortScheduler<P> {
        self.direct = Vec::with_capacity(max);
        self.direct_max = max;
        self
    }

    /// Makes the port's cap, and VR class `c`'s cap where `vrs[c]` names a credit, draw on
    /// credits shared with the other workers' schedulers of this port (see [`SharedCredit`]);
    /// the caps not named stay this scheduler's own.
    pub fn share_rates(&mut self, port: Option<&Arc<SharedCredit>>, vrs: &[Option<Arc<SharedCredit>>]) {
        if let Some(c) = port {
            self.port_bucket = Some(TokenBucket::shared(Arc::clone(c)));
        }
        for (v, (class, c)) in self.vrs.iter_mut().zip(vrs).enumerate() {
            if let Some(c) = c {
                class.bucket = Some(TokenBucket::shared(Arc::clone(c)));
                if !self.rated.contains(&index_u32(v)) {
                    self.rated.push(index_u32(v));
                }
            }
        }
        for v in 0..self.vrs.len() {
            self.mark_capped(v);
        }
    }

    /// Keeps VR class `v`'s queues' `capped` as its bucket says: a queue slot holds its own
    /// copy, so that a packet passing straight out reads no line of its class.
    fn mark_capped(&mut self, v: usize) {
        let class = &self.vrs[v];
        let first = class.first_queue as usize;
        for slot in &mut self.queues[first..first + class.queue_count as usize] {
            slot.capped = class.bucket.is_some();
        }
    }

    /// Whether `n` packets of a queue (`capped`: its VR has a cap) may pass straight out now.
    #[inline]
    fn passes_straight_out(&self, capped: bool, n: usize) -> bool {
        !capped && self.direct.len() + n <= self.direct_max && self.port_bucket.is_none() && self.nothing_queued()
    }

    /// The `index`-th queue of VR `vr`, if both exist.
    pub fn queue_id(&self, vr: VrClassId, index: usize) -> Option<QueueId> {
        let vr = self.vrs.get(vr.0 as usize)?;
        (index < vr.queue_count as usize).then(|| QueueId(vr.first_queue + index as u32))
    }

    pub fn vr_count(&self) -> usize {
        self.vrs.len()
    }

    pub fn queue_count(&self) -> usize {
        self.queues.len()
    }

    /// Whether no packet waits in any queue.
    pub fn is_empty(&self) -> bool {
        self.direct.is_empty() && self.nothing_queued()
    }

    #[inline]
    fn nothing_queued(&self) -> bool {
        self.active_vrs.is_empty() && self.new_vrs.is_empty()
    }

    /// Queues a packet whose transmission costs `wire_len` bytes of the rates (the frame length;
    /// callers that want preamble and gap accounted add them). A full queue tail-drops: the drop
    /// is counted and the packet handed back for its buffer to be recycled.
    ///
    /// Panics if `queue` is not one of this scheduler's.
    #[inline]
    pub fn enqueue(&mut self, queue: QueueId, pkt: P, wire_len: u32) -> Result<(), P> {
        let q = queue.0;
        let slot = &mut self.queues[q as usize];
        mark_changed(slot, q, &mut self.changed);
        slot.fifo.push(pkt, wire_len)?;
        if slot.fifo.has_one() {
            let v = slot.vr;
            let vr = &mut self.vrs[v as usize];
            join(&mut vr.active, q);
            if vr.active.len() == 1 {
                join(&mut self.new_vrs, v);
            }
        }
        Ok(())
    }

    /// Queues a run of packets for one queue, in order, emptying `run`; what the full queue
    /// refuses goes to `refused`, counted as drops. The same as enqueueing them one by one,
    /// with the queue looked up and the rotations joined once per run.
    ///
    /// Panics if `queue` is not one of this scheduler's.
    #[inline]
    pub fn enqueue_run(&mut self, queue: QueueId, run: &mut Vec<P>, wire_len: impl Fn(&P) -> u32, refused: &mut Vec<P>) {
        let q = queue.0;
        let straight_out = self.passes_straight_out(self.queues[q as usize].capped, run.len());
        let slot = &mut self.queues[q as usize];
        mark_changed(slot, q, &mut self.changed);
        if straight_out {
            for pkt in run.drain(..) {
                slot.fifo.count_passed(wire_len(&pkt));
                self.direct.push(pkt);
            }
            return;
        }
        let was_idle = slot.fifo.is_empty();
        for pkt in run.drain(..) {
            let len = wire_len(&pkt);
            if let Err(pkt) = slot.fifo.push(pkt, len) {
                refused.push(pkt);
            }
        }
        if was_idle && !slot.fifo.is_empty() {
            let v = slot.vr;
            let vr = &mut self.vrs[v as usize];
            join(&mut vr.active, q);
            if vr.active.len() == 1 {
                join(&mut self.new_vrs, v);
            }
        }
    }

    /// Starts loading the state of `queue` that queueing reads first. A batch spread over
    /// thousands of VRs asks this for every packet before queueing any, then, that state having
    /// arrived, [`prefetch_tail`](Self::prefetch_tail): the misses of the batch overlap.
    #[inline]
    pub fn prefetch_queue(&self, queue: QueueId) {
        if let Some(slot) = self.queues.get(queue.0 as usize) {
            crate::prefetch::prefetch(slot);
        }
    }

    /// Starts loading the slot `queue`'s next packet goes to and the state of its VR, unless
    /// the packet will likely skip the queue.
    #[inline]
    pub fn prefetch_tail(&self, queue: QueueId) {
        if let Some(slot) = self.queues.get(queue.0 as usize) {
            if self.passes_straight_out(slot.capped, 1) {
                return;
            }
            slot.fifo.prefetch_tail();
            if let Some(vr) = self.vrs.get(slot.vr as usize) {
                crate::prefetch::prefetch(vr);
            }
        }
    }

    /// Appends up to `max` packets to `out` in schedule order and returns how many. `now_ns` is
    /// the caller's monotonic clock, read once per batch, from which the token buckets refill.
    /// `out` should have room for `max` more, so that pushing never reallocates.
    pub fn dequeue_batch(&mut self, now_ns: u64, out: &mut Vec<P>, max: usize) -> usize {
        let mut sent = self.direct.len().min(max);
        out.extend(self.direct.drain(..sent));
        self.refill(now_ns);
        // VRs met in a row that were out of tokens; once every backlogged VR has been met so,
        // nothing more can go out before the clock moves.
        let mut capped_in_a_row = 0;
        while sent < max {
            if self.port_bucket.as_ref().is_some_and(|b| !b.has_tokens()) {
                break;
            }
            let (v, new) = match self.new_vrs.front() {
                Some(&v) => (v, true),
                None => match self.active_vrs.front() {
                    Some(&v) => (v, false),
                    None => break,
                },
            };
            let turn_open = if new { &mut self.new_turn_open } else { &mut self.vr_turn_open };
            let vr = &mut self.vrs[v as usize];
            if vr.bucket.as_ref().is_some_and(|b| !b.has_tokens()) {
                if *turn_open {
                    vr.deficit = vr.deficit.min(vr.quantum);
                    *turn_open = false;
                }
                if new {
                    self.new_vrs.pop_front();
                    join(&mut self.active_vrs, v);
                } else {
                    self.active_vrs.rotate();
                }
                capped_in_a_row += 1;
                if capped_in_a_row >= self.active_vrs.len() + self.new_vrs.len() {
                    break;
                }
                continue;
            }
            if !*turn_open {
                vr.deficit += vr.quantum;
                *turn_open = true;
            }
            let (q, len) = vr.next_queue(&mut self.queues);
            if u64::from(len) > vr.deficit {
                // The VR's turn is over; the inner rotation resumes here on its next turn.
                *turn_open = false;
                if new {
                    self.new_vrs.pop_front();
                    join(&mut self.active_vrs, v);
                } else {
                    self.active_vrs.rotate();
                }
                continue;
            }
            let slot = &mut self.queues[q as usize];
            mark_changed(slot, q, &mut self.changed);
            let mut len = len;
            loop {
                let Some(pkt) = slot.fifo.pop_sent() else { unreachable!("an active queue has a head packet") };
                slot.deficit -= u64::from(len);
                vr.deficit -= u64::from(len);
                if let Some(b) = vr.bucket.as_mut() {
                    b.consume(len);
                }
                if let Some(b) = self.port_bucket.as_mut() {
                    b.consume(len);
                }
                out.push(pkt);
                sent += 1;
                // The queue keeps the turn while its next packet fits every budget, which is
                // what going round the outer loop would decide, minus the trip.
                match slot.fifo.head_len() {
                    Some(next)
                        if sent < max
                            && u64::from(next) <= slot.deficit.min(vr.deficit)
                            && vr.bucket.as_ref().is_none_or(TokenBucket::has_tokens)
                            && self.port_bucket.as_ref().is_none_or(TokenBucket::has_tokens) =>
                    {
                        len = next
                    }
                    _ => break,
                }
            }
            capped_in_a_row = 0;
            if slot.fifo.is_empty() {
                slot.deficit = 0;
                vr.active.pop_front();
                vr.queue_turn_open = false;
                if vr.active.is_empty() {
                    vr.deficit = 0;
                    if new {
                        self.new_vrs.pop_front();
                        self.new_turn_open = false;
                    } else {
                        self.active_vrs.pop_front();
                        self.vr_turn_open = false;
                    }
                }
            }
        }
        sent
    }

    /// Takes every queued packet out (not counted as sent; those that were passing straight
    /// out were counted sent already), for reconfiguration or shutdown, so that their buffers
    /// go back to the pool.
    pub fn drain(&mut self, out: &mut Vec<P>) {
        out.append(&mut self.direct);
        for (q, slot) in self.queues.iter_mut().enumerate() {
            if !slot.fifo.is_empty() {
                mark_changed(slot, index_u32(q), &mut self.changed);
            }
            slot.fifo.drain_into(out);
            slot.deficit = 0;
        }
        for vr in self.vrs.iter_mut() {
            while vr.active.pop_front().is_some() {}
            vr.queue_turn_open = false;
            vr.deficit = 0;
        }
        while self.active_vrs.pop_front().is_some() {}
        while self.new_vrs.pop_front().is_some() {}
        self.vr_turn_open = false;
        self.new_turn_open = false;
    }

    /// Panics if `queue` is not one of this scheduler's.
    pub fn stats(&self, queue: QueueId) -> QueueStats {
        self.queues[queue.0 as usize].fifo.stats()
    }

    /// Hands `f` the statistics of every queue that changed since the last call: what a
    /// reader's copy needs refreshed, in work proportional to the queues in use.
    pub fn take_changed(&mut self, mut f: impl FnMut(QueueId, QueueStats)) {
        for q in self.changed.drain(..) {
            let slot = &mut self.queues[q as usize];
            slot.changed = false;
            f(QueueId(q), slot.fifo.stats());
        }
    }

    /// Changes a queue's weight; queued packets and the rotation stay as they are.
    pub fn set_weight(&mut self, queue: QueueId, weight: u32) -> Result<(), SchedConfigError> {
        check_weight(weight, || format!("queues[{}].weight", queue.0))?;
        let slot = self.queues.get_mut(queue.0 as usize).ok_or_else(|| no_such("queue", queue.0))?;
        slot.weight = weight;
        self.set_quanta();
        Ok(())
    }

    /// Sets or lifts a VR's cap from `now_ns` on; queued packets stay.
    pub fn set_vr_rate(&mut self, vr: VrClassId, rate: Option<RateLimit>, now_ns: u64) -> Result<(), SchedConfigError> {
        check_rate(rate.as_ref(), || format!("vrs[{}].rate", vr.0))?;
        let class = self.vrs.get_mut(vr.0 as usize).ok_or_else(|| no_such("vr", vr.0))?;
        update_bucket(&mut class.bucket, rate, now_ns);
        self.mark_capped(vr.0 as usize);
        self.rated.retain(|&v| v != vr.0);
        if rate.is_some() {
            self.rated.push(vr.0);
        }
        Ok(())
    }

    /// Sets or lifts the port's cap from `now_ns` on; queued packets stay.
    pub fn set_port_rate(&mut self, rate: Option<RateLimit>, now_ns: u64) -> Result<(), SchedConfigError> {
        check_rate(rate.as_ref(), || "rate".to_string())?;
        update_bucket(&mut self.port_bucket, rate, now_ns);
        Ok(())
    }

    fn refill(&mut self, now_ns: u64) {
        if let Some(b) = self.port_bucket.as_mut() {
            b.refill(now_ns);
        }
        for &v in &self.rated {
            if let Some(b) = self.vrs[v as usize].bucket.as_mut() {
                b.refill(now_ns);
            }
        }
    }

    /// Recomputes every quantum from the weights and shares (see the module comment).
    fn set_quanta(&mut self) {
        let weights = self.queues.iter().map(|q| q.weight).chain(self.vrs.iter().filter_map(|v| v.share));
        let min_weight = weights.map(u64::from).min().unwrap_or(1);
        self.quantum_per_weight = MIN_QUANTUM_BYTES.div_ceil(min_weight);
        for slot in self.queues.iter_mut() {
            slot.quantum = u64::from(slot.weight) * self.quantum_per_weight;
        }
        for vr in self.vrs.iter_mut() {
            let first = vr.first_queue as usize;
            vr.quantum = match vr.share {
                Some(share) => u64::from(share) * self.quantum_per_weight,
                None => self.queues[first..first + vr.queue_count as usize].iter().map(|q| q.quantum).sum(),
            };
        }
    }
}

impl VrClass {
    /// The inner round robin: the queue that sends next within this VR and its head packet's
    /// length. Only called while the VR is backlogged; ends because every pass credits a quantum.
    #[inline]
    fn next_queue<P>(&mut self, queues: &mut [QueueSlot<P>]) -> (u32, u32) {
        loop {
            let Some(&q) = self.active.front() else { unreachable!("an active VR has an active queue") };
            let slot = &mut queues[q as usize];
            if !self.queue_turn_open {
                slot.deficit += slot.quantum;
                self.queue_turn_open = true;
            }
            let Some(len) = slot.fifo.head_len() else { unreachable!("an active queue has a head packet") };
            if u64::from(len) <= slot.deficit {
                return (q, len);
            }
            self.active.rotate();
            self.queue_turn_open = false;
        }
    }
}

/// Lists queue `q` as changed, once until `take_changed` runs. `changed` has room for every
/// queue, so pushing never allocates.
#[inline]
fn mark_changed<P>(slot: &mut QueueSlot<P>, q: u32, changed: &mut Vec<u32>) {
    if !slot.changed {
        slot.changed = true;
        changed.push(q);
    }
}

/// Adds a member that just became backlogged to a rotation. The ring has a slot for every
/// member and a member joins only while absent, so it cannot be full.
#[inline]
fn join(rotation: &mut Ring<u32>, member: u32) {
    let joined = rotation.push_back(member);
    debug_assert!(joined.is_ok(), "a rotation has room for every member");
}

fn update_bucket(bucket: &mut Option<TokenBucket>, rate: Option<RateLimit>, now_ns: u64) {
    match (bucket.as_mut(), rate) {
        (Some(b), Some(limit)) => b.set_limit(limit, now_ns),
        (None, Some(limit)) => {
            let mut b = TokenBucket::new(limit);
            b.refill(now_ns);
            *bucket = Some(b);
        }
        (_, None) => *bucket = None,
    }
}

fn no_such(kind: &str, index: u32) -> SchedConfigError {
    SchedConfigError { field: format!("{kind} {index}"), reason: "no such entry in this scheduler" }
}

/// Queue and VR counts are small; ids are `u32` to keep the rotations compact.
fn index_u32(i: usize) -> u32 {
    u32::try_from(i).expect("fewer than 2^32 queues per port")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::{QueueConfig, VrClassConfig};

    fn sched(vrs: &[&[(u32, usize)]]) -> PortScheduler<(u32, u32)> {
        let vrs = vrs
            .iter()
            .map(|qs| VrClassConfig {
                rate: None,
                share: None,
                queues: qs.iter().map(|&(weight, length)| QueueConfig { weight, length }).collect(),
            })
            .collect();
        PortScheduler::new(&PortSchedConfig { rate: None, vrs }).unwrap()
    }

    fn runs(s: &mut PortScheduler<(u32, u32)>, queue: u32, seqs: std::ops::Range<u32>) -> Vec<(u32, u32)> {
        let mut run: Vec<(u32, u32)> = seqs.map(|i| (queue, i)).collect();
        let mut refused = Vec::new();
        s.enqueue_run(QueueId(queue), &mut run, |_| 100, &mut refused);
        refused
    }

    fn sent_all(s: &mut PortScheduler<(u32, u32)>) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        while s.dequeue_batch(0, &mut out, 3) > 0 {}
        out
    }

    #[test]
    fn what_passing_straight_out_touches_is_one_line() {
        type Slot = QueueSlot<crate::packet::Packet>;
        assert_eq!(core::mem::align_of::<Slot>(), 64);
        assert!(core::mem::offset_of!(Slot, fifo) + super::super::queue::COUNTS_END <= 64);
        assert!(core::mem::offset_of!(Slot, changed) < 64 && core::mem::offset_of!(Slot, capped) < 64);
    }

    #[test]
    fn while_nothing_waits_a_run_goes_straight_out_counted_as_its_queues() {
        // Queues of 2: had the runs queued, most of them would have been dropped.
        let mut s = sched(&[&[(1, 2)], &[(9, 2)]]).with_direct(8);
        assert!(runs(&mut s, 0, 0..4).is_empty());
        assert!(runs(&mut s, 1, 0..3).is_empty());
        assert!(!s.is_empty());
        assert_eq!(sent_all(&mut s), [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2)], "in arrival order");
        let st = s.stats(QueueId(0));
        assert_eq!((st.enqueued_packets, st.sent_packets, st.sent_bytes, st.dropped_packets, st.backlog_packets), (4, 4, 400, 0, 0));
        assert!(s.is_empty());
    }

    #[test]
    fn beyond_a_batch_or_while_anything_waits_packets_queue_and_keep_their_order() {
        let mut s = sched(&[&[(1, 64)], &[(1, 64)]]).with_direct(4);
        assert!(runs(&mut s, 0, 0..3).is_empty());
        // Does not fit beside the three: queued, and then everything else queues too.
        assert!(runs(&mut s, 0, 3..5).is_empty());
        assert!(runs(&mut s, 1, 0..1).is_empty());
        assert_eq!(s.stats(QueueId(0)).backlog_packets, 2);
        assert_eq!(s.stats(QueueId(1)).backlog_packets, 1, "queued behind the waiting run");
        let out = sent_all(&mut s);
        let q0: Vec<u32> = out.iter().filter(|p| p.0 == 0).map(|p| p.1).collect();
        assert_eq!(q0, [0, 1, 2, 3, 4]);
        assert_eq!(&out[..3], [(0, 0), (0, 1), (0, 2)], "what went straight out goes first");
        // A full queue still tail-drops what waits.
        let mut s = sched(&[&[(1, 2)]]).with_direct(1);
        assert_eq!(runs(&mut s, 0, 0..4), [(0, 2), (0, 3)]);
        assert_eq!(s.stats(QueueId(0)).dropped_packets, 2);
    }

    #[test]
    fn a_capped_vr_or_port_always_queues() {
        let limit = RateLimit { bits_per_second: 1_000_000_000, burst_bytes: 1_000_000 };
        let config = |port, vr| PortSchedConfig {
            rate: port,
            vrs: vec![VrClassConfig { rate: vr, share: None, queues: vec![QueueConfig { weight: 1, length: 8 }] }],
        };
        for (port, vr) in [(None, Some(limit)), (Some(limit), None)] {
            let mut s: PortScheduler<(u32, u32)> = PortScheduler::new(&config(port, vr)).unwrap().with_direct(8);
            runs(&mut s, 0, 0..2);
            assert_eq!(s.stats(QueueId(0)).backlog_packets, 2, "port {port:?}, VR {vr:?}");
        }
        // A cap set later counts, and lifting it lets runs through again.
        let mut s: PortScheduler<(u32, u32)> = PortScheduler::new(&config(None, None)).unwrap().with_direct(8);
        s.set_vr_rate(VrClassId(0), Some(limit), 0).unwrap();
        runs(&mut s, 0, 0..2);
        assert_eq!(s.stats(QueueId(0)).backlog_packets, 2);
        sent_all(&mut s);
        s.set_vr_rate(VrClassId(0), None, 0).unwrap();
        runs(&mut s, 0, 2..4);
        assert_eq!(s.stats(QueueId(0)).backlog_packets, 0);
    }

    #[test]
    fn an_empty_scheduler_sends_nothing() {
        let mut s = sched(&[&[(1, 4)], &[(2, 4)]]);
        let mut out = Vec::new();
        assert!(s.is_empty());
        assert_eq!(s.dequeue_batch(0, &mut out, 32), 0);
        assert!(out.is_empty());
    }

    #[test]
    fn only_queues_that_changed_are_reported_each_once() {
        let mut s = sched(&[&[(1, 1)], &[(1, 4)], &[(1, 4)]]);
        let changed = |s: &mut PortScheduler<(u32, u32)>| {
            let mut seen = Vec::new();
            s.take_changed(|q, st| seen.push((q.0, st.enqueued_packets, st.sent_packets, st.dropped_packets)));
            seen
        };
        assert_eq!(changed(&mut s), [], "nothing happened yet");
        s.enqueue(QueueId(2), (0, 0), 100).unwrap();
        s.enqueue(QueueId(2), (0, 1), 100).unwrap();
        s.enqueue(QueueId(0), (1, 0), 100).unwrap();
        assert!(s.enqueue(QueueId(0), (1, 1), 100).is_err(), "a queue of one is full");
        assert_eq!(changed(&mut s), [(2, 2, 0, 0), (0, 1, 0, 1)]);
        assert_eq!(changed(&mut s), [], "reported once");
        let mut out = Vec::new();
        s.dequeue_batch(0, &mut out, 1);
        assert_eq!(changed(&mut s).len(), 1, "the queue that sent");
    }

    #[test]
    fn queue_ids_follow_config_order() {
        let s = sched(&[&[(1, 4), (1, 4)], &[(1, 4)]]);
        assert_eq!(s.queue_id(VrClassId(0), 1), Some(QueueId(1)));
        assert_eq!(s.queue_id(VrClassId(1), 0), Some(QueueId(2)));
        assert_eq!(s.queue_id(VrClassId(1), 1), None);
        assert_eq!(s.queue_id(VrClassId(2), 0), None);
        assert_eq!((s.vr_count(), s.queue_count()), (2, 3));
    }

    #[test]
    fn overflow_is_tail_dropped_counted_and_handed_back() {
        let mut s = sched(&[&[(1, 8)]]);
        let q = QueueId(0);
        let refused: Vec<_> = (0..13).filter_map(|i| s.enqueue(q, (0, i), 100).err()).collect();
        assert_eq!(refused, [(0, 8), (0, 9), (0, 10), (0, 11), (0, 12)]);
        let st = s.stats(q);
        assert_eq!((st.dropped_packets, st.dropped_bytes), (5, 500));
        assert_eq!((st.enqueued_packets, st.backlog_packets), (8, 8));
    }

    #[test]
    fn a_vr_that_was_idle_goes_next_and_a_busy_one_keeps_its_share() {
        // VR 0 floods 64-byte frames; VR 1 sends one now and then, as pings.
        let mut s = sched(&[&[(1, 4096)], &[(1, 4096)]]);
        let (busy, sparse) = (QueueId(0), QueueId(1));
        for i in 0..4000 {
            s.enqueue(busy, (0, i), 64).unwrap();
        }
        let mut out = Vec::with_capacity(64);
        // Its first turn (it too came from idle) is over: it is in the rotation.
        s.dequeue_batch(0, &mut out, 64);
        let mut waited = Vec::new();
        for round in 0..20 {
            // The busy VR is mid-turn (a quantum is 32 of its frames) when the ping comes.
            out.clear();
            s.dequeue_batch(0, &mut out, 5);
            s.enqueue(sparse, (1, round), 64).unwrap();
            out.clear();
            s.dequeue_batch(0, &mut out, 64);
            waited.push(out.iter().position(|p| p.0 == 1).expect("the ping left in the batch"));
        }
        assert!(waited.iter().all(|&w| w == 0), "frames ahead of each ping: {waited:?}");
        // Without the sparse VR, two busy VRs share by weight: a VR gains nothing by emptying
        // unless it is sparse, and then only its own frames.
        let mut s = sched(&[&[(1, 4096)], &[(1, 4096)]]);
        let mut sent = [0usize; 2];
        for round in 0..200u32 {
            for v in 0..2u32 {
                while s.enqueue(QueueId(v), (v, round), 64).is_ok() && s.stats(QueueId(v)).backlog_packets < 100 {}
            }
            out.clear();
            s.dequeue_batch(0, &mut out, 64);
            for p in &out {
                sent[p.0 as usize] += 1;
            }
        }
        assert!(sent[0].abs_diff(sent[1]) <= 64, "busy VRs' shares: {sent:?}");
    }

    #[test]
    fn each_queue_stays_in_order_and_nothing_is_lost() {
        let mut s = sched(&[&[(3, 64), (1, 64)], &[(2, 64)]]);
        for i in 0..50 {
            for q in 0..3 {
                assert!(s.enqueue(QueueId(q), (q, i), 64 + 29 * i).is_ok());
            }
        }
        let mut out = Vec::with_capacity(150);
        while s.dequeue_batch(0, &mut out, 7) > 0 {}
        assert!(s.is_empty());
        assert_eq!(out.len(), 150);
        for q in 0..3 {
            let seqs: Vec<u32> = out.iter().filter(|p| p.0 == q).map(|p| p.1).collect();
            assert_eq!(seqs, (0..50).collect::<Vec<_>>());
            assert_eq!(s.stats(QueueId(q)).sent_packets, 50);
        }
    }

    #[test]
    fn an_idle_queue_leaves_its_share_inside_its_vr() {
        // VR 0 weighs 1 + 1 = 2, VR 1 weighs 2; only one of VR 0's queues has traffic.
        let mut s = sched(&[&[(1, 64), (1, 64)], &[(2, 64)]]);
        let mut out = Vec::with_capacity(32);
        for _ in 0..1_000 {
            for q in [0, 2] {
                while s.stats(QueueId(q)).backlog_packets < 64 {
                    assert!(s.enqueue(QueueId(q), (q, 0), 1_000).is_ok());
                }
            }
            out.clear();
            s.dequeue_batch(0, &mut out, 32);
        }
        let (busy, other) = (s.stats(QueueId(0)).sent_bytes, s.stats(QueueId(2)).sent_bytes);
        assert!(busy.abs_diff(other) <= 2 * 2 * MIN_QUANTUM_BYTES, "{busy} vs {other}");
    }

    #[test]
    fn frames_larger_than_a_quantum_still_leave() {
        let mut s = sched(&[&[(1, 4)], &[(1, 4)]]);
        assert!(s.enqueue(QueueId(0), (0, 0), 9_000).is_ok());
        assert!(s.enqueue(QueueId(1), (1, 0), 9_000).is_ok());
        let mut out = Vec::new();
        assert_eq!(s.dequeue_batch(0, &mut out, 32), 2);
    }

    #[test]
    fn drain_returns_every_queued_packet_and_resets() {
        let mut s = sched(&[&[(1, 4), (1, 4)], &[(1, 4)]]);
        for q in 0..3 {
            assert!(s.enqueue(QueueId(q), (q, 0), 100).is_ok());
        }
        let mut out = Vec::new();
        s.drain(&mut out);
        assert_eq!(out.len(), 3);
        assert!(s.is_empty());
        assert_eq!(s.stats(QueueId(1)).backlog_packets, 0);
        assert!(s.enqueue(QueueId(1), (1, 1), 100).is_ok());
        out.clear();
        assert_eq!(s.dequeue_batch(0, &mut out, 32), 1);
        assert_eq!(out, [(1, 1)]);
    }

    #[test]
    fn setters_reject_bad_values() {
        let mut s = sched(&[&[(1, 4)]]);
        assert_eq!(s.set_weight(QueueId(0), 0).unwrap_err().field, "queues[0].weight");
        assert!(s.set_weight(QueueId(1), 1).is_err());
        assert!(s.set_vr_rate(VrClassId(1), None, 0).is_err());
        assert!(s.set_vr_rate(VrClassId(0), Some(RateLimit::new(0)), 0).is_err());
        assert!(s.set_port_rate(Some(RateLimit::with_burst(1, 0)), 0).is_err());
        assert!(s.set_port_rate(Some(RateLimit::new(1_000_000)), 0).is_ok());
    }
}
