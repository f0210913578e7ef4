//! Frames leave with what their port can take: a port without checksum offload or GSO (a
//! memory port here, standing in for AF_XDP or pcap) gets complete frames and segments, a port
//! that takes them gets the frame and its offload state untouched.

use pearl_dataplane::packet::PacketPool;
use pearl_dataplane::port::tx_offload::TxOffload;
use pearl_dataplane::port::{MemoryPort, Offloads};
use pearl_wire::checksum::{fold, sum};
use pearl_wire::offload::NEEDS_CSUM;
use pearl_wire::{Gso, Offload};

/// An IPv4 TCP frame carrying `payload`, its checksum partial (the pseudo-header sum).
fn partial_tcp(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0xaa, 0, 0, 0, 2, 0x02, 0, 0, 0, 1, 1, 0x08, 0x00];
    let total = 20 + 20 + payload.len();
    f.extend_from_slice(&[0x45, 0, (total >> 8) as u8, total as u8, 0, 7, 0x40, 0, 63, 6, 0, 0, 10, 0, 0, 2, 198, 51, 100, 7]);
    let c = !fold(sum(&f[14..34]));
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&[0x9c, 0x40, 0x14, 0x51, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    let pseudo = fold(sum(&f[26..34]) + 6 + (total - 20) as u64);
    f[50..52].copy_from_slice(&pseudo.to_be_bytes());
    f
}

fn verifies(seg: &[u8]) -> bool {
    let l4_len = seg.len() - 34;
    fold(sum(&seg[14..34])) == 0xffff && fold(sum(&seg[26..34]) + 6 + l4_len as u64 + sum(&seg[34..])) == 0xffff
}

fn offload(gso_size: u16) -> Offload {
    Offload {
        flags: NEEDS_CSUM,
        gso: if gso_size > 0 { Gso::TcpV4 } else { Gso::None },
        gso_size,
        csum_start: 34,
        csum_offset: 16,
        hdr_len: 54,
        ..Offload::default()
    }
}

#[test]
fn a_port_without_offloads_gets_finished_checksums_and_segments_in_order() {
    let mut pool = PacketPool::with_large(64, 4);
    let mut port = MemoryPort::new(Vec::<Vec<u8>>::new()).capture_last(64);
    let payload: Vec<u8> = (0..5000u32).map(|i| (i * 3) as u8).collect();
    let big = partial_tcp(&payload);
    let small = partial_tcp(b"one small segment");
    let mut batch = Vec::new();
    let mut p = pool.take_for(big.len()).unwrap();
    p.fill(&big);
    p.offload = offload(1448);
    batch.push(p);
    let mut p = pool.take().unwrap();
    p.fill(&small);
    p.offload = offload(0);
    batch.push(p);
    let (small_before, large_before) = (pool.available(), pool.available_large());

    let done = TxOffload::default().transmit(&mut port, Offloads::default(), &mut batch, &mut pool);
    assert_eq!((done.handed, done.sent, done.dropped), (5, 5, 0), "4 segments and the small frame");
    let out: Vec<&[u8]> = port.captured().collect();
    assert_eq!(out.len(), 5);
    assert!(out.iter().all(|f| verifies(f)), "every frame leaves with a correct checksum");
    let joined: Vec<u8> = out[..4].iter().flat_map(|f| f[54..].to_vec()).collect();
    assert_eq!(joined, payload, "the segments carry the super-packet's payload in order");
    assert!(out[..4].iter().all(|f| f.len() <= 54 + 1448));
    assert_eq!(&out[4][54..], b"one small segment");
    assert_eq!((pool.available(), pool.available_large()), (small_before + 1, large_before + 1), "every buffer came back");
}

#[test]
fn a_port_with_offloads_gets_the_frame_as_it_came() {
    let mut pool = PacketPool::with_large(8, 2);
    let mut port = MemoryPort::new(Vec::<Vec<u8>>::new()).capture_last(8);
    // Fits a memory port's capture slot (2 KiB), yet is a super-packet of two segments.
    let big = partial_tcp(&[5u8; 1800]);
    let mut p = pool.take_for(big.len()).unwrap();
    p.fill(&big);
    p.offload = offload(1448);
    let mut batch = vec![p];
    let all = Offloads { rx_unmarked_partial: false, tx_csum: true, tx_gso: true };
    let done = TxOffload::default().transmit(&mut port, all, &mut batch, &mut pool);
    assert_eq!((done.handed, done.sent), (1, 1));
    assert!(port.captured().next().unwrap() == &big[..], "untouched: the device finishes and cuts it");
}

#[test]
fn an_encapsulated_super_packet_is_cut_here_even_for_a_port_that_cuts() {
    let mut pool = PacketPool::with_large(8, 2);
    let mut port = MemoryPort::new(Vec::<Vec<u8>>::new()).capture_last(8);
    // IP in IP: an outer IPv4 header (protocol 4, from 10.9.0.1 to 10.9.0.2) put in front of
    // the super-packet's IPv4 header, as a program that grew the frame's head leaves it.
    let inner = partial_tcp(&[5u8; 1800]);
    let mut big = inner[..14].to_vec();
    let mut outer = vec![0x45, 0, 0, 0, 0, 9, 0x40, 0, 64, 4, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2];
    outer[2..4].copy_from_slice(&((inner.len() - 14 + 20) as u16).to_be_bytes());
    big.extend_from_slice(&outer);
    big.extend_from_slice(&inner[14..]);
    let mut p = pool.take_for(big.len()).unwrap();
    p.fill(&big);
    let mut off = offload(1448);
    off.shift(20);
    off.encapsulated = 34;
    p.offload = off;
    let mut batch = vec![p];
    let all = Offloads { rx_unmarked_partial: false, tx_csum: true, tx_gso: true };
    let done = TxOffload::default().transmit(&mut port, all, &mut batch, &mut pool);
    assert_eq!((done.handed, done.sent, done.dropped), (2, 2, 0), "two segments, cut here");
    for (k, f) in port.captured().enumerate() {
        assert_eq!(fold(sum(&f[14..34])), 0xffff, "segment {k}: the outer header's checksum");
        assert_eq!(usize::from(u16::from_be_bytes([f[16], f[17]])), f.len() - 14, "segment {k}: the outer header's length");
        assert!(verifies(&[&f[..14], &f[34..]].concat()), "segment {k}: the inner packet is complete");
    }
}
