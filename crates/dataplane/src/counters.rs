//! Live counters: each worker owns its own and updates them once per batch with plain loads and
//! stores (no locked instructions, no shared cache lines between workers); readers sum across
//! workers whenever they like.

use crate::prefetch::prefetch_bytes;
use std::sync::atomic::{AtomicU64, Ordering};

/// A counter with one writer: `add` is a relaxed load and store, which x86 compiles to plain
/// moves, yet readers on other threads see a value that is never torn.
#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Overwrites the value (for mirrors of totals kept elsewhere by the same writer).
    #[inline]
    pub fn set(&self, v: u64) {
        self.0.store(v, Ordering::Relaxed);
    }
}

pub use pearl_program::reasons::{Exception, VrDrop};

/// Counters of one port, as seen by one worker.
#[derive(Default)]
pub struct PortCounters {
    pub rx_packets: Counter,
    pub rx_bytes: Counter,
    pub tx_packets: Counter,
    pub tx_bytes: Counter,
    /// Frames the device refused on transmit.
    pub tx_errors: Counter,
    /// Frames no VR claimed (unicast to an unknown MAC, no matching rule).
    pub unclaimed: Counter,
    /// Frames the port's driver lost before the pipeline saw them (`Port::rx_dropped`).
    pub rx_dropped: Counter,
    /// Receive calls that failed; the worker goes on and tries again next round.
    pub rx_errors: Counter,
    /// Tunnel datagrams refused before the pipeline (`Port::tunnel_refused`): malformed,
    /// of an unknown VNI or source.
    pub vxlan_malformed: Counter,
    pub vxlan_unknown_vni: Counter,
    /// Malformed frames, by `pearl_wire::WireError::reason()` (index into `WireError::REASONS`).
    pub malformed: Vec<Counter>,
}

/// Counters of one VR, as seen by one worker. The five a batch adds to lead, on a line of
/// their own (`prefetch_hot`): with thousands of VRs each batch touches many VRs' counters, cold, and loading
/// one line each instead of the struct's three keeps the misses in flight few.
#[derive(Default)]
#[repr(C, align(64))]
pub struct VrCounters {
    pub rx_packets: Counter,
    pub rx_bytes: Counter,
    pub forwarded_packets: Counter,
    pub forwarded_bytes: Counter,
    /// Packets dropped at the output queues (queue full).
    pub queue_drops: Counter,
    /// Exceptions queued to the slow path, by [`Exception`] (index into `Exception::ALL`).
    pub exceptions: Vec<Counter>,
    /// Exceptions dropped because the VR's slow-path channel was full.
    pub exception_drops: Counter,
    /// Packets a router must not forward, dropped, by [`VrDrop`] (index into `VrDrop::ALL`).
    pub drops: Vec<Counter>,
    /// Frames the VR's kernel sent through its TAPs, queued for their port.
    pub injected_packets: Counter,
    /// Frames from the VR's kernel dropped at a full output queue or for want of a buffer.
    pub injected_drops: Counter,
    /// Packets an impaired link out of the VR lost (`impair.loss_percent`).
    pub impaired_lost: Counter,
    /// Second copies an impaired link out of the VR sent (`impair.duplicate_percent`).
    pub impaired_duplicates: Counter,
    /// Of the received and forwarded ones, those the kernel forwarded for the fast path
    /// (`offload`).
    pub offloaded_packets: Counter,
    pub offloaded_bytes: Counter,
}

impl VrCounters {
    /// Starts loading the line a batch adds to.
    #[inline(always)]
    pub fn prefetch_hot(&self) {
        prefetch_bytes((self as *const VrCounters).cast(), 1);
    }

    /// Zeroes every counter; for the writer only (a reader's zeroing could race an `add`).
    pub fn reset(&self) {
        let VrCounters {
            rx_packets,
            rx_bytes,
            forwarded_packets,
            forwarded_bytes,
            exceptions,
            exception_drops,
            drops,
            queue_drops,
            injected_packets,
            injected_drops,
            impaired_lost,
            impaired_duplicates,
            offloaded_packets,
            offloaded_bytes,
        } = self;
        let scalars = [
            rx_packets,
            rx_bytes,
            forwarded_packets,
            forwarded_bytes,
            exception_drops,
            queue_drops,
            injected_packets,
            injected_drops,
            impaired_lost,
            impaired_duplicates,
            offloaded_packets,
            offloaded_bytes,
        ];
        for c in scalars.into_iter().chain(exceptions).chain(drops) {
            c.set(0);
        }
    }
}

/// Everything one worker counts.
pub struct WorkerCounters {
    pub ports: Vec<PortCounters>,
    pub vrs: Vec<VrCounters>,
    pub batches: Counter,
    /// Batches that found no packet: with `batches`, how busy the worker is.
    pub idle_polls: Counter,
    /// Rounds that began more than `STALL_NS` after the one before while the worker was not
    /// pausing by choice: time its ports' rings filled unread (the worker was preempted,
    /// blocked in a call, or busy with one long piece of work).
    pub stalls: Counter,
    /// The longest such gap so far, in ns (a maximum, not a sum).
    pub longest_stall_ns: Counter,
}

/// A gap between two rounds counted as a stall: what the shallowest ring (`rx_ring_frames: 255`) holds at
/// 255,000 frames/s.
pub const STALL_NS: u64 = 1_000_000;

impl WorkerCounters {
    pub fn new(ports: usize, vrs: usize) -> WorkerCounters {
        let port = || PortCounters {
            malformed: (0..pearl_wire::WireError::REASONS.len()).map(|_| Counter::default()).collect(),
            ..Default::default()
        };
        let vr = || VrCounters {
            exceptions: (0..Exception::COUNT).map(|_| Counter::default()).collect(),
            drops: (0..VrDrop::COUNT).map(|_| Counter::default()).collect(),
            ..Default::default()
        };
        WorkerCounters {
            ports: (0..ports).map(|_| port()).collect(),
            vrs: (0..vrs).map(|_| vr()).collect(),
            batches: Counter::default(),
            idle_polls: Counter::default(),
            stalls: Counter::default(),
            longest_stall_ns: Counter::default(),
        }
    }
}
