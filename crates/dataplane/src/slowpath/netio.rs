//! The thread that serves one slow-path channel: exceptions from the workers into the VRs'
//! TAP devices, frames from the TAPs back to the worker that sends them.

use super::ring::MAX_FRAME;
use super::{shared_mac_parts, ChannelEnds, FrameMeta};
use crate::counters::Counter;
use crate::port::{Port, TapPort};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Frames taken from one TAP per round, so one busy VR interface cannot starve the others.
const TAP_BUDGET: usize = 64;
/// Exceptions taken from one worker's ring per round.
const RING_BUDGET: usize = 256;
/// How long an idle thread sleeps before it looks at `stop` again.
const IDLE_WAIT_MS: i32 = 100;

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
    /// Written by the thread serving the VR's channel only; they outlive the channel, which a
    /// change of configuration may replace.
    pub counters: Arc<NetioCounters>,
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

pub struct Netio {
    pub ends: ChannelEnds,
    pub vrs: Vec<NetioVr>,
    /// The shared channel: unicast exceptions are demultiplexed by their destination MAC.
    pub shared: bool,
}

impl Netio {
    /// Serves the channel until `stop` is set, then hands the VRs (and their TAPs) back. A TAP
    /// that fails for good (its namespace was deleted under it) is logged once and skipped
    /// thereafter.
    pub fn run(mut self, stop: Arc<AtomicBool>) -> Vec<NetioVr> {
        let mut broken: Vec<Vec<bool>> = self.vrs.iter().map(|v| vec![false; v.interfaces.len()]).collect();
        let mut fds = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let down = self.to_kernel();
            let up = self.from_kernel(&mut broken);
            if down + up > 0 {
                continue;
            }
            fds.clear();
            for r in &self.ends.exceptions {
                r.doorbell().arm();
                fds.push(libc::pollfd { fd: r.doorbell().fd(), events: libc::POLLIN, revents: 0 });
            }
            for (v, vr) in self.vrs.iter().enumerate() {
                for (i, iface) in vr.interfaces.iter().enumerate() {
                    if !broken[v][i] {
                        fds.push(libc::pollfd { fd: iface.tap.rx_fd().unwrap_or(-1), events: libc::POLLIN, revents: 0 });
                    }
                }
            }
            if self.ends.exceptions.iter().all(|r| r.is_empty()) {
                // SAFETY: `fds` is a valid pollfd array for the duration of the call.
                unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, IDLE_WAIT_MS) };
            }
            for r in &self.ends.exceptions {
                r.doorbell().disarm();
            }
        }
        self.vrs
    }

    fn to_kernel(&mut self) -> usize {
        let Netio { ends, vrs, shared } = self;
        let mut moved = 0;
        for ring in ends.exceptions.iter_mut() {
            moved += ring.drain(RING_BUDGET, |meta, frame| {
                let Some((v, i)) = route_down(vrs, *shared, meta, frame) else {
                    if let Some(v) = vrs.iter().find(|x| x.vr == meta.vr) {
                        v.counters.to_kernel_drops.add(1);
                    }
                    return;
                };
                let ok = vrs[v].interfaces[i].tap.write_frame(frame, &meta.offload).unwrap_or(false);
                let c = &vrs[v].counters;
                if ok { c.to_kernel_packets.add(1) } else { c.to_kernel_drops.add(1) }
            });
        }
        moved
    }

    fn from_kernel(&mut self, broken: &mut [Vec<bool>]) -> usize {
        let mut moved = 0;
        for (v, vr) in self.vrs.iter_mut().enumerate() {
            for (i, iface) in vr.interfaces.iter_mut().enumerate() {
                if broken[v][i] {
                    continue;
                }
                let meta = FrameMeta { vr: vr.vr, port: iface.port, reason: None, offload: pearl_wire::Offload::default() };
                for _ in 0..TAP_BUDGET {
                    let mut outcome = Ok(None);
                    let room = self.ends.inject.push_with(MAX_FRAME, |buf| {
                        outcome = iface.tap.read_frame(buf);
                        outcome.as_ref().ok().copied().flatten().map(|(n, offload)| (FrameMeta { offload, ..meta }, n))
                    });
                    match outcome {
                        Ok(Some(_)) if room => vr.counters.from_kernel_packets.add(1),
                        Ok(Some(_)) => unreachable!("a frame is read only into a free slot"),
                        Ok(None) if !room => {
                            // The worker is behind: drop one frame so the TAP keeps draining.
                            // A frame read into too short a buffer is cut, which is all a drop
                            // needs.
                            let mut scratch = [0u8; 64];
                            if let Ok(Some(_)) = iface.tap.read_frame(&mut scratch) {
                                vr.counters.from_kernel_drops.add(1);
                            }
                            break;
                        }
                        Ok(None) => break,
                        Err(e) => {
                            eprintln!("pearld: slow path of VR {}: {e}; interface no longer served", vr.vr);
                            broken[v][i] = true;
                            break;
                        }
                    }
                    moved += 1;
                }
            }
        }
        self.ends.inject.flush();
        moved
    }
}

/// Which VR (index into `vrs`) and interface an exception goes to.
fn route_down(vrs: &[NetioVr], shared: bool, meta: FrameMeta, frame: &[u8]) -> Option<(usize, usize)> {
    let dst: Option<[u8; 6]> = frame.get(..6).and_then(|d| d.try_into().ok());
    if shared {
        // Unicast frames name their VR and interface in the destination MAC: no lookup.
        if let Some((vr, iface)) = dst.filter(|d| d[0] & 1 == 0).and_then(|d| shared_mac_parts(&d)) {
            let v = vrs.iter().position(|x| x.vr == u16::from(vr))?;
            return (usize::from(iface) < vrs[v].interfaces.len()).then_some((v, usize::from(iface)));
        }
    }
    let v = vrs.iter().position(|x| x.vr == meta.vr)?;
    let i = vrs[v].interfaces.iter().position(|x| x.port == meta.port)?;
    Some((v, i))
}
