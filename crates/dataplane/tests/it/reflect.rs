//! `code: reflect`: a unicast frame to the VR leaves by the port it came in by, its MACs
//! swapped and every other byte as it came; a broadcast goes to the VR's kernel instead.

use crate::common::udp_frame;
use pearl_control::parse_config;
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::packet::PacketPool;
use pearl_dataplane::port::{PcapPort, Port};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const CONFIG: &str = "workers: 1
ports:
  - {name: p0, interface: p0, driver: pcap}
  - {name: p1, interface: p1, driver: pcap}
vrs:
  - name: mirror
    id: 3
    code: reflect
    interfaces:
      - {name: eth0, port: p0, mac: '02:00:00:00:03:00', addresses: [10.0.0.1/24]}
      - {name: eth1, port: p1, mac: '02:00:00:00:03:01', addresses: [10.1.0.1/24]}
";

#[test]
fn a_reflect_vr_sends_each_frame_back_where_it_came_from_with_its_macs_swapped() {
    let frame = udp_frame([2, 0, 0, 0, 3, 0], Ipv4Addr::new(198, 51, 100, 7), 64);
    let broadcast = udp_frame([0xff; 6], Ipv4Addr::new(10, 0, 0, 255), 64);
    let dir = std::env::temp_dir();
    let path = |n: &str| dir.join(format!("pearl-reflect-{}-{n}.pcap", std::process::id()));
    let (input, output) = (path("in"), path("out"));
    let mut pool = PacketPool::new(8);
    let mut batch: Vec<_> = [&frame, &broadcast]
        .iter()
        .map(|f| {
            let mut p = pool.take_for(f.len()).unwrap();
            p.fill(f);
            p
        })
        .collect();
    PcapPort::writer(&input).unwrap().tx_batch(&mut batch, &mut pool).unwrap();

    let config = parse_config(CONFIG).unwrap();
    let (d, _slow) = Dataplane::start_programmed(&config, HashMap::new(), |p, _, _| -> Result<Box<dyn Port>, _> {
        Ok(Box::new(match p {
            0 => PcapPort::open(Some(&input), false, Some(&output)).unwrap(),
            _ => PcapPort::open(None, false, None).unwrap(),
        }))
    })
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while d.sum(|c| c.vrs[3].forwarded_packets.get()) < 1 {
        assert!(Instant::now() < deadline, "nothing reflected: {:?} {:?}", d.exceptions(3), d.drops(3));
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50)); // the batch's transmit
    let exceptions = d.exceptions(3);
    d.stop();

    let mut reflected = PcapPort::reader(&output, false).unwrap();
    let mut got = Vec::new();
    reflected.rx_batch(&mut pool, &mut got, 8).unwrap();
    let got: Vec<Vec<u8>> = got.iter().map(|p| p.data().to_vec()).collect();
    let mut expected = frame.clone();
    expected[..12].copy_from_slice(&[&frame[6..12], &frame[..6]].concat());
    assert_eq!(got, [expected], "the unicast frame alone, back out of p0 with its MACs swapped");
    assert!(exceptions.iter().any(|(r, n)| *r == "multicast" && *n == 1), "the broadcast to the kernel: {exceptions:?}");
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
}
