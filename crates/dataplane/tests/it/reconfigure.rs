//! A running data plane moved to a new configuration: what a VR counted belongs to that VR, not
//! to the VR id. In-memory ports stand in for real ones (the system tests use veth).

use crate::common::udp_frame;
use pearl_control::{parse_config, ConfigDiff};
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::{MemoryPort, Port};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// One VR with id 3 between two memory ports; `name` and `mac_byte` make it a different VR.
fn config(name: &str, mac_byte: u8, extra_route: bool) -> pearl_control::Config {
    let extra = if extra_route { ", {prefix: 203.0.113.0/24, via: 10.1.0.2}" } else { "" };
    parse_config(&format!(
        "workers: 1
ports:
  - {{name: m0, interface: m0, driver: memory}}
  - {{name: m1, interface: m1, driver: memory}}
vrs:
  - name: {name}
    id: 3
    code: ipv4
    interfaces:
      - {{name: eth0, port: m0, mac: '02:00:00:00:{mac_byte:02x}:00', addresses: [10.0.0.1/24]}}
      - {{name: eth1, port: m1, mac: '02:00:00:00:{mac_byte:02x}:01', addresses: [10.1.0.1/24]}}
    routes: [{{prefix: 198.51.100.0/24, via: 10.1.0.2}}{extra}]
    neighbors: [{{ip: 10.1.0.2, mac: '02:aa:00:00:00:02', interface: eth1}}]
"
    ))
    .expect("a valid config")
}

fn forwarded(d: &Dataplane) -> u64 {
    d.sum(|c| c.vrs[3].forwarded_packets.get())
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_vr_taking_a_used_id_starts_its_counters_from_zero() {
    // To red's MAC 02:00:00:00:03:00, routed by red.
    let frames = vec![udp_frame([2, 0, 0, 0, 3, 0], Ipv4Addr::new(198, 51, 100, 7), 64)];
    let (d, _slow) = Dataplane::start(&config("red", 3, false), |p, _, _| -> Result<Box<dyn Port>, _> {
        Ok(Box::new(if p == 0 { MemoryPort::new(&frames) } else { MemoryPort::new(Vec::<Vec<u8>>::new()) }))
    })
    .expect("starts");
    wait_for("red to forward", || forwarded(&d) > 1000);

    // The same VR with one more route keeps counting from where it was.
    let before = forwarded(&d);
    d.update(&ConfigDiff::between(&d.layout().config, &config("red", 3, true).into())).expect("route added");
    assert!(forwarded(&d) >= before, "a VR that stays must not lose its counts");

    // Another VR under id 3, whose MACs the traffic does not reach: it has forwarded nothing.
    d.update(&ConfigDiff::between(&d.layout().config, &config("blue", 0x13, false).into())).expect("red replaced by blue");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(forwarded(&d), 0, "blue must not inherit red's counts");
    assert_eq!(d.sum(|c| c.vrs[3].rx_packets.get()), 0);
    let unclaimed = d.sum(|c| c.ports[0].unclaimed.get());
    assert!(unclaimed > 0, "red's traffic is unclaimed now");
    d.stop();
}
