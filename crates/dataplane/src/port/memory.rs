//! An in-memory port for tests and benchmarks.
//!
//! Rx behaves like a NIC's rx ring that never runs dry: every batch receives fresh copies of the
//! configured frames, taken in turn and starting over after the last, copied into pool buffers so
//! the pipeline pays for the copy and the buffer cycling it would pay on a real port. Tx counts
//! what it is given and can keep the last few frames in a bounded, preallocated capture ring so a
//! test can look at them without the port allocating on the hot path.

use super::Port;
use crate::packet::{Packet, PacketPool, BUF_SIZE};
use crate::prefetch::prefetch_bytes;
use std::io;

/// How many frames ahead rx fetches the trace.
const PREFETCH_AHEAD: usize = 8;

/// One configured frame: where it sits in the trace, and the port index it is stamped with
/// when received.
struct Template {
    at: usize,
    len: usize,
    in_port: u16,
}

/// Frames of a trace start on cache-line boundaries, as a NIC's DMA buffers do, so a
/// minimum-size frame is one line to fetch, not two.
const LINE: usize = 64;

/// A frame sink that keeps the most recent frames in fixed buffers.
struct CaptureRing {
    /// One BUF_SIZE slot per frame, back to back.
    bufs: Box<[u8]>,
    lens: Vec<usize>,
    /// Where the next frame goes.
    next: usize,
    /// How many slots hold a frame (saturates at the capacity).
    filled: usize,
}

impl CaptureRing {
    fn new(capacity: usize) -> CaptureRing {
        CaptureRing { bufs: vec![0; capacity * BUF_SIZE].into_boxed_slice(), lens: vec![0; capacity], next: 0, filled: 0 }
    }

    fn push(&mut self, frame: &[u8]) {
        let n = frame.len().min(BUF_SIZE);
        let at = self.next * BUF_SIZE;
        self.bufs[at..at + n].copy_from_slice(&frame[..n]);
        self.lens[self.next] = n;
        self.next = (self.next + 1) % self.lens.len();
        self.filled = (self.filled + 1).min(self.lens.len());
    }

    /// Oldest first.
    fn frames(&self) -> impl Iterator<Item = &[u8]> {
        let cap = self.lens.len();
        let first = (self.next + cap - self.filled) % cap;
        (0..self.filled).map(move |i| {
            let slot = (first + i) % cap;
            &self.bufs[slot * BUF_SIZE..slot * BUF_SIZE + self.lens[slot]]
        })
    }
}

/// Frame and byte counts of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryCounters {
    pub packets: u64,
    pub bytes: u64,
}

/// A port whose rx replays a fixed list of frames forever and whose tx counts (and optionally
/// captures) what it is sent.
pub struct MemoryPort {
    templates: Vec<Template>,
    /// The frames, back to back at `LINE`-aligned addresses.
    trace: Box<[u8]>,
    next: usize,
    capture: Option<CaptureRing>,
    rx: MemoryCounters,
    tx: MemoryCounters,
}

impl MemoryPort {
    /// A port replaying `frames` in order, each stamped with `in_port` 0. Frames longer than a
    /// packet buffer are cut to `BUF_SIZE`. An empty list gives a port that never receives.
    pub fn new<F: AsRef<[u8]>>(frames: impl IntoIterator<Item = F>) -> MemoryPort {
        MemoryPort::with_in_ports(frames.into_iter().map(|f| (0, f)))
    }

    /// A port replaying `(in_port, frame)` pairs: each received copy carries its own port index,
    /// so one memory port can stand for traffic arriving on several ports.
    pub fn with_in_ports<F: AsRef<[u8]>>(frames: impl IntoIterator<Item = (u16, F)>) -> MemoryPort {
        let mut trace = Vec::new();
        let mut templates: Vec<Template> = frames
            .into_iter()
            .map(|(in_port, f)| {
                let f = f.as_ref();
                let len = f.len().min(BUF_SIZE);
                let at = trace.len().next_multiple_of(LINE);
                trace.resize(at, 0);
                trace.extend_from_slice(&f[..len]);
                Template { at, len, in_port }
            })
            .collect();
        // Over-allocated by a line so the aligned start below always fits.
        let mut aligned = vec![0u8; trace.len() + LINE].into_boxed_slice();
        let shift = aligned.as_ptr().align_offset(LINE);
        aligned[shift..shift + trace.len()].copy_from_slice(&trace);
        for t in &mut templates {
            t.at += shift;
        }
        MemoryPort { templates, trace: aligned, next: 0, capture: None, rx: MemoryCounters::default(), tx: MemoryCounters::default() }
    }

    /// Stamps every configured frame with `in_port`.
    pub fn stamp_in_port(mut self, in_port: u16) -> MemoryPort {
        for t in &mut self.templates {
            t.in_port = in_port;
        }
        self
    }

    /// Keeps copies of the last `frames` transmitted frames (buffers allocated here, once).
    /// Without it tx only counts.
    pub fn capture_last(mut self, frames: usize) -> MemoryPort {
        self.capture = (frames > 0).then(|| CaptureRing::new(frames));
        self
    }

    /// The captured frames, oldest first; empty when capture is off.
    pub fn captured(&self) -> impl Iterator<Item = &[u8]> {
        self.capture.iter().flat_map(|c| c.frames())
    }

    pub fn rx_counters(&self) -> MemoryCounters {
        self.rx
    }

    pub fn tx_counters(&self) -> MemoryCounters {
        self.tx
    }
}

impl Port for MemoryPort {
    fn rx_batch(&mut self, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        if self.templates.is_empty() {
            return Ok(0);
        }
        let mut n = 0;
        while n < max {
            let Some(mut p) = pool.take() else { break };
            // Fetch a later frame ahead, as a NIC's descriptor ring lets a driver do: replaying
            // a trace larger than the caches would otherwise stall on every frame.
            let mut ahead = self.next + PREFETCH_AHEAD;
            if ahead >= self.templates.len() {
                ahead %= self.templates.len(); // only near the end of the trace
            }
            let ahead = &self.templates[ahead];
            prefetch_bytes(self.trace[ahead.at..].as_ptr(), ahead.len);
            let t = &self.templates[self.next];
            p.fill(&self.trace[t.at..t.at + t.len]);
            p.in_port = t.in_port;
            self.rx.bytes += t.len as u64;
            out.push(p);
            n += 1;
            self.next += 1;
            if self.next == self.templates.len() {
                self.next = 0;
            }
        }
        self.rx.packets += n as u64;
        Ok(n)
    }

    fn tx_batch(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> io::Result<usize> {
        let n = batch.len();
        for p in batch.drain(..) {
            self.tx.bytes += p.len() as u64;
            if let Some(c) = &mut self.capture {
                c.push(p.data());
            }
            pool.give(p);
        }
        self.tx.packets += n as u64;
        Ok(n)
    }
}
