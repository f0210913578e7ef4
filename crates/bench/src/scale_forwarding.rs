//! Forwarding at scale: the in-memory pipeline with N fast VRs sharing two ports, each VR found
//! by the destination MAC of its frames and holding ten routes, the traffic spread evenly over
//! every VR (the frames of all VRs interleaved). The same pipeline with 4 VRs and the same
//! number of distinct frames, run right before each N-VR run, is the peer: what N VRs cost per
//! packet beyond a few (cache misses on per-VR state, the MAC demultiplexing, scheduler lists)
//! is the ratio.

use crate::pipeline::{fast_vr, memory_port, process_cpu_secs, Family};
use crate::report::median;
use core::net::{IpAddr, Ipv4Addr};
use pearl_control::{Config, InterfaceConfig, IpPrefix, NeighborConfig, RouteConfig, Urpf};
use pearl_dataplane::counters::VrDrop;
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::{MemoryPort, Port};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const ROUTES_PER_VR: u8 = 10;
/// Frames in the replayed trace: ten per VR at 4,096 VRs, the same at every point.
const TRACE_FRAMES: usize = 40_960;

/// N VRs' forwarding against the peer's, each a median of `repeat` runs.
pub struct Paired {
    pub mpps: f64,
    /// The share of a core the process had during the N-VR runs.
    pub cpu_share: f64,
    /// Of the frames the N-VR runs received, the part the worker share refused (issue 16's
    /// policing of a worker that cannot keep up; the memory port never runs dry).
    pub refused: f64,
    pub peer_mpps: f64,
    /// The median of each pair's ratio: the peer runs right before each N-VR run, so that
    /// both see the same moment of a machine whose speed drifts by tens of percent.
    pub ratio: f64,
}

/// `repeat` pairs of runs of `seconds`: `peer_vrs` VRs, then `vrs` VRs right after.
pub fn paired(vrs: usize, peer_vrs: usize, seconds: f64, repeat: usize) -> Result<Paired, String> {
    let (mut peer, mut own, mut shares, mut ratios, mut refused) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeat {
        let p = mpps(peer_vrs, seconds)?;
        let m = mpps(vrs, seconds)?;
        ratios.push(m.mpps / p.mpps);
        peer.push(p.mpps);
        own.push(m.mpps);
        shares.push(m.cpu_share);
        refused.push(m.refused);
    }
    Ok(Paired { mpps: median(own), cpu_share: median(shares), refused: median(refused), peer_mpps: median(peer), ratio: median(ratios) })
}

/// One run's forwarding, over `seconds`.
struct Run {
    /// Forwarded packets per second, millions.
    mpps: f64,
    /// The share of a core the process had.
    cpu_share: f64,
    /// The part of the received frames the worker share refused.
    refused: f64,
}

/// One run with `vrs` VRs.
fn mpps(vrs: usize, seconds: f64) -> Result<Run, String> {
    let config = config(vrs);
    // Frame k goes to VR k mod N: consecutive frames go to different VRs, and each VR's
    // frames take its routes in turn. Every point replays as many distinct frames, so that
    // the trace's own cache misses (a NIC's frames arrive cold) are not charged to N.
    let frames: Vec<Vec<u8>> = (0..TRACE_FRAMES)
        .map(|k| (k % vrs, k / vrs))
        .map(|(v, round)| {
            let (r, host) = (round % usize::from(ROUTES_PER_VR), round / usize::from(ROUTES_PER_VR) % 200);
            let dst = u32::from(Ipv4Addr::new(172, 16, r as u8, 7 + host as u8));
            <u32 as Family>::frame(mac(v, 0), IpAddr::V4(Ipv4Addr::new(10, 1, 0, 2)), dst, 64)
        })
        .collect();
    let (dataplane, _slow_path) = Dataplane::start(&config, |p, _w, _pool| -> Result<Box<dyn Port>, _> {
        Ok(Box::new(if p == 0 { MemoryPort::new(&frames) } else { MemoryPort::new(Vec::<Vec<u8>>::new()) }))
    })
    .map_err(|e| e.to_string())?;
    let sent = || dataplane.sum(|c| c.ports.iter().map(|p| p.tx_packets.get()).sum());
    let reached = || (0..vrs).filter(|&v| dataplane.sum(|c| c.vrs[v].forwarded_packets.get()) > 0).count();
    // The workers start before the first plan is in force (thousands of VRs' tables take a
    // while): until every VR forwards, frames are still dropped as unclaimed.
    let warming = Instant::now();
    while reached() < vrs && warming.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let received = || dataplane.sum(|c| c.ports.iter().map(|p| p.rx_packets.get()).sum());
    let refused = || dataplane.sum(|c| c.vrs.iter().map(|v| v.drops[VrDrop::WorkerShare as usize].get()).sum());
    let (t0, n0, c0, r0, x0) = (Instant::now(), sent(), process_cpu_secs(), received(), refused());
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let (n1, c1, wall) = (sent(), process_cpu_secs(), t0.elapsed().as_secs_f64());
    let (r1, x1) = (received(), refused());
    let reached = reached();
    dataplane.stop();
    if reached != vrs {
        return Err(format!("only {reached} of {vrs} VRs forwarded: the benchmark's set-up is broken"));
    }
    Ok(Run { mpps: (n1 - n0) as f64 / wall / 1e6, cpu_share: (c1 - c0) / wall, refused: (x1 - x0) as f64 / (r1 - r0).max(1) as f64 })
}

/// A VR's MAC on side `side` (0: where its traffic arrives, 1: where it leaves): its id in two
/// bytes, so thousands of VRs share a port.
fn mac(vr: usize, side: u8) -> [u8; 6] {
    [2, 0, (vr >> 8) as u8, vr as u8, 1, side]
}

pub fn config(vrs: usize) -> Config {
    let ports = (0..2).map(memory_port).collect();
    let v4 = |a, b, c, d| IpAddr::V4(Ipv4Addr::new(a, b, c, d));
    let vrs = (0..vrs)
        .map(|v| {
            let side = |s: u8| InterfaceConfig {
                name: format!("eth{s}"),
                port: usize::from(s),
                mac: mac(v, s),
                addresses: vec![IpPrefix { addr: v4(10, s + 1, 0, 1), len: 24 }],
                mtu: None,
                urpf: Urpf::Off,
                impair: Default::default(),
            };
            let via = v4(10, 2, 0, 2);
            let routes = (0..ROUTES_PER_VR)
                .map(|r| RouteConfig { prefix: IpPrefix { addr: v4(172, 16, r, 0), len: 24 }, via, interface: 1 })
                .collect();
            let neighbor = NeighborConfig { ip: via, mac: [2, 0xcc, (v >> 8) as u8, v as u8, 0, 2], interface: 1 };
            Arc::new(fast_vr(v, vec![side(0), side(1)], routes, neighbor))
        })
        .collect();
    Config { workers: 1, node: Default::default(), ports, vrs, api_tls: None }
}
