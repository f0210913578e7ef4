//! A flood to addresses of a connected subnet that no neighbour answers (RFC 6583) hands the
//! VR's kernel a bounded number of them, counts the rest as `unresolved_policed`, and leaves the
//! packets to a resolved neighbour on the same port forwarded, every one.

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

#[test]
fn a_flood_of_unresolved_destinations_is_bounded_and_the_resolved_neighbour_loses_nothing() {
    let config = parse_config(
        "workers: 1
ports:
  - {name: m0, interface: m0, driver: memory}
  - {name: m1, interface: m1, driver: memory}
vrs:
  - name: red
    id: 1
    interfaces:
      - {name: eth0, port: m0, mac: '02:00:00:00:01:00', addresses: [10.0.0.1/24]}
      - {name: eth1, port: m1, mac: '02:00:00:00:01:01', addresses: [10.1.0.1/16]}
    neighbors: [{ip: 10.1.0.2, mac: '02:aa:00:00:00:02', interface: eth1}]
",
    )
    .expect("a valid config");
    // Every fourth frame to the resolved neighbour, the others each to another address.
    let frames: Vec<Vec<u8>> =
        (0..4000u32).map(|i| to(if i % 4 == 0 { Ipv4Addr::new(10, 1, 0, 2) } else { Ipv4Addr::from(0x0a01_0100 + i) })).collect();
    let started = Instant::now();
    let (d, _slow) = Dataplane::start(&config, |p, _, _| -> Result<Box<dyn Port>, _> {
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
    let handed = count(d.exceptions(1), "unresolved_neighbor");
    let policed = count(d.drops(1), "unresolved_policed");
    let forwarded = d.sum(|c| c.vrs[1].forwarded_packets.get());
    let rx = d.sum(|c| c.vrs[1].rx_packets.get());
    d.stop();
    // The rate for the run's time, one burst, and the few frames each destination gets.
    let bound = (f64::from(UNRESOLVED_PPS) * seconds) as u64 + 64 + 4;
    assert!(handed <= bound, "the VR's kernel got {handed} unresolved frames in {seconds:.2} s (bound {bound})");
    // The worker runs on while the counters are read, the last read (rx) by a few batches at most.
    let accounted = forwarded + handed + policed;
    assert!(accounted <= rx && accounted + 4096 >= rx, "every frame forwarded, handed over or counted: {accounted} of {rx}");
    assert!(forwarded.abs_diff(rx / 4) <= 1024, "the resolved neighbour's quarter: {forwarded} of {rx}");
}
