//! A VR whose program is hosted outside the data plane (`code: i3`, made by pearl-plugin and
//! attached by pearld) forwards nothing before its host attaches it: the configuration names
//! routes, but only the i3 program decides which UDP packets it forwards (an I3 header's
//! identifier) and which it routes.

use crate::common::udp_frame;
use pearl_control::parse_config;
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::{MemoryPort, Port};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

fn config(code: &str) -> pearl_control::Config {
    parse_config(&format!(
        "workers: 1
ports:
  - {{name: m0, interface: m0, driver: memory}}
  - {{name: m1, interface: m1, driver: memory}}
vrs:
  - name: node
    id: 3
    code: {code}
    interfaces:
      - {{name: eth0, port: m0, mac: '02:00:00:00:03:00', addresses: [10.0.0.1/24]}}
      - {{name: eth1, port: m1, mac: '02:00:00:00:03:01', addresses: [10.1.0.1/24]}}
    routes: [{{prefix: 198.51.100.0/24, via: 10.1.0.2}}]
    neighbors: [{{ip: 10.1.0.2, mac: '02:aa:00:00:00:02', interface: eth1}}]
"
    ))
    .expect("a valid config")
}

/// What VR 3 counts, received and forwarded, once it has received 1000 frames of a routed UDP
/// stream with no program attached from outside.
fn counts(code: &str) -> (u64, u64, Vec<(&'static str, u64)>) {
    let frames = vec![udp_frame([2, 0, 0, 0, 3, 0], Ipv4Addr::new(198, 51, 100, 7), 64)];
    let (d, _slow) = Dataplane::start(&config(code), |p, _, _| -> Result<Box<dyn Port>, _> {
        Ok(Box::new(if p == 0 { MemoryPort::new(&frames) } else { MemoryPort::new(Vec::<Vec<u8>>::new()) }))
    })
    .expect("starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while d.sum(|c| c.vrs[3].rx_packets.get()) < 1000 {
        assert!(Instant::now() < deadline, "VR 3 received nothing");
        std::thread::sleep(Duration::from_millis(5));
    }
    let counts = (d.sum(|c| c.vrs[3].rx_packets.get()), d.sum(|c| c.vrs[3].forwarded_packets.get()), d.drops(3));
    d.stop();
    counts
}

#[test]
fn an_i3_vr_forwards_nothing_before_its_program_is_attached() {
    let (_, routed, _) = counts("ip");
    assert!(routed > 0, "the stream is routable: an ip VR forwards it");
    let (received, forwarded, drops) = counts("i3");
    assert_eq!(forwarded, 0, "an i3 VR without its program forwarded {forwarded} of {received}");
    let program = drops.iter().find(|(r, _)| *r == "program").map_or(0, |(_, n)| *n);
    assert!(program > 0, "dropped as its program's: {drops:?}");
}
