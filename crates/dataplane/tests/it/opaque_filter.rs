//! SPP's opaque filter key: a port that names bytes of its frames (`opaque: {offset, length}`)
//! lets a filter on the `opaque` field claim frames by them. Here the first two bytes of the
//! UDP payload mark frames for blue, although they are addressed to red's MAC.

use crate::common::udp_frame;
use pearl_control::parse_config;
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::{MemoryPort, Port};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const RED_MAC: [u8; 6] = [2, 0, 0, 0, 1, 0];
const RED: usize = 1;
const BLUE: usize = 2;

fn config(port_key: &str) -> pearl_control::Config {
    let vr = |name: &str, id: u8, extra: &str| {
        format!(
            "  - name: {name}
    id: {id}
    interfaces:
      - {{name: eth0, port: m0, mac: '02:00:00:00:0{id}:00', addresses: [10.0.0.1/24]}}
      - {{name: eth1, port: m1, mac: '02:00:00:00:0{id}:01', addresses: [10.1.0.1/24]}}
    routes: [{{prefix: 198.51.100.0/24, via: 10.1.0.2}}]
    neighbors: [{{ip: 10.1.0.2, mac: '02:aa:00:00:00:02', interface: eth1}}]
{extra}"
        )
    };
    parse_config(&format!(
        "workers: 1
ports:
  - {{name: m0, interface: m0, driver: memory{port_key}}}
  - {{name: m1, interface: m1, driver: memory}}
vrs:
{}{}",
        vr("red", 1, ""),
        vr("blue", 2, "    match: [{opaque: 0xcafe, priority: 200}]\n")
    ))
    .expect("a valid config")
}

/// Packets each VR received from `frames`, replayed until 2,000 arrived.
fn received(port_key: &str, frames: Vec<Vec<u8>>) -> (u64, u64) {
    let config = config(port_key);
    let (d, _slow) = Dataplane::start(&config, |p, _, _| -> Result<Box<dyn Port>, _> {
        Ok(Box::new(if p == 0 { MemoryPort::new(&frames) } else { MemoryPort::new(Vec::<Vec<u8>>::new()) }))
    })
    .expect("starts");
    let rx = |vr: usize| d.sum(|c| c.vrs[vr].rx_packets.get());
    let deadline = Instant::now() + Duration::from_secs(10);
    while rx(RED) + rx(BLUE) < 2000 {
        assert!(Instant::now() < deadline, "the worker takes no frames");
        std::thread::sleep(Duration::from_millis(5));
    }
    let got = (rx(RED), rx(BLUE));
    d.stop();
    got
}

fn frames() -> Vec<Vec<u8>> {
    let plain = udp_frame(RED_MAC, Ipv4Addr::new(198, 51, 100, 7), 64);
    let mut marked = plain.clone();
    marked[42..44].copy_from_slice(&[0xca, 0xfe]); // the UDP payload's first two bytes
    vec![plain, marked]
}

#[test]
fn a_filter_on_the_opaque_key_claims_the_frames_whose_named_bytes_match() {
    let (red, blue) = received(", opaque: {offset: 42, length: 2}", frames());
    assert!(red > 0 && blue > 0 && red.abs_diff(blue) <= 64, "red {red}, blue {blue}: half the frames are marked");
}

#[test]
fn without_a_key_on_the_port_the_opaque_field_is_zero_and_the_filter_claims_nothing() {
    let (red, blue) = received("", frames());
    assert_eq!(blue, 0, "red {red}");
}

#[test]
fn a_key_out_of_bounds_is_refused_naming_the_field() {
    for (key, field) in [
        ("{offset: 42, length: 17}", "ports[0].opaque.length"),
        ("{offset: 42, length: 0}", "ports[0].opaque.length"),
        ("{offset: 9999, length: 2}", "ports[0].opaque.offset"),
        ("{offset: 42}", "ports[0].opaque.length"),
        ("{offset: 42, length: 2, mask: 3}", "ports[0].opaque"),
    ] {
        let text = format!("ports:\n  - {{name: m0, interface: m0, driver: memory, opaque: {key}}}\nvrs: []\n");
        let e = parse_config(&text).expect_err(key).to_string();
        assert!(e.starts_with(field), "{key}: {e}");
    }
}
