//! The output side the pipeline enqueues into: one scheduler per port for a worker, and the
//! readers' mirror of their queues' statistics.

use crate::counters::Counter;
use crate::packet::Packet;
use crate::sched::{PortScheduler, QueueId, QueueStats};

/// Where forwarded packets go: the worker's output schedulers.
pub trait OutputSink {
    /// Queues `run` (emptied) for `port` in queue `queue` of VR `vr`, in order; what a full
    /// queue, or a port the VR may not send on, refuses goes to `refused`.
    fn enqueue_run(&mut self, port: u16, vr: u16, queue: u16, run: &mut Vec<Packet>, refused: &mut Vec<Packet>);

    /// Starts loading what queueing for `port` in queue `queue` of VR `vr` reads first; once
    /// that has arrived, `prefetch_tail` follows it to the slot the packet will be written to.
    fn prefetch_queue(&self, port: u16, vr: u16, queue: u16);
    fn prefetch_tail(&self, port: u16, vr: u16, queue: u16);
}

/// Queue statistics mirrored for readers: `[port][queue]`, written by the worker that owns the
/// scheduler after each output round.
pub struct QueueCounters {
    pub ports: Vec<Vec<QueueMirror>>,
}

/// A queue's totals for readers: the scheduler's own statistics plus what earlier schedulers
/// of the same VR queue counted before a reconfiguration replaced them.
#[derive(Default)]
pub struct QueueMirror {
    pub enqueued_packets: Counter,
    pub sent_packets: Counter,
    pub sent_bytes: Counter,
    pub dropped_packets: Counter,
    pub backlog_packets: Counter,
    base: [Counter; 4],
}

impl QueueMirror {
    pub(crate) fn copy(&self, s: &QueueStats) {
        self.enqueued_packets.set(self.base[0].get() + s.enqueued_packets);
        self.sent_packets.set(self.base[1].get() + s.sent_packets);
        self.sent_bytes.set(self.base[2].get() + s.sent_bytes);
        self.dropped_packets.set(self.base[3].get() + s.dropped_packets);
        self.backlog_packets.set(s.backlog_packets);
    }

    /// Starts this (new) mirror from `old`'s totals.
    pub fn carry_from(&self, old: &QueueMirror) {
        for (b, c) in self.base.iter().zip([&old.enqueued_packets, &old.sent_packets, &old.sent_bytes, &old.dropped_packets]) {
            b.set(c.get());
        }
        self.enqueued_packets.set(old.enqueued_packets.get());
        self.sent_packets.set(old.sent_packets.get());
        self.sent_bytes.set(old.sent_bytes.get());
        self.dropped_packets.set(old.dropped_packets.get());
    }
}

/// The output side the pipeline enqueues into: one scheduler per port, and for each port the
/// first scheduler queue of every VR sending out of it.
pub struct Schedulers {
    pub ports: Vec<PortScheduler<Packet>>,
    /// `[port][vr]`: the VR's queue 0 on that port, if the VR may send there.
    pub first_queue: Vec<Vec<Option<u32>>>,
    /// `[vr]`: how many queues the VR has (on every port).
    pub queues_per_vr: Vec<u32>,
}

impl Schedulers {
    /// The scheduler queue of VR `vr`'s queue `queue` on `port`, if the VR may send there (a
    /// VR program may name a port the node does not have).
    #[inline]
    fn queue_of(&self, port: u16, vr: u16, queue: u16) -> Option<QueueId> {
        let first = (*self.first_queue.get(port as usize)?.get(vr as usize)?)?;
        (u32::from(queue) < *self.queues_per_vr.get(vr as usize)?).then(|| QueueId(first + u32::from(queue)))
    }

    /// Queues one packet; a full queue, or a VR that may not send on `port`, hands it back.
    pub fn enqueue(&mut self, port: u16, vr: u16, queue: u16, packet: Packet) -> Result<(), Packet> {
        match self.queue_of(port, vr, queue) {
            Some(q) => {
                let len = packet.len() as u32;
                self.ports[port as usize].enqueue(q, packet, len)
            }
            None => Err(packet),
        }
    }
}

impl OutputSink for Schedulers {
    #[inline]
    fn enqueue_run(&mut self, port: u16, vr: u16, queue: u16, run: &mut Vec<Packet>, refused: &mut Vec<Packet>) {
        match self.queue_of(port, vr, queue) {
            Some(q) => self.ports[port as usize].enqueue_run(q, run, |p| p.len() as u32, refused),
            None => refused.append(run),
        }
    }

    #[inline]
    fn prefetch_queue(&self, port: u16, vr: u16, queue: u16) {
        if let (Some(q), Some(sched)) = (self.queue_of(port, vr, queue), self.ports.get(port as usize)) {
            sched.prefetch_queue(q);
        }
    }

    #[inline]
    fn prefetch_tail(&self, port: u16, vr: u16, queue: u16) {
        if let (Some(q), Some(sched)) = (self.queue_of(port, vr, queue), self.ports.get(port as usize)) {
            sched.prefetch_tail(q);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetching_for_a_port_or_vr_the_node_lacks_is_harmless() {
        let s = Schedulers { ports: Vec::new(), first_queue: vec![vec![Some(0)]], queues_per_vr: vec![1] };
        for (port, vr, queue) in [(0, 0, 0), (0, 0, 1), (0, 9, 0), (7, 0, 0), (u16::MAX, u16::MAX, u16::MAX)] {
            s.prefetch_queue(port, vr, queue);
            s.prefetch_tail(port, vr, queue);
        }
    }
}
