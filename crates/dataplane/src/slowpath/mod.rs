//! The slow path (PEARL's netio_proxy): each VR's exceptions travel from the workers over the
//! VR's own channel to the netio reactor, which writes them into the VR's TAP devices, and
//! frames the VR's kernel writes to a TAP travel back to a worker, which sends them out of the
//! mapped port through the VR's output queue.
//!
//! A channel is a set of frame rings towards the slow path, one per worker (single producer
//! each), so one VR's exceptions cannot crowd out another's. The way back is one ring per
//! worker for all VRs, since one thread, the reactor, writes them all. Low-priority `shared`
//! VRs all use one channel, demultiplexed by the VR and interface their MAC addresses encode.

mod doorbell;
mod neighbor_probe;
mod netio;
mod reactor;
mod ring;

pub use doorbell::Doorbell;
pub use neighbor_probe::NeighborProbe;
pub use netio::{Netio, NetioCounters, NetioInterface, NetioVr};
pub use reactor::NetioReactor;
pub use ring::{frame_ring, FrameConsumer, FrameMeta, FrameProducer};

/// A slow-path channel's identity: unique over the data plane's life, so a replaced channel
/// (the shared one, when its VRs change) never aliases its successor.
pub type ChannelId = u64;

/// Full-size frames a channel's ring holds (2 KiB of buffer each: 4 MiB, or 61 super-packets of
/// 64 KiB) before further ones are dropped and counted. TCP through a kernel VR with hosts'
/// default offloads needs it: with 1 MiB, bursts of super-packets overflowed the rings (one
/// stream lost hundreds of segments in 3 s, eight streams 185,000); with 4 MiB, none. Memory
/// is taken only as a ring is used.
pub const CHANNEL_DEPTH: usize = 2048;

/// Full-size frames the ring from the slow path to one worker holds, for all VRs together.
pub const INJECT_DEPTH: usize = 4 * CHANNEL_DEPTH;

/// The slow-path end of one channel.
pub struct ChannelEnds {
    /// Exceptions, one ring per worker.
    pub exceptions: Vec<FrameConsumer>,
    /// The worker that sends the channel's VRs' frames (channels take turns).
    pub worker: usize,
}
