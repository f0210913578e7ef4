//! One slow-path channel as the netio reactor serves it: exceptions from the workers into the
//! VRs' TAP devices, frames from the TAPs to the worker that sends them.

use super::neighbor_probe::NeighborProbe;
use super::ring::MAX_FRAME;
use super::ChannelId;
use super::{ChannelEnds, FrameMeta, FrameProducer};
use crate::counters::{Counter, Exception};
use crate::port::TapPort;
use pearl_control::shared_mac_parts;
use std::collections::HashMap;
use std::sync::Arc;

/// Frames taken from one TAP per readiness event, so one busy VR interface cannot starve the
/// others.
pub const TAP_BUDGET: usize = 64;
/// Exceptions taken from one worker's ring per readiness event.
pub const RING_BUDGET: usize = 256;

/// One VR interface's TAP and the port it maps to.
pub struct NetioInterface {
    pub port: u16,
    pub tap: TapPort,
}

pub struct NetioVr {
    /// The VR's id in the data plane.
    pub vr: u16,
    /// In the VR's interface order (the shared channel finds them by the index in the MAC).
    pub interfaces: Vec<NetioInterface>,
    /// Written by the reactor only; they outlive the channel, which a change of configuration
    /// may replace.
    pub counters: Arc<NetioCounters>,
    /// Has the VR's kernel resolve neighbours for NAT (`Exception::NatUnresolved`); made when
    /// first needed.
    pub resolver: NeighborProbe,
}

/// A VR's slow-path counters.
#[derive(Default)]
pub struct NetioCounters {
    /// Exceptions written into the VR's TAPs.
    pub to_kernel_packets: Counter,
    /// Exceptions the TAP refused or that had no interface to go to.
    pub to_kernel_drops: Counter,
    /// Frames the VR's kernel sent, handed to a worker.
    pub from_kernel_packets: Counter,
    /// Frames from the kernel dropped because the worker's ring was full.
    pub from_kernel_drops: Counter,
}

/// What reading a TAP came to.
pub enum TapRead {
    /// Frames moved; the TAP may hold more (the budget ran out).
    Moved(usize),
    /// The TAP failed for good (its namespace was deleted under it): no longer served.
    Broken,
}

pub struct Netio {
    pub id: ChannelId,
    pub ends: ChannelEnds,
    pub(super) vrs: Vec<NetioVr>,
    /// The shared channel: unicast exceptions are demultiplexed by their destination MAC.
    pub shared: bool,
    /// VR id → index in `vrs`: the shared channel may carry thousands of VRs, and every
    /// exception is routed to one.
    index: HashMap<u16, usize>,
}

impl Netio {
    pub fn new(id: ChannelId, ends: ChannelEnds, vrs: Vec<NetioVr>, shared: bool) -> Netio {
        let index = vrs.iter().enumerate().map(|(v, vr)| (vr.vr, v)).collect();
        Netio { id, ends, vrs, shared, index }
    }

    /// Hands the VRs (and their TAPs) back.
    pub fn into_vrs(self) -> Vec<NetioVr> {
        self.vrs
    }

    /// The channel's interfaces in one flat order, `(vr index, interface index)`: how the
    /// reactor names a TAP.
    pub fn interfaces(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.vrs.iter().enumerate().flat_map(|(v, vr)| (0..vr.interfaces.len()).map(move |i| (v, i)))
    }

    /// Writes up to `RING_BUDGET` exceptions of worker `w`'s ring into their TAPs.
    pub fn to_kernel(&mut self, w: usize) -> usize {
        let Netio { ends, vrs, shared, index, .. } = self;
        ends.exceptions[w].drain(RING_BUDGET, |meta, frame| {
            if meta.reason == Some(Exception::NatUnresolved) {
                if let Some((v, i)) = route_down(vrs, index, *shared, meta, frame) {
                    let vr = &mut vrs[v];
                    if vr.resolver.probe(&vr.interfaces[i].tap, frame) {
                        vr.counters.to_kernel_packets.add(1);
                    }
                }
                return;
            }
            let Some((v, i)) = route_down(vrs, index, *shared, meta, frame) else {
                if let Some(&v) = index.get(&meta.vr) {
                    vrs[v].counters.to_kernel_drops.add(1);
                }
                return;
            };
            let ok = vrs[v].interfaces[i].tap.write_frame(frame, &meta.offload).unwrap_or(false);
            let c = &vrs[v].counters;
            if ok {
                c.to_kernel_packets.add(1)
            } else {
                c.to_kernel_drops.add(1)
            }
        })
    }

    /// Moves up to `TAP_BUDGET` frames the kernel wrote to TAP `(v, i)` into `inject`.
    pub fn from_kernel(&mut self, v: usize, i: usize, inject: &mut FrameProducer) -> TapRead {
        let vr = &mut self.vrs[v];
        let iface = &mut vr.interfaces[i];
        let meta = FrameMeta { vr: vr.vr, port: iface.port, reason: None, offload: pearl_wire::Offload::default() };
        let mut moved = 0;
        for _ in 0..TAP_BUDGET {
            let mut outcome = Ok(None);
            let room = inject.push_with(MAX_FRAME, |buf| {
                outcome = iface.tap.read_frame(buf);
                outcome.as_ref().ok().copied().flatten().map(|(n, offload)| (FrameMeta { offload, ..meta }, n))
            });
            match outcome {
                Ok(Some(_)) if room => vr.counters.from_kernel_packets.add(1),
                Ok(Some(_)) => unreachable!("a frame is read only into a free slot"),
                Ok(None) if !room => {
                    // The worker is behind: drop one frame so the TAP keeps draining. A frame
                    // read into too short a buffer is cut, which is all a drop needs.
                    let mut scratch = [0u8; 64];
                    if let Ok(Some(_)) = iface.tap.read_frame(&mut scratch) {
                        vr.counters.from_kernel_drops.add(1);
                    }
                    break;
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!("slow path of VR {}: {e}; interface no longer served", vr.vr);
                    return TapRead::Broken;
                }
            }
            moved += 1;
        }
        TapRead::Moved(moved)
    }
}

/// Which VR (index into `vrs`) and interface an exception goes to.
fn route_down(vrs: &[NetioVr], index: &HashMap<u16, usize>, shared: bool, meta: FrameMeta, frame: &[u8]) -> Option<(usize, usize)> {
    let dst: Option<[u8; 6]> = frame.get(..6).and_then(|d| d.try_into().ok());
    if shared {
        // Unicast frames name their VR and interface in the destination MAC.
        if let Some((vr, iface)) = dst.filter(|d| d[0] & 1 == 0).and_then(|d| shared_mac_parts(&d)) {
            let v = *index.get(&vr)?;
            return (usize::from(iface) < vrs[v].interfaces.len()).then_some((v, usize::from(iface)));
        }
    }
    let v = *index.get(&meta.vr)?;
    let i = vrs[v].interfaces.iter().position(|x| x.port == meta.port)?;
    Some((v, i))
}
