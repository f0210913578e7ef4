//! The trace past the output queue: a record of a packet queued out of a port waits here until
//! the worker hands the packet's batch to the port, and leaves with what the port did with it.
//! The worker asks only while some record waits (`awaits_tx`), so a trace that is not armed, or
//! has nothing queued, costs its transmit nothing.

use super::record::{Outcome, Tx};
use super::{Trace, AWAIT_TX_NS};
use crate::packet::Packet;
use crate::port::tx_offload::Transmitted;
use std::time::{SystemTime, UNIX_EPOCH};

impl Trace {
    /// Whether a traced packet waits in a queue for its transmit.
    #[inline]
    pub fn awaits_tx(&self) -> bool {
        !self.awaiting.is_empty()
    }

    /// `batch` is about to be handed to `port`: notes where in it the waiting packets are.
    #[inline(never)]
    pub fn before_tx(&mut self, port: u16, batch: &[Packet]) {
        self.in_tx.clear();
        for (i, m) in self.awaiting.iter().enumerate() {
            if !matches!(m.traced.record.outcome, Some(Outcome::Out { port: p, .. }) if p == port) {
                continue;
            }
            if let Some(at) = batch.iter().position(|p| p.buffer_id() == m.buffer) {
                self.in_tx.push((i, at));
            }
        }
    }

    /// The batch of `before_tx` was transmitted with result `t` (`handed_whole`: the port got
    /// the batch's frames as they were, in order): its waiting packets' records go.
    #[inline(never)]
    pub fn after_tx(&mut self, t: Transmitted, handed_whole: bool) {
        let (taken, handed) = (t.sent.min(usize::from(u16::MAX)) as u16, t.handed.min(usize::from(u16::MAX)) as u16);
        self.settle(|at| {
            if t.sent == t.handed && t.dropped == 0 {
                Tx::Sent
            } else if !handed_whole {
                Tx::Partly { taken, handed }
            } else if at < t.sent {
                // A port takes its batch from the front: what it could not take is the tail.
                Tx::Sent
            } else {
                Tx::PortRefused { taken, handed }
            }
        });
    }

    /// The batch of `before_tx` was dropped: its port's interface is gone.
    #[inline(never)]
    pub fn tx_gone(&mut self) {
        self.settle(|_| Tx::PortGone);
    }

    /// Gives the packets in `in_tx` their result and sends their records.
    fn settle(&mut self, result: impl Fn(usize) -> Tx) {
        // `in_tx` is in `awaiting`'s order: taken from the back, each removal leaves the
        // indices still to come in place.
        while let Some((i, at)) = self.in_tx.pop() {
            let mut m = self.awaiting.swap_remove(i);
            m.traced.record.tx = Some(result(at));
            let _ = self.out.try_send(m.traced);
        }
    }

    /// Sends, without a transmit result, the records that waited longer than `AWAIT_TX_NS`:
    /// their buffers may by now carry other packets.
    pub(super) fn give_up_waiting(&mut self) {
        if self.awaiting.is_empty() {
            return;
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let mut i = 0;
        while i < self.awaiting.len() {
            if self.awaiting[i].traced.record.time_ns + AWAIT_TX_NS < now {
                let mut m = self.awaiting.swap_remove(i);
                m.traced.record.tx = Some(Tx::NotSeen);
                let _ = self.out.try_send(m.traced);
            } else {
                i += 1;
            }
        }
    }
}
