use super::*;
use pearl_control::VxlanConfig;
use std::net::UdpSocket;

fn tunnel(vni: u32, dst_port: u16) -> VxlanConfig {
    VxlanConfig { vni, remote: "127.0.0.1".parse().unwrap(), local: Some("127.0.0.1".parse().unwrap()), dst_port }
}

/// A frame of `len` bytes behind a VXLAN header of `flags` and `vni`.
fn datagram(flags: u8, vni: u32, len: usize) -> Vec<u8> {
    let mut d = VxlanRepr { vni }.to_bytes().to_vec();
    d[0] = flags;
    d.extend((0..len).map(|i| i as u8));
    d
}

fn receive(port: &mut VxlanPort, pool: &mut PacketPool) -> Vec<Vec<u8>> {
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut out = Vec::new();
    port.rx_batch(pool, &mut out, 64).unwrap();
    let frames = out.iter().map(|p| p.data().to_vec()).collect();
    pool.give_all(&mut out);
    frames
}

#[test]
fn datagrams_are_demultiplexed_by_vni_and_the_malformed_and_unknown_are_counted() {
    let dst_port = 40_000 + (std::process::id() % 10_000) as u16;
    let mut pool = PacketPool::new(256);
    let mut a = VxlanPort::open("lo", &tunnel(100, dst_port), 0).unwrap();
    let mut b = VxlanPort::open("lo", &tunnel(200, dst_port), 0).unwrap();
    assert_eq!(a.rx_fd(), b.rx_fd(), "one socket per destination port");
    assert!(VxlanPort::open("lo", &tunnel(100, dst_port), 0).is_err(), "a tunnel has one port");
    let far = UdpSocket::bind("127.0.0.1:0").unwrap();
    for d in [datagram(0x08, 200, 60), datagram(0x08, 100, 64), datagram(0x00, 100, 64), datagram(0x08, 7, 64), vec![0x08, 0, 0]] {
        far.send_to(&d, ("127.0.0.1", dst_port)).unwrap();
    }
    let got = receive(&mut a, &mut pool);
    assert_eq!(got, vec![datagram(0x08, 100, 64)[8..].to_vec()], "only VNI 100's frame, without its header");
    assert_eq!(a.tunnel_refused(), TunnelRefused { malformed: 2, unknown_vni: 1, overflowed: 0 });
    assert_eq!(receive(&mut b, &mut pool), vec![datagram(0x08, 200, 60)[8..].to_vec()], "b's frame waited in its queue");
    drop(b);
    far.send_to(&datagram(0x08, 200, 60), ("127.0.0.1", dst_port)).unwrap();
    assert!(receive(&mut a, &mut pool).is_empty());
    assert_eq!(a.tunnel_refused().unknown_vni, 2, "a port gone is a VNI unknown");
}

#[test]
fn frames_leave_with_the_header_in_front_and_flows_spread_over_source_ports() {
    // The far end on another loopback address: the port's own receive socket has its port.
    let far = UdpSocket::bind("127.0.0.2:0").unwrap();
    far.set_read_timeout(Some(std::time::Duration::from_secs(1))).unwrap();
    let to_far = VxlanConfig { remote: "127.0.0.2".parse().unwrap(), ..tunnel(0x12_3456, far.local_addr().unwrap().port()) };
    let mut port = VxlanPort::open("lo", &to_far, 0).unwrap();
    let mut pool = PacketPool::new(64);
    let mut batch = Vec::new();
    for flow in 0..16u8 {
        let mut frame = vec![0u8; 60];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        frame[14] = 0x45;
        frame[23] = 17;
        frame[26..34].copy_from_slice(&[10, 0, 0, 1, 10, 0, 1, flow]);
        frame[34..38].copy_from_slice(&[0x30, 0x39, 0x00, flow]);
        let mut p = pool.take().unwrap();
        p.fill(&frame);
        batch.push(p);
    }
    assert_eq!(port.tx_batch(&mut batch, &mut pool).unwrap(), 16);
    let mut sources = std::collections::HashSet::new();
    let mut buf = [0u8; 128];
    for _ in 0..16 {
        let (n, from) = far.recv_from(&mut buf).unwrap();
        assert_eq!((n, &buf[..8]), (68, &[0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0][..]));
        assert!(from.port() >= 49_152, "RFC 7348's dynamic range: {from}");
        sources.insert(from.port());
    }
    assert!(sources.len() > 4, "16 flows left from {} source ports", sources.len());
}

#[test]
fn a_flows_hash_is_its_addresses_and_ports() {
    let mut frame = vec![0u8; 60];
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    frame[14] = 0x45;
    frame[23] = 6;
    let h = flow_hash(&frame);
    let mut other_port = frame.clone();
    other_port[35] = 1;
    let mut other_payload = frame.clone();
    other_payload[50] = 9;
    assert_ne!(h, flow_hash(&other_port));
    assert_eq!(h, flow_hash(&other_payload), "the payload is no part of the flow");
}
