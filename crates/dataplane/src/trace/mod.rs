//! Packet trace: the next N packets of one VR (optionally of one port, optionally matching a
//! classifier rule) followed through every stage of the pipeline — port, extract result,
//! classifier verdict, program decision, route, and where the packet went: out of a port's
//! queue, to the VR's kernel, or dropped and why.
//!
//! Armed, a trace rides on the worker's taps (`capture::Taps`), whose one "any tap?" test the
//! pipeline already makes: unarmed, a trace costs the pipeline nothing it did not already do.
//! Armed, the pipeline calls one entry point per stage (`points.rs`) once per batch, and the
//! action stage's few exits note each packet's end through the taps' existing per-packet test.
//! Packets are followed by their buffer (`Packet::buffer_id`), which stays theirs whatever the
//! stages reorder. Memory is bounded: each worker's marks are allocated when the trace is made
//! (one batch), and the records go through one bounded channel, as deep as the trace is long,
//! into which the workers together put at most `count` records (tickets drawn from one
//! counter), so no send ever waits or fails for room.
//!
//! A packet queued out of a port is followed past the queue: its record waits (bounded, in
//! `tx.rs`) until the worker transmits the packet's batch and is sent with what the port did.

mod points;
mod record;
mod tx;

pub use record::{Outcome, Record, Traced, Tx, Verdict, SNAP};

use crate::batch::RX_BATCH;
use pearl_wire::FlowKey;
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

/// The most packets one trace follows.
pub const MAX_COUNT: usize = 10_000;

/// How long a queued packet's record waits for its port's transmit before it goes without.
pub const AWAIT_TX_NS: u64 = 200_000_000;

/// Queued packets whose transmit one worker's trace waits for at once; past these, a record
/// goes without its transmit result.
const AWAITING: usize = 4 * RX_BATCH;

/// What to trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceSpec {
    pub vr: u16,
    /// Only frames received on this port.
    pub port: Option<u16>,
    /// Only frames whose flow key matches this value/mask (a classifier rule's).
    pub filter: Option<(FlowKey, FlowKey)>,
    /// How many packets, at most `MAX_COUNT`.
    pub count: usize,
}

/// One worker's part of a trace.
pub struct Trace {
    id: u64,
    spec: TraceSpec,
    worker: u16,
    /// Packets the trace may still take, shared by the workers.
    left: Arc<AtomicUsize>,
    out: SyncSender<Traced>,
    /// The batch's packets under trace, by buffer.
    marks: Vec<Mark>,
    batch_ns: u64,
    /// Packets queued out of a port, waiting for the worker to transmit them.
    awaiting: Vec<Mark>,
    /// In the transmit batch being sent: (index into `awaiting`, position in the batch).
    in_tx: Vec<(usize, usize)>,
}

struct Mark {
    buffer: usize,
    traced: Traced,
    /// Whether it is one the trace takes (decided at classification).
    taken: bool,
}

impl Trace {
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The VR traced.
    pub fn vr(&self) -> u16 {
        self.spec.vr
    }
}

/// The reading end of a trace.
pub struct TraceReader {
    pub id: u64,
    pub records: Receiver<Traced>,
}

/// Makes trace `id` for `workers` workers: each worker's part (in worker order), and the
/// reading end.
pub fn trace_parts(id: u64, spec: TraceSpec, workers: usize) -> (Vec<Box<Trace>>, TraceReader) {
    let spec = TraceSpec { count: spec.count.clamp(1, MAX_COUNT), ..spec };
    let (tx, rx) = sync_channel(spec.count);
    let left = Arc::new(AtomicUsize::new(spec.count));
    let parts = (0..workers)
        .map(|w| {
            Box::new(Trace {
                id,
                spec,
                worker: w as u16,
                left: Arc::clone(&left),
                out: tx.clone(),
                marks: Vec::with_capacity(RX_BATCH),
                batch_ns: 0,
                awaiting: Vec::with_capacity(AWAITING),
                in_tx: Vec::with_capacity(AWAITING),
            })
        })
        .collect();
    (parts, TraceReader { id, records: rx })
}
