//! Packet capture at a chosen point of one VR's path, while forwarding goes on: each worker
//! copies the matching frames into a ring of its own (never blocking: a full ring drops the
//! copy and counts it), and the reader drains the rings into a pcap.

use crate::slowpath::{frame_ring, FrameConsumer, FrameMeta, FrameProducer};
use crate::trace::{Outcome, Trace};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Frames a worker's capture ring holds before copies are dropped.
const TAP_DEPTH: usize = 1024;

/// Where on a VR's path frames are captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapturePoint {
    /// As received and claimed by the VR (before any rewrite).
    Rx,
    /// As sent out of a port (after the rewrite), forwarded or from the VR's kernel.
    Tx,
    /// Between the fast path and the VR's kernel, both ways.
    Slow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TapSpec {
    pub vr: u16,
    pub point: CapturePoint,
    /// Only frames received on (Rx, Slow to the kernel) or sent from (Tx, Slow from the
    /// kernel) this port.
    pub port: Option<u16>,
}

/// What a worker is told.
pub enum TapCommand {
    Start {
        id: u64,
        spec: TapSpec,
        ring: FrameProducer,
        dropped: Arc<AtomicU64>,
    },
    Stop {
        id: u64,
    },
    /// A packet trace (`trace/`), which rides on the taps' one test.
    Trace(Box<Trace>),
    Untrace {
        id: u64,
    },
}

struct Tap {
    id: u64,
    spec: TapSpec,
    ring: FrameProducer,
    dropped: Arc<AtomicU64>,
}

/// A worker's active taps and packet trace; none almost always, which costs one branch per
/// stage.
#[derive(Default)]
pub struct Taps {
    taps: Vec<Tap>,
    trace: Option<Box<Trace>>,
    /// Either of them: the one word the per-packet test reads.
    any: bool,
}

impl Taps {
    pub fn apply(&mut self, cmd: TapCommand) {
        match cmd {
            TapCommand::Start { id, spec, ring, dropped } => self.taps.push(Tap { id, spec, ring, dropped }),
            TapCommand::Stop { id } => self.taps.retain(|t| t.id != id),
            TapCommand::Trace(t) => self.trace = Some(t),
            TapCommand::Untrace { id } => {
                if self.trace.as_ref().is_some_and(|t| t.id() == id) {
                    self.trace = None;
                }
            }
        }
        self.any = !self.taps.is_empty() || self.trace.is_some();
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        !self.any
    }

    /// The armed packet trace, if any.
    #[inline]
    pub fn trace(&mut self) -> Option<&mut Trace> {
        self.trace.as_deref_mut()
    }

    /// Tells an armed trace where the packet in `buffer` ended. Out of line: the forwarding
    /// loops that call it keep their size whether a trace is compiled in or not.
    #[cold]
    #[inline(never)]
    pub fn note(&mut self, buffer: usize, outcome: Outcome) {
        if let Some(t) = self.trace.as_deref_mut() {
            t.note(buffer, outcome);
        }
    }

    /// Tells an armed trace that the packet in `buffer` was offered to the kernel's flow offload.
    #[cold]
    #[inline(never)]
    pub fn note_offloaded(&mut self, buffer: usize) {
        if let Some(t) = self.trace.as_deref_mut() {
            t.offloaded(buffer);
        }
    }

    /// Tells an armed trace that the packet in `frame`'s buffer left for (port, queue) `to`.
    #[cold]
    #[inline(never)]
    pub fn note_out(&mut self, buffer: usize, (port, queue): (u16, u16), frame: &[u8]) {
        let dst = frame.get(..6).and_then(|d| d.try_into().ok()).unwrap_or_default();
        self.note(buffer, Outcome::Out { port, queue, dst });
    }

    /// Offers a frame seen at `point` for VR `vr` on `port`.
    #[inline]
    pub fn offer(&mut self, point: CapturePoint, vr: u16, port: u16, frame: &[u8]) {
        for t in self.taps.iter_mut() {
            if t.spec.point == point && t.spec.vr == vr && t.spec.port.is_none_or(|p| p == port) {
                let meta = FrameMeta { vr, port, reason: None, offload: pearl_wire::Offload::default() };
                if !t.ring.push(meta, frame) {
                    t.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Publishes what was offered since the last flush (once per batch).
    pub fn flush(&mut self) {
        for t in self.taps.iter_mut() {
            t.ring.flush();
        }
        if let Some(t) = self.trace.as_deref_mut() {
            t.flush();
        }
    }
}

/// The reading end of a capture: one ring per worker.
pub struct CaptureRings {
    pub id: u64,
    pub rings: Vec<FrameConsumer>,
    /// Copies the workers dropped because a ring was full.
    pub dropped: Arc<AtomicU64>,
}

/// Makes the rings of capture `id` for `workers` workers: the commands to send each worker,
/// and the reading end.
pub fn tap_rings(id: u64, spec: TapSpec, workers: usize) -> std::io::Result<(Vec<TapCommand>, CaptureRings)> {
    let dropped = Arc::new(AtomicU64::new(0));
    let mut commands = Vec::new();
    let mut rings = Vec::new();
    for _ in 0..workers {
        let (tx, rx) = frame_ring(TAP_DEPTH)?;
        commands.push(TapCommand::Start { id, spec, ring: tx, dropped: Arc::clone(&dropped) });
        rings.push(rx);
    }
    Ok((commands, CaptureRings { id, rings, dropped }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_chosen_vr_point_and_port_are_captured() {
        let (mut cmds, mut rx) = tap_rings(1, TapSpec { vr: 3, point: CapturePoint::Tx, port: Some(1) }, 1).unwrap();
        let mut taps = Taps::default();
        taps.apply(cmds.remove(0));
        taps.offer(CapturePoint::Tx, 3, 1, b"yes");
        taps.offer(CapturePoint::Rx, 3, 1, b"wrong point");
        taps.offer(CapturePoint::Tx, 4, 1, b"wrong vr");
        taps.offer(CapturePoint::Tx, 3, 0, b"wrong port");
        taps.flush();
        let mut seen = Vec::new();
        rx.rings[0].drain(usize::MAX, |_, f| seen.push(f.to_vec()));
        assert_eq!(seen, vec![b"yes".to_vec()]);
        taps.apply(TapCommand::Stop { id: 1 });
        assert!(taps.is_empty());
    }
}
