//! Forwarded packets handed to the output a run at a time: consecutive packets for one
//! (port, VR, queue) go in one `OutputSink::enqueue_run`.

use super::action::Actions;
use crate::capture::{CapturePoint, Taps};
use crate::counters::WorkerCounters;
use crate::output::OutputSink;
use crate::packet::{Packet, PacketPool};
use crate::trace::Outcome;

impl<O: OutputSink> Actions<'_, '_, O> {
    /// Shows a packet leaving for `to` (port, VR, queue) to the captures and gathers it.
    #[inline(always)]
    pub(super) fn leave(&mut self, p: Packet, to: (u16, u16, u16)) {
        if !self.taps.is_empty() {
            self.taps.offer(CapturePoint::Tx, to.1, to.0, p.data());
            self.taps.note_out(p.buffer_id(), (to.0, to.2), p.data());
        }
        self.gather(p, to);
    }

    /// Adds a packet leaving for `to` (port, VR, queue) to the run being gathered, handing the
    /// run before it to the output first if that one went elsewhere.
    #[inline(always)]
    fn gather(&mut self, p: Packet, to: (u16, u16, u16)) {
        if to != self.run_to && !self.run.is_empty() {
            send_run(self.out, self.run_to, self.run, self.refused, self.counters, self.pool, self.taps);
        }
        self.run_to = to;
        self.run.push(p);
    }

    /// Hands the batch's last run to the output.
    pub(super) fn flush(&mut self) {
        if !self.run.is_empty() {
            send_run(self.out, self.run_to, self.run, self.refused, self.counters, self.pool, self.taps);
        }
    }
}

/// Hands a run of forwarded packets to the output and counts what it took and refused.
#[inline]
fn send_run(
    out: &mut impl OutputSink,
    (port, vr, queue): (u16, u16, u16),
    run: &mut Vec<Packet>,
    refused: &mut Vec<Packet>,
    counters: &WorkerCounters,
    pool: &mut PacketPool,
    taps: &mut Taps,
) {
    let c = &counters.vrs[vr as usize];
    let (packets, bytes) = (run.len() as u64, run.iter().map(|p| p.len() as u64).sum::<u64>());
    out.enqueue_run(port, vr, queue, run, refused);
    if !refused.is_empty() && !taps.is_empty() {
        note_refused(taps, refused, (port, queue));
    }
    let (mut refused_packets, mut refused_bytes) = (0, 0);
    for p in refused.drain(..) {
        refused_packets += 1;
        refused_bytes += p.len() as u64;
        pool.give(p);
    }
    if refused_packets > 0 {
        c.queue_drops.add(refused_packets);
    }
    c.forwarded_packets.add(packets - refused_packets);
    c.forwarded_bytes.add(bytes - refused_bytes);
}

/// Tells an armed trace which packets a full queue refused.
#[cold]
#[inline(never)]
fn note_refused(taps: &mut Taps, refused: &[Packet], (port, queue): (u16, u16)) {
    for p in refused {
        taps.note(p.buffer_id(), Outcome::Refused { port, queue });
    }
}
