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

/// Frames a channel holds in each direction before further ones are dropped and counted.
pub const CHANNEL_DEPTH: usize = 1024;

/// The slow-path end of one channel.
pub struct ChannelEnds {
    /// Exceptions, one ring per worker.
    pub exceptions: Vec<FrameConsumer>,
    /// Frames from the VR's kernel, to the worker that sends them.
    pub inject: FrameProducer,
}

/// A worker's ends of every channel.
pub struct WorkerLinks {
    /// `[channel]`: where this worker queues exceptions.
    pub exceptions: Vec<FrameProducer>,
    /// Frames from the slow path of the channels this worker sends for.
    pub inject: Vec<FrameConsumer>,
}

/// Builds `channels` channels for `workers` workers; channel `c` sends through worker
/// `c % workers`.
pub fn build_channels(channels: usize, workers: usize) -> std::io::Result<(Vec<ChannelEnds>, Vec<WorkerLinks>)> {
    let mut links: Vec<WorkerLinks> =
        (0..workers).map(|_| WorkerLinks { exceptions: Vec::new(), inject: Vec::new() }).collect();
    let mut ends = Vec::new();
    for c in 0..channels {
        let mut exceptions = Vec::new();
        for l in links.iter_mut() {
            let (tx, rx) = frame_ring(CHANNEL_DEPTH)?;
            l.exceptions.push(tx);
            exceptions.push(rx);
        }
        let (inject, rx) = frame_ring(CHANNEL_DEPTH)?;
        links[c % workers].inject.push(rx);
        ends.push(ChannelEnds { exceptions, inject });
    }
    Ok((ends, links))
}

/// The MAC address of interface `interface` of shared VR `vr` (PEARL's 02:VR:00:00:00:IF).
pub fn shared_mac(vr: u8, interface: u8) -> [u8; 6] {
    [0x02, vr, 0, 0, 0, interface]
}

/// The VR and interface a shared-channel MAC encodes, if it has that form.
pub fn shared_mac_parts(mac: &[u8; 6]) -> Option<(u8, u8)> {
    (mac[0] == 0x02 && mac[2..5] == [0, 0, 0]).then_some((mac[1], mac[5]))
}
