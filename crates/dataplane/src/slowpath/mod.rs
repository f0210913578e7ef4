//! The slow path (PEARL's netio_proxy): each VR's exceptions travel from the workers over the
//! VR's own channel to a thread that writes them into the VR's TAP devices, and frames the VR's
//! kernel writes to a TAP travel back to a worker, which sends them out of the mapped port
//! through the VR's output queue.
//!
//! A channel is a set of frame rings: one per worker towards the slow path (single producer
//! each), and one from the slow path back to one worker. Low-priority `shared` VRs all use one
//! channel, demultiplexed by the VR and interface their MAC addresses encode.

mod doorbell;
mod netio;
mod ring;

pub use doorbell::Doorbell;
pub use netio::{Netio, NetioCounters, NetioInterface, NetioVr};
pub use ring::{frame_ring, FrameConsumer, FrameMeta, FrameProducer};

/// Full-size frames a channel's ring holds (2 KiB of buffer each: 4 MiB, or 61 super-packets of
/// 64 KiB) before further ones are dropped and counted. TCP through a kernel VR with hosts'
/// default offloads needs it: with 1 MiB, bursts of super-packets overflowed the rings (one
/// stream lost hundreds of segments in 3 s, eight streams 185,000); with 4 MiB, none. Memory
/// is taken only as a ring is used.
pub const CHANNEL_DEPTH: usize = 2048;

/// The slow-path end of one channel.
pub struct ChannelEnds {
    /// Exceptions, one ring per worker.
    pub exceptions: Vec<FrameConsumer>,
    /// Frames from the VR's kernel, to the worker that sends them.
    pub inject: FrameProducer,
}

/// The VR and interface a shared-channel MAC encodes, if it has that form.
pub fn shared_mac_parts(mac: &[u8; 6]) -> Option<(u8, u8)> {
    (mac[0] == 0x02 && mac[2..5] == [0, 0, 0]).then_some((mac[1], mac[5]))
}
