//! What a router must not forward never leaves a fast VR, and is counted by reason: IPv4
//! headers whose checksum fails, martian sources (the VR's own addresses among them), sources
//! uRPF refuses; what the VR's kernel must judge goes to it: a packet above the egress MTU
//! (which it answers with "fragmentation needed" or fragments), one leaving by its arrival
//! interface (redirect), IPv6 hop-by-hop options, 802.1Q tags; and what Linux forwards is
//! forwarded (transport headers that do not add up, sources in 0.0.0.0/8 but 0.0.0.0). In-memory ports stand in for real ones; the system
//! tests send the same classes from hosts over veth.

use crate::common::udp_frame;
use pearl_control::parse_config;
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::{MemoryPort, Port};
use pearl_wire::checksum::checksum;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const VR_MAC: [u8; 6] = [2, 0, 0, 0, 1, 0];

fn config(urpf: &str) -> pearl_control::Config {
    parse_config(&format!(
        "workers: 1
ports:
  - {{name: m0, interface: m0, driver: memory}}
  - {{name: m1, interface: m1, driver: memory}}
vrs:
  - name: red
    id: 1
    code: ip
    interfaces:
      - {{name: eth0, port: m0, mac: '02:00:00:00:01:00', addresses: [10.0.0.1/24], urpf: {urpf}}}
      - {{name: eth1, port: m1, mac: '02:00:00:00:01:01', addresses: [10.1.0.1/24, '2001:db8:2::1/64'], mtu: 1400}}
    routes: [{{prefix: 198.51.100.0/24, via: 10.1.0.2}}, {{prefix: 192.0.2.0/24, via: 10.0.0.9}},
             {{prefix: '2001:db8:100::/48', via: '2001:db8:2::2'}}]
    neighbors: [{{ip: 10.1.0.2, mac: '02:aa:00:00:00:02', interface: eth1}},
                {{ip: 10.0.0.9, mac: '02:aa:00:00:00:09', interface: eth0}},
                {{ip: '2001:db8:2::2', mac: '02:aa:00:00:00:02', interface: eth1}}]
"
    ))
    .expect("a valid config")
}

/// A frame to 198.51.100.7 (routed out of eth1) from `src`.
fn from(src: Ipv4Addr) -> Vec<u8> {
    let mut f = udp_frame(VR_MAC, Ipv4Addr::new(198, 51, 100, 7), 64);
    f[26..30].copy_from_slice(&src.octets());
    reseal(&mut f);
    f
}

fn reseal(f: &mut [u8]) {
    f[24..26].fill(0);
    let c = checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
}

