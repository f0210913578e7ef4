//! One output queue: a bounded FIFO of packets with its counters.

use super::ring::Ring;

/// A queue's counters. Plain integers: a scheduler belongs to one worker, which copies them
/// out when asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub enqueued_packets: u64,
    pub enqueued_bytes: u64,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    /// Tail drops: the queue was full when the packet arrived.
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    pub backlog_packets: u64,
    pub backlog_bytes: u64,
}

struct Queued<P> {
    pkt: P,
    wire_len: u32,
}

/// The counts first: a packet that passes the queue without waiting touches them alone, and
/// the scheduler puts them on one line with its own flags (`QueueSlot`).
#[repr(C)]
pub(super) struct PacketQueue<P> {
    counts: Counts,
    ring: Ring<Queued<P>>,
    /// Bytes taken out by `drain_into` (neither sent nor dropped).
    drained_bytes: u64,
}

/// Every field of [`QueueStats`] but the backlog, which follows from the others when asked for.
#[derive(Clone, Copy, Default)]
struct Counts {
    enqueued_packets: u64,
    enqueued_bytes: u64,
    sent_packets: u64,
    sent_bytes: u64,
    dropped_packets: u64,
    dropped_bytes: u64,
}

/// Where the counts end in any queue: they come first, whatever the packet type.
#[cfg(test)]
pub(super) const COUNTS_END: usize = core::mem::offset_of!(PacketQueue<u8>, counts) + core::mem::size_of::<Counts>();

impl<P> PacketQueue<P> {
    pub(super) fn new(length: usize) -> PacketQueue<P> {
        PacketQueue { counts: Counts::default(), ring: Ring::lazy(length), drained_bytes: 0 }
    }

    /// Appends a packet, or tail-drops it (counted) and hands it back.
    #[inline]
    pub(super) fn push(&mut self, pkt: P, wire_len: u32) -> Result<(), P> {
        let bytes = u64::from(wire_len);
        match self.ring.push_back(Queued { pkt, wire_len }) {
            Ok(()) => {
                self.counts.enqueued_packets += 1;
                self.counts.enqueued_bytes += bytes;
                Ok(())
            }
            Err(q) => {
                self.counts.dropped_packets += 1;
                self.counts.dropped_bytes += bytes;
                Err(q.pkt)
            }
        }
    }

    /// The wire length of the packet at the head.
    #[inline]
    pub(super) fn head_len(&self) -> Option<u32> {
        self.ring.front().map(|q| q.wire_len)
    }

    /// Counts a packet that went out without waiting here as enqueued and sent.
    #[inline]
    pub(super) fn count_passed(&mut self, wire_len: u32) {
        let bytes = u64::from(wire_len);
        self.counts.enqueued_packets += 1;
        self.counts.enqueued_bytes += bytes;
        self.counts.sent_packets += 1;
        self.counts.sent_bytes += bytes;
    }

    /// Removes the head packet and counts it as sent.
    #[inline]
    pub(super) fn pop_sent(&mut self) -> Option<P> {
        let q = self.ring.pop_front()?;
        let bytes = u64::from(q.wire_len);
        self.counts.sent_packets += 1;
        self.counts.sent_bytes += bytes;
        Some(q.pkt)
    }

    /// Removes every packet without counting it as sent (reconfiguration, shutdown).
    pub(super) fn drain_into(&mut self, out: &mut Vec<P>) {
        while let Some(q) = self.ring.pop_front() {
            self.drained_bytes += u64::from(q.wire_len);
            out.push(q.pkt);
        }
    }

    #[inline(always)]
    pub(super) fn prefetch_tail(&self) {
        self.ring.prefetch_tail();
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Whether the queue holds exactly one packet: it just became backlogged.
    #[inline]
    pub(super) fn has_one(&self) -> bool {
        self.ring.len() == 1
    }

    pub(super) fn stats(&self) -> QueueStats {
        let c = self.counts;
        QueueStats {
            enqueued_packets: c.enqueued_packets,
            enqueued_bytes: c.enqueued_bytes,
            sent_packets: c.sent_packets,
            sent_bytes: c.sent_bytes,
            dropped_packets: c.dropped_packets,
            dropped_bytes: c.dropped_bytes,
            backlog_packets: self.ring.len() as u64,
            backlog_bytes: c.enqueued_bytes - c.sent_bytes - self.drained_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_enters_leaves_and_overflows() {
        let mut q = PacketQueue::new(2);
        assert!(q.push('a', 100).is_ok());
        assert!(q.push('b', 200).is_ok());
        assert_eq!(q.push('c', 300), Err('c'));
        assert_eq!(q.head_len(), Some(100));
        assert_eq!(q.pop_sent(), Some('a'));
        let s = q.stats();
        assert_eq!((s.enqueued_packets, s.enqueued_bytes), (2, 300));
        assert_eq!((s.sent_packets, s.sent_bytes), (1, 100));
        assert_eq!((s.dropped_packets, s.dropped_bytes), (1, 300));
        assert_eq!((s.backlog_packets, s.backlog_bytes), (1, 200));
        let mut out = Vec::new();
        q.drain_into(&mut out);
        assert_eq!(out, ['b']);
        let s = q.stats();
        assert_eq!((s.backlog_packets, s.backlog_bytes), (0, 0), "drained packets leave no backlog");
        assert_eq!((s.sent_packets, s.dropped_packets), (1, 1), "nor count as sent or dropped");
    }
}
