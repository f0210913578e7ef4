//! A flood to addresses of a connected subnet that no neighbour answers (RFC 6583) hands the
//! VR's kernel a bounded number of them, counts the rest as `unresolved_policed`, and leaves the
//! packets to a resolved neighbour on the same port forwarded, every one; through a kernel VR,
//! whose kernel forwards, handed to it, every one.

use crate::common::udp_frame;
use pearl_control::parse_config;
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::{MemoryPort, Port};
use pearl_dataplane::unresolved::UNRESOLVED_PPS;
use pearl_wire::checksum::checksum;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const VR_MAC: [u8; 6] = [2, 0, 0, 0, 1, 0];

fn to(dst: Ipv4Addr) -> Vec<u8> {
    let mut f = udp_frame(VR_MAC, dst, 64);
    f[24..26].fill(0);
    let c = checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f
}

fn config(kind: &str) -> pearl_control::Config {
    parse_config(&format!(
        "workers: 1
ports:
  - {{name: m0, interface: m0, driver: memory}}
  - {{name: m1, interface: m1, driver: memory}}
vrs:
  - name: red
    id: 1
    kind: {kind}
    interfaces:
      - {{name: eth0, port: m0, mac: '02:00:00:00:01:00', addresses: [10.0.0.1/24]}}
      - {{name: eth1, port: m1, mac: '02:00:00:00:01:01', addresses: [10.1.0.1/16]}}
    neighbors: [{{ip: 10.1.0.2, mac: '02:aa:00:00:00:02', interface: eth1}}]
"
    ))
    .expect("a valid config")
}

/// Runs VR `kind` over a quarter of frames to the resolved neighbour, the others each to
/// another address, until it has received 400,000; returns (frames its kernel got under
/// `exception`, unresolved_policed, forwarded, received, the bound on unresolved frames).
fn flood(kind: &str, exception: &str) -> (u64, u64, u64, u64, u64) {
    let frames: Vec<Vec<u8>> =
        (0..4000u32).map(|i| to(if i % 4 == 0 { Ipv4Addr::new(10, 1, 0, 2) } else { Ipv4Addr::from(0x0a01_0100 + i) })).collect();
    let started = Instant::now();
    let (d, _slow) = Dataplane::start(&config(kind), |p, _, _| -> Result<Box<dyn Port>, _> {
        Ok(Box::new(if p == 0 { MemoryPort::new(&frames) } else { MemoryPort::new(Vec::<Vec<u8>>::new()) }))
    })
    .expect("starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while d.sum(|c| c.vrs[1].rx_packets.get()) < 400_000 {
        assert!(Instant::now() < deadline, "the worker takes no frames");
        std::thread::sleep(Duration::from_millis(5));
    }
    let seconds = started.elapsed().as_secs_f64();
    let count = |list: Vec<(&'static str, u64)>, reason: &str| list.iter().find(|(r, _)| *r == reason).expect("a known reason").1;
    let handed = count(d.exceptions(1), exception);
    let policed = count(d.drops(1), "unresolved_policed");
    let forwarded = d.sum(|c| c.vrs[1].forwarded_packets.get());
    let rx = d.sum(|c| c.vrs[1].rx_packets.get());
    d.stop();
    // The rate for the run's time, one burst, and the few frames each destination gets.
    let bound = (f64::from(UNRESOLVED_PPS) * seconds) as u64 + 64 + 4;
    (handed, policed, forwarded, rx, bound)
}

#[test]
fn a_flood_of_unresolved_destinations_is_bounded_and_the_resolved_neighbour_loses_nothing() {
    let (handed, policed, forwarded, rx, bound) = flood("fast", "unresolved_neighbor");
    assert!(handed <= bound, "the VR's kernel got {handed} unresolved frames (bound {bound})");
    // The worker runs on while the counters are read, the last read (rx) by a few batches at most.
    let accounted = forwarded + handed + policed;
    assert!(accounted <= rx && accounted + 4096 >= rx, "every frame forwarded, handed over or counted: {accounted} of {rx}");
    assert!(forwarded.abs_diff(rx / 4) <= 1024, "the resolved neighbour's quarter: {forwarded} of {rx}");
}

#[test]
fn through_a_kernel_vr_the_flood_is_bounded_and_the_resolved_neighbours_frames_all_reach_its_kernel() {
    let (handed, policed, _, rx, bound) = flood("kernel", "kernel_vr");
    // The resolved neighbour's quarter, every frame, plus the bounded few unresolved ones.
    let resolved = handed.saturating_sub(bound);
    assert!(handed <= rx / 4 + 1024 + bound && resolved + 1024 >= rx / 4, "the VR's kernel got {handed} of {rx}");
    assert!(policed + handed <= rx && policed + handed + 4096 >= rx, "the rest counted: {policed} policed of {rx}");
}