/// What the VR did with `frames`, replayed until it saw 2,000 of them.
struct Outcome {
    forwarded: u64,
    drops: Vec<(&'static str, u64)>,
    exceptions: Vec<(&'static str, u64)>,
    malformed: u64,
}

impl Outcome {
    fn drop(&self, reason: &str) -> u64 {
        self.drops.iter().find(|(r, _)| *r == reason).expect("a known reason").1
    }
    fn exception(&self, reason: &str) -> u64 {
        self.exceptions.iter().find(|(r, _)| *r == reason).expect("a known reason").1
    }
    fn total_drops(&self) -> u64 {
        self.drops.iter().map(|(_, n)| n).sum()
    }
}

fn run(urpf: &str, frames: Vec<Vec<u8>>) -> Outcome {
    let config = config(urpf);
    let (d, _slow) = Dataplane::start(&config, |p, _, _| -> Result<Box<dyn Port>, _> {
        Ok(Box::new(if p == 0 { MemoryPort::new(&frames) } else { MemoryPort::new(Vec::<Vec<u8>>::new()) }))
    })
    .expect("starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while d.sum(|c| c.vrs[1].rx_packets.get() + c.ports[0].malformed.iter().map(|m| m.get()).sum::<u64>()) < 2000 {
        assert!(Instant::now() < deadline, "the worker takes no frames");
        std::thread::sleep(Duration::from_millis(5));
    }
    let outcome = Outcome {
        forwarded: d.sum(|c| c.vrs[1].forwarded_packets.get()),
        drops: d.drops(1),
        exceptions: d.exceptions(1),
        malformed: d.sum(|c| c.ports[0].malformed.iter().map(|m| m.get()).sum()),
    };
    d.stop();
    outcome
}

#[test]
fn a_plain_packet_is_forwarded_and_nothing_is_dropped() {
    let o = run("strict", vec![from(Ipv4Addr::new(10, 0, 0, 2))]);
    assert!(o.forwarded > 0);
    assert_eq!(o.total_drops(), 0, "{:?}", o.drops);
}

#[test]
fn a_bad_ipv4_header_checksum_is_dropped_and_counted() {
    let mut f = from(Ipv4Addr::new(10, 0, 0, 2));
    f[24] ^= 0x40;
    let o = run("off", vec![f]);
    assert_eq!(o.forwarded, 0);
    assert!(o.drop("bad_checksum") > 0, "{:?}", o.drops);
}

#[test]
fn martian_sources_and_the_vrs_own_addresses_as_source_are_dropped() {
    for src in [[127, 0, 0, 1], [0, 0, 0, 0], [224, 0, 0, 5], [10, 1, 0, 1], [10, 0, 0, 1]] {
        let o = run("off", vec![from(Ipv4Addr::from(src))]);
        assert_eq!(o.forwarded, 0, "source {src:?}");
        assert!(o.drop("martian_source") > 0, "source {src:?}: {:?}", o.drops);
    }
}

#[test]
fn urpf_strict_wants_the_source_behind_the_arrival_interface_loose_wants_a_route() {
    let elsewhere = from(Ipv4Addr::new(198, 51, 100, 9)); // routed out of eth1
    let nowhere = from(Ipv4Addr::new(203, 0, 113, 1)); // no route at all
    let o = run("strict", vec![elsewhere.clone()]);
    assert_eq!((o.forwarded, o.drop("urpf") > 0), (0, true), "strict: {:?}", o.drops);
    let o = run("loose", vec![elsewhere.clone()]);
    assert!(o.forwarded > 0 && o.drop("urpf") == 0, "loose passes a routed source: {:?}", o.drops);
    let o = run("loose", vec![nowhere.clone()]);
    assert_eq!((o.forwarded, o.drop("urpf") > 0), (0, true), "loose: {:?}", o.drops);
    for f in [elsewhere, nowhere] {
        let o = run("off", vec![f]);
        assert!(o.forwarded > 0 && o.total_drops() == 0, "off checks nothing: {:?}", o.drops);
    }
}

#[test]
fn a_packet_above_the_egress_mtu_goes_to_the_vrs_kernel() {
    // 1,450 bytes of IP toward eth1, whose MTU is 1,400.
    let mut f = from(Ipv4Addr::new(10, 0, 0, 2));
    f.resize(14 + 1450, 0);
    f[16..18].copy_from_slice(&1450u16.to_be_bytes());
    f[38..40].copy_from_slice(&1430u16.to_be_bytes());
    f[40..42].fill(0); // no UDP checksum
    reseal(&mut f);
    let o = run("off", vec![f]);
    assert_eq!(o.forwarded, 0);
    assert!(o.exception("mtu_exceeded") > 0, "{:?}", o.exceptions);
    assert_eq!(o.malformed, 0);
}

#[test]
fn a_first_fragment_is_forwarded() {
    // The first of three fragments of a UDP datagram: its UDP length covers all three.
    let mut f = from(Ipv4Addr::new(10, 0, 0, 2));
    f[20] = 0x20; // MF
    f[38..40].copy_from_slice(&3000u16.to_be_bytes());
    reseal(&mut f);
    let o = run("off", vec![f]);
    assert!(o.forwarded > 0, "malformed: {}, drops: {:?}", o.malformed, o.drops);
}

#[test]
fn a_packet_leaving_by_its_arrival_interface_goes_to_the_kernel_which_sends_the_redirect() {
    // 192.0.2.0/24 is routed back out of eth0, where the packet came in.
    let mut f = from(Ipv4Addr::new(10, 0, 0, 2));
    f[30..34].copy_from_slice(&[192, 0, 2, 7]);
    reseal(&mut f);
    let o = run("off", vec![f]);
    assert_eq!(o.forwarded, 0);
    assert!(o.exception("redirect") > 0, "{:?}", o.exceptions);
}

/// A UDP packet from 2001:db8:1::2 to 2001:db8:100::7 (routed out of eth1) with a hop-by-hop
/// header holding one PadN option when `hop_by_hop`.
fn udp6(hop_by_hop: bool) -> Vec<u8> {
    let mut f = VR_MAC.to_vec();
    f.extend_from_slice(&[2, 0xaa, 0, 0, 0, 1, 0x86, 0xdd]);
    let ext: &[u8] = if hop_by_hop { &[17, 0, 1, 4, 0, 0, 0, 0] } else { &[] };
    let payload_len = (ext.len() + 8 + 4) as u16;
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&payload_len.to_be_bytes());
    f.extend_from_slice(&[if hop_by_hop { 0 } else { 17 }, 64]);
    f.extend_from_slice(&"2001:db8:1::2".parse::<std::net::Ipv6Addr>().unwrap().octets());
    f.extend_from_slice(&"2001:db8:100::7".parse::<std::net::Ipv6Addr>().unwrap().octets());
    f.extend_from_slice(ext);
    f.extend_from_slice(&[0x9c, 0x40, 0x82, 0x9a, 0, 12, 0, 0, b'p', b'i', b'n', b'g']);
    f
}

#[test]
fn ipv6_hop_by_hop_options_are_the_kernels_to_process() {
    let o = run("off", vec![udp6(false)]);
    assert!(o.forwarded > 0 && o.exception("ipv6_hop_by_hop") == 0, "{:?}", o.exceptions);
    let o = run("off", vec![udp6(true)]);
    assert_eq!(o.forwarded, 0);
    assert!(o.exception("ipv6_hop_by_hop") > 0, "{:?}", o.exceptions);
}

#[test]
fn a_vlan_tagged_frame_is_not_forwarded_by_an_untagged_interface() {
    let plain = from(Ipv4Addr::new(10, 0, 0, 2));
    let tagged = [&plain[..12], &[0x81, 0x00, 0x00, 0x05], &plain[12..]].concat();
    let o = run("off", vec![tagged]);
    assert_eq!(o.forwarded, 0);
    assert!(o.exception("vlan_tagged") > 0, "{:?}", o.exceptions);
}

#[test]
fn transport_headers_that_do_not_add_up_and_this_network_sources_are_forwarded() {
    let mut bad_udp_length = from(Ipv4Addr::new(10, 0, 0, 2));
    bad_udp_length[38..40].copy_from_slice(&4000u16.to_be_bytes());
    let this_network = from(Ipv4Addr::new(0, 1, 2, 3));
    let mut trailer = from(Ipv4Addr::new(10, 0, 0, 2));
    trailer.extend_from_slice(&[0xee; 12]);
    for (what, f) in [("UDP length 4000", bad_udp_length), ("source 0.1.2.3", this_network), ("a trailer", trailer)] {
        let o = run("off", vec![f]);
        assert!(o.forwarded > 0 && o.total_drops() == 0 && o.malformed == 0, "{what}: {:?}", o.drops);
    }
}
