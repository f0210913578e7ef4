//! What a trace tells of one packet: a record filled stage by stage, and the first bytes of the
//! frame as it arrived.

use crate::counters::{Exception, VrDrop};
use crate::program::Decision;
use pearl_wire::FlowKey;

/// Bytes of each traced frame kept: every header the pipeline reads, and then some.
pub const SNAP: usize = 256;

/// One packet's way through the pipeline; a stage the packet never reached stays `None`.
#[derive(Debug, Clone, Copy)]
pub struct Record {
    /// Wall-clock time of the packet's batch, nanoseconds since the Unix epoch.
    pub time_ns: u64,
    /// The worker that ran it.
    pub worker: u16,
    pub in_port: u16,
    pub len: u32,
    /// Why the extractor refused the frame (a `WireError` reason), if it did.
    pub malformed: Option<&'static str>,
    /// The flow key the classifier saw (extracted from the whole frame, not the snapshot).
    pub key: Option<FlowKey>,
    pub verdict: Option<Verdict>,
    /// What the VR's program decided.
    pub program: Option<Decision>,
    /// The decision once the lookup and source stages answered (a route's next hop, a miss, a
    /// refused source), and the VR whose tables routed it (another's for a leaked prefix).
    pub routed: Option<(Decision, u16)>,
    /// Offered to the kernel's flow offload: its flow's later frames bypass the pipeline.
    pub offloaded: bool,
    pub outcome: Option<Outcome>,
    /// For a packet queued out of a port: what the port made of it when the worker transmitted.
    pub tx: Option<Tx>,
}

/// The classifier's answer: the VR, which of its `match` rules claimed the frame (none: its
/// interface MAC did), and the VR queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub vr: u16,
    pub rule: Option<usize>,
    pub queue: u32,
}

/// Where the packet's way through the fast path ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Queued out of `port` with destination MAC `dst`.
    Out {
        port: u16,
        queue: u16,
        dst: [u8; 6],
    },
    /// The output queue was full.
    Refused {
        port: u16,
        queue: u16,
    },
    /// Onto the VR's slow-path channel, to its TAP and kernel.
    Kernel(Exception),
    Dropped(VrDrop),
    /// No VR claimed it: unicast to a MAC nobody has (dropped), or multicast copied to the VRs
    /// of the port.
    Unclaimed {
        multicast: bool,
    },
    /// Malformed: dropped before classification.
    Malformed,
}

/// What became of a queued packet at its port's transmit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tx {
    /// The port took it.
    Sent,
    /// The port took only the first `taken` of the `handed` frames of its batch (its ring was
    /// full, or the send failed), this one not among them.
    PortRefused { taken: u16, handed: u16 },
    /// Its batch was cut or finished in software on the way and the port took `taken` of
    /// `handed` frames: which of them were this packet's is not told.
    Partly { taken: u16, handed: u16 },
    /// The port's interface was gone: dropped (tx_errors).
    PortGone,
    /// Not transmitted within `AWAIT_TX_NS` of its queuing: held by a shaper or an impairment,
    /// or dropped by the impairment.
    NotSeen,
}

/// A record and its frame, as the workers hand them to the reader.
#[derive(Clone)]
pub struct Traced {
    pub record: Record,
    frame: [u8; SNAP],
    frame_len: u16,
}

impl Traced {
    pub(super) fn new(record: Record, data: &[u8]) -> Traced {
        let n = data.len().min(SNAP);
        let mut frame = [0; SNAP];
        frame[..n].copy_from_slice(&data[..n]);
        Traced { record, frame, frame_len: n as u16 }
    }

    /// The frame as received, cut to `SNAP` bytes.
    pub fn frame(&self) -> &[u8] {
        &self.frame[..usize::from(self.frame_len)]
    }
}
