//! Exceptions on their way to the VR's kernel: policed per VR and class, copied onto the VR's
//! slow-path channel.

use super::views::present;
use crate::capture::{CapturePoint, Taps};
use crate::counters::{Exception, VrDrop, WorkerCounters};
use crate::packet::Packet;
use crate::punt::{PuntClass, PuntPolicer, PRIORITY_RESERVE};
use crate::slowpath::{ChannelId, FrameMeta, FrameProducer};
use crate::trace::Outcome;
use crate::vr::VrView;

/// `SlowPathTx::vr_channel` of a VR without a channel.
pub(super) const NO_CHANNEL: u16 = u16::MAX;

/// A worker's side of the slow path.
#[derive(Default)]
pub struct SlowPathTx {
    /// One ring per channel.
    pub channels: Vec<(ChannelId, FrameProducer)>,
    /// `[vr]`: index of the VR's channel in `channels`.
    pub vr_channel: Vec<u16>,
    /// `[vr]`: a `shared` VR, reachable through [`SHARED_VR`].
    pub shared: Vec<bool>,
    /// Indices in `channels` written since the last flush: a batch publishes those alone, not
    /// every VR's channel.
    pub unflushed: Vec<u16>,
}

/// Whether VR `vr`'s punt path takes one more frame of `class`; counts it as `punt_policed` if
/// not. The clock is read at most once per batch (`now` starts as `None`).
#[inline]
pub(super) fn punt_admits(
    punt: &mut [PuntPolicer],
    vrs: &[Option<VrView>],
    counters: &WorkerCounters,
    epoch: &std::time::Instant,
    now: &mut Option<u64>,
    (vr, class): (u16, PuntClass),
) -> bool {
    let now = *now.get_or_insert_with(|| epoch.elapsed().as_nanos() as u64);
    let admitted = punt[vr as usize].admit(class, present(vrs, vr).facts.punt_pps, now);
    if !admitted {
        counters.vrs[vr as usize].drops[VrDrop::PuntPoliced as usize].add(1);
    }
    admitted
}

/// Copies `p` onto the VR's slow-path channel (the caller keeps the buffer), or counts the drop.
/// Only routing protocols may take the channel's last `PRIORITY_RESERVE` bytes.
pub(super) fn to_slow_path(
    counters: &WorkerCounters,
    slow_path: &mut SlowPathTx,
    taps: &mut Taps,
    (vr, class): (u16, PuntClass),
    reason: Exception,
    p: &Packet,
) {
    let c = &counters.vrs[vr as usize];
    if !taps.is_empty() {
        taps.offer(CapturePoint::Slow, vr, p.in_port, p.data());
        taps.note(p.buffer_id(), Outcome::Kernel(reason));
    }
    c.exceptions[reason as usize].add(1);
    if p.offload.is_encapsulated() {
        // A TAP takes super-packets only as a virtio-net header describes them, and none
        // describes one behind a tunnel's headers.
        c.exception_drops.add(1);
        return;
    }
    let meta = FrameMeta { vr, port: p.in_port, reason: Some(reason), offload: p.offload };
    let ch = slow_path.vr_channel[vr as usize];
    if ch == NO_CHANNEL {
        c.exception_drops.add(1);
        return;
    }
    let ring = &mut slow_path.channels[ch as usize].1;
    let first = !ring.unpublished();
    let reserve = if class == PuntClass::Routing { 0 } else { PRIORITY_RESERVE };
    if !ring.push_leaving(reserve, meta, p.data()) {
        c.exception_drops.add(1);
    } else if first {
        slow_path.unflushed.push(ch);
    }
}
