//! Software GSO against a simple reference: every segment a frame a receiver accepts
//! (checksums verify from scratch), the payload reassembles byte for byte, sequence numbers and
//! IPv4 identifications follow on, and TCP flags sit where Linux puts them.

use pearl_wire::checksum::{fold, sum};
use pearl_wire::offload::NEEDS_CSUM;
use pearl_wire::{finish_checksum, Gso, GsoSegments, Offload};
use proptest::prelude::*;

struct Super {
    frame: Vec<u8>,
    off: Offload,
    l3: usize,
    l4: usize,
    payload_at: usize,
}

/// A super-packet as a veth hands it over: headers, `payload`, L4 checksum partial.
fn super_packet(v4: bool, tcp: bool, vlan: bool, flags: u8, payload: &[u8], gso_size: u16) -> Super {
    let mut f = vec![0x02, 0, 0, 0, 1, 0, 0x02, 0xaa, 0, 0, 0, 1];
    if vlan {
        f.extend_from_slice(&[0x81, 0x00, 0x00, 0x0a]);
    }
    f.extend_from_slice(if v4 { &[0x08, 0x00] } else { &[0x86, 0xdd] });
    let l3 = f.len();
    let l4_header = if tcp { 32 } else { 8 }; // TCP with 12 bytes of options
    let l4_len = l4_header + payload.len();
    let protocol = if tcp { 6 } else { 17 };
    if v4 {
        f.extend_from_slice(&[0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, protocol, 0, 0, 10, 1, 0, 2, 198, 51, 100, 7]);
        f[l3 + 2..l3 + 4].copy_from_slice(&((20 + l4_len) as u16).to_be_bytes());
        let c = !fold(sum(&f[l3..l3 + 20]));
        f[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
    } else {
        f.extend_from_slice(&[0x60, 0, 0, 0, 0, 0, protocol, 64]);
        f[l3 + 4..l3 + 6].copy_from_slice(&(l4_len as u16).to_be_bytes());
        f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7]);
    }
    let l4 = f.len();
    if tcp {
        f.extend_from_slice(&[0x9c, 0x40, 0x14, 0x51, 0xff, 0xff, 0xff, 0x00, 0, 0, 0, 9, 0x80, flags, 0xff, 0xff, 0, 0, 0, 0]);
        f.extend_from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
    } else {
        f.extend_from_slice(&[0x9c, 0x40, 0x11, 0x51, 0, 0, 0, 0]);
        f[l4 + 4..l4 + 6].copy_from_slice(&(l4_len as u16).to_be_bytes());
    }
    let payload_at = f.len();
    f.extend_from_slice(payload);
    // Partial: the pseudo-header sum over the super-packet's L4 length.
    let addrs = if v4 { sum(&f[l3 + 12..l3 + 20]) } else { sum(&f[l3 + 8..l3 + 40]) };
    let at = l4 + if tcp { 16 } else { 6 };
    f[at..at + 2].copy_from_slice(&fold(addrs + u64::from(protocol) + l4_len as u64).to_be_bytes());
    let gso = match (tcp, v4) {
        (true, true) => Gso::TcpV4,
        (true, false) => Gso::TcpV6,
        (false, _) => Gso::UdpL4,
    };
    let off = Offload {
        flags: NEEDS_CSUM,
        gso,
        gso_ecn: false,
        hdr_len: payload_at as u16,
        gso_size,
        csum_start: l4 as u16,
        csum_offset: if tcp { 16 } else { 6 },
        encapsulated: 0,
    };
    Super { frame: f, off, l3, l4, payload_at }
}

/// Checks one segment from scratch; returns its payload.
fn check_segment(s: &Super, seg: &[u8], v4: bool, tcp: bool, index: usize) -> Vec<u8> {
    let (l3, l4) = (s.l3, s.l4);
    assert_eq!(&seg[..l3], &s.frame[..l3], "Ethernet header and tags copied");
    if v4 {
        assert_eq!(fold(sum(&seg[l3..l3 + 20])), 0xffff, "IPv4 header checksum of segment {index}");
        assert_eq!(usize::from(u16::from_be_bytes([seg[l3 + 2], seg[l3 + 3]])), seg.len() - l3);
        assert_eq!(u16::from_be_bytes([seg[l3 + 4], seg[l3 + 5]]), 0x1234 + index as u16, "IPv4 identification");
    } else {
        assert_eq!(usize::from(u16::from_be_bytes([seg[l3 + 4], seg[l3 + 5]])), seg.len() - l3 - 40);
    }
    let addrs = if v4 { sum(&seg[l3 + 12..l3 + 20]) } else { sum(&seg[l3 + 8..l3 + 40]) };
    let protocol = if tcp { 6u64 } else { 17 };
    let l4_len = (seg.len() - l4) as u64;
    assert_eq!(fold(addrs + protocol + l4_len + sum(&seg[l4..])), 0xffff, "L4 checksum of segment {index}");
    if !tcp {
        assert_eq!(u64::from(u16::from_be_bytes([seg[l4 + 4], seg[l4 + 5]])), l4_len, "UDP length");
    }
    seg[s.payload_at..].to_vec()
}

fn run(v4: bool, tcp: bool, vlan: bool, flags: u8, payload: &[u8], gso_size: u16) {
    let s = super_packet(v4, tcp, vlan, flags, payload, gso_size);
    let mut segs = GsoSegments::new(&s.frame, &s.off, s.l3).unwrap();
    let count = segs.remaining();
    assert_eq!(count, payload.len().div_ceil(usize::from(gso_size)).max(1));
    let mut buf = vec![0u8; segs.max_segment_len()];
    let mut joined = Vec::new();
    let mut index = 0;
    while let Some(len) = segs.next_into(&mut buf) {
        let seg = &buf[..len];
        let part = check_segment(&s, seg, v4, tcp, index);
        if tcp {
            let seq = u32::from_be_bytes([seg[s.l4 + 4], seg[s.l4 + 5], seg[s.l4 + 6], seg[s.l4 + 7]]);
            assert_eq!(seq, 0xffff_ff00u32.wrapping_add(joined.len() as u32), "sequence of segment {index}");
            let f = seg[s.l4 + 13];
            let last = index + 1 == count;
            assert_eq!(f & 0x09, if last { flags & 0x09 } else { 0 }, "FIN/PSH on the last segment only");
            assert_eq!(f & 0x80, if index == 0 { flags & 0x80 } else { 0 }, "CWR on the first only");
            assert_eq!(f & 0x10, flags & 0x10, "ACK on every segment");
        }
        joined.extend_from_slice(&part);
        index += 1;
    }
    assert_eq!(index, count);
    assert_eq!(joined, payload, "the segments' payloads are the super-packet's");
}

#[test]
fn a_tcp_v4_super_packet_is_cut_at_the_mss() {
    let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
    run(true, true, false, 0x18 | 0x01 | 0x80, &payload, 1448);
}

#[test]
fn a_udp_v6_super_packet_becomes_datagrams() {
    let payload: Vec<u8> = (0..3000u32).map(|i| (i * 13) as u8).collect();
    run(false, false, true, 0, &payload, 1200);
}

#[test]
fn a_bad_super_packet_is_refused_by_field() {
    let s = super_packet(true, true, false, 0x10, b"abc", 1000);
    let mut off = s.off;
    off.gso_size = 0;
    assert_eq!(GsoSegments::new(&s.frame, &off, s.l3).err().unwrap().field, "gso_size");
    off = s.off;
    off.gso = Gso::UdpL4;
    assert_eq!(GsoSegments::new(&s.frame, &off, s.l3).err().unwrap().field, "gso_type");
    assert_eq!(GsoSegments::new(&s.frame, &s.off, 3).err().unwrap().field, "ip version");
}

#[test]
fn a_short_buffer_gets_no_segment() {
    let payload = [7u8; 3000];
    let s = super_packet(true, true, false, 0x10, &payload, 1448);
    let mut segs = GsoSegments::new(&s.frame, &s.off, s.l3).unwrap();
    let mut small = [0u8; 100];
    assert_eq!(segs.next_into(&mut small), None);
    assert_eq!(segs.remaining(), 3, "nothing was consumed");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn segments_reassemble_and_verify(
        v4 in any::<bool>(),
        tcp in any::<bool>(),
        vlan in any::<bool>(),
        flags in prop_oneof![Just(0x10u8), Just(0x18), Just(0x19), Just(0x98)],
        len in 1usize..20_000,
        gso in 1u16..9000,
        seed in any::<u8>(),
    ) {
        let payload: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
        run(v4, tcp, vlan, if tcp { flags } else { 0 }, &payload, gso);
    }

    /// A complete frame whose checksum field is replaced by its pseudo-header sum is finished
    /// back to itself.
    #[test]
    fn finishing_a_partial_checksum_restores_the_complete_one(
        v4 in any::<bool>(), tcp in any::<bool>(), len in 0usize..3000, seed in any::<u8>(),
    ) {
        let payload: Vec<u8> = (0..len).map(|i| (i as u8) ^ seed).collect();
        let s = super_packet(v4, tcp, false, 0x10, &payload, 60000);
        let mut complete = vec![0u8; s.frame.len()];
        let mut segs = GsoSegments::new(&s.frame, &s.off, s.l3).unwrap();
        let n = segs.next_into(&mut complete).unwrap();
        prop_assert_eq!(n, s.frame.len());
        let mut partial = s.frame.clone();
        if v4 {
            // The reference's IPv4 header is as the segmenter leaves a single segment.
            partial[s.l3..s.l4].copy_from_slice(&complete[s.l3..s.l4]);
        }
        finish_checksum(&mut partial, &s.off).unwrap();
        prop_assert_eq!(partial, complete);
    }
}

/// A tunnel's headers a program may put in front of a super-packet.
#[derive(Clone, Copy, Debug)]
enum Tunnel {
    /// Outer IPv4 carrying the inner IP packet (protocol 4 or 41).
    IpInIpv4,
    /// Outer IPv6 carrying it (protocol 4 or 41).
    IpInIpv6,
    /// VXLAN: outer IPv4 or IPv6, UDP (checksum 0 or not), VXLAN, inner Ethernet.
    Vxlan { v6: bool, udp_checksum: bool },
    /// GRE with its checksum: outer IPv4, GRE, the inner IP packet.
    GreWithChecksum,
}

/// The internet checksum, word by word: the reference the segmenter is held to.
fn reference_checksum(data: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for pair in data.chunks(2) {
        s += u32::from(pair[0]) << 8 | u32::from(*pair.get(1).unwrap_or(&0));
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// `inner_ip` (an IP packet) behind the tunnel's headers for segment `index`, each length and
/// checksum computed for it; the outer headers start after a 14-byte Ethernet header.
fn reference_encapsulation(tunnel: Tunnel, inner_ip: &[u8], inner_eth: &[u8], index: u16) -> Vec<u8> {
    let inner_v4 = inner_ip[0] >> 4 == 4;
    let ip_proto = if inner_v4 { 4 } else { 41 };
    let mut f = vec![0x02, 0, 0, 0, 2, 0, 0x02, 0, 0, 0, 2, 1];
    let (outer_v6, next) = match tunnel {
        Tunnel::IpInIpv4 => (false, ip_proto),
        Tunnel::IpInIpv6 => (true, ip_proto),
        Tunnel::Vxlan { v6, .. } => (v6, 17),
        Tunnel::GreWithChecksum => (false, 47),
    };
    let mut after_ip = Vec::new();
    match tunnel {
        Tunnel::IpInIpv4 | Tunnel::IpInIpv6 => after_ip.extend_from_slice(inner_ip),
        Tunnel::Vxlan { .. } => {
            let mut vxlan = vec![0x12, 0xb5, 0x12, 0xb5, 0, 0, 0, 0, 0x08, 0, 0, 0, 0, 0, 42, 0];
            vxlan.extend_from_slice(inner_eth);
            vxlan.extend_from_slice(inner_ip);
            let len = vxlan.len() as u16;
            vxlan[4..6].copy_from_slice(&len.to_be_bytes());
            after_ip = vxlan;
        }
        Tunnel::GreWithChecksum => {
            let mut gre = vec![0x80, 0, if inner_v4 { 0x08 } else { 0x86 }, if inner_v4 { 0 } else { 0xdd }, 0, 0, 0, 0];
            gre.extend_from_slice(inner_ip);
            let c = reference_checksum(&gre);
            gre[4..6].copy_from_slice(&c.to_be_bytes());
            after_ip = gre;
        }
    }
    let (src, dst): (Vec<u8>, Vec<u8>) = if outer_v6 {
        (
            [0x20, 1, 0xd, 0xb8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1].to_vec(),
            [0x20, 1, 0xd, 0xb8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2].to_vec(),
        )
    } else {
        (vec![10, 9, 0, 1], vec![10, 9, 0, 2])
    };
    if let Tunnel::Vxlan { v6, udp_checksum } = tunnel {
        if udp_checksum || v6 {
            let mut pseudo = [src.clone(), dst.clone()].concat();
            pseudo.extend_from_slice(&[0, 17]);
            pseudo.extend_from_slice(&(after_ip.len() as u16).to_be_bytes());
            pseudo.extend_from_slice(&after_ip);
            let c = match reference_checksum(&pseudo) {
                0 => 0xffff,
                c => c,
            };
            after_ip[6..8].copy_from_slice(&c.to_be_bytes());
        }
    }
    if outer_v6 {
        f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
        f.extend_from_slice(&(after_ip.len() as u16).to_be_bytes());
        f.extend_from_slice(&[next, 64]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
    } else {
        let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, next, 0, 0];
        ip[2..4].copy_from_slice(&((20 + after_ip.len()) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&0xbeefu16.wrapping_add(index).to_be_bytes());
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        let c = reference_checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend_from_slice(&ip);
    }
    f.extend_from_slice(&after_ip);
    f
}

/// Each segment of an encapsulated super-packet is what the tunnel's headers make of the
/// corresponding segment of the inner super-packet cut alone.
fn run_encapsulated(tunnel: Tunnel, v4: bool, tcp: bool, payload: &[u8], gso_size: u16) {
    let inner = super_packet(v4, tcp, false, 0x18, payload, gso_size);
    let mut alone = GsoSegments::new(&inner.frame, &inner.off, inner.l3).unwrap();
    let mut expected = Vec::new();
    let mut buf = vec![0u8; alone.max_segment_len()];
    let mut index = 0;
    while let Some(len) = alone.next_into(&mut buf) {
        // Initial identification and UDP checksum as the program wrote them: made anew per segment.
        let mut e = reference_encapsulation(tunnel, &buf[inner.l3..len], &inner.frame[..inner.l3], index);
        if let Tunnel::Vxlan { v6: false, udp_checksum: false } = tunnel {
            assert_eq!(&e[40..42], &[0, 0]);
        }
        expected.push(std::mem::take(&mut e));
        index += 1;
    }
    // The encapsulated super-packet: the program's headers, made for the whole of it (the
    // identification is the first segment's, the UDP checksum 0 or anything but 0), in front of
    // the inner packet with its checksum still partial.
    let mut frame = reference_encapsulation(tunnel, &inner.frame[inner.l3..], &inner.frame[..inner.l3], 0);
    let grown = frame.len() - inner.frame.len();
    if let Tunnel::Vxlan { udp_checksum: true, v6: false } = tunnel {
        frame[40..42].copy_from_slice(&[0x12, 0x34]);
    }
    let mut off = inner.off;
    off.shift(grown as i32);
    off.encapsulated = (inner.l3 + grown) as u16;
    let mut segs = GsoSegments::new(&frame, &off, 14).unwrap();
    let mut buf = vec![0u8; segs.max_segment_len()];
    for (i, want) in expected.iter().enumerate() {
        let len = segs.next_into(&mut buf).unwrap_or_else(|| panic!("segment {i} of {}", expected.len()));
        assert_eq!(&buf[..len], &want[..], "segment {i} through {tunnel:?}");
    }
    assert_eq!(segs.next_into(&mut buf), None);
}

#[test]
fn an_ip_in_ip_super_packet_is_cut_with_its_outer_header_made_per_segment() {
    let payload: Vec<u8> = (0..6000u32).map(|i| (i * 5) as u8).collect();
    run_encapsulated(Tunnel::IpInIpv4, true, true, &payload, 1448);
    run_encapsulated(Tunnel::IpInIpv6, false, true, &payload, 1428);
}

#[test]
fn headers_that_are_no_tunnel_are_refused_naming_the_encapsulation() {
    let inner = super_packet(true, true, false, 0x18, &[1; 3000], 1448);
    let mut frame = reference_encapsulation(Tunnel::IpInIpv4, &inner.frame[inner.l3..], &inner.frame[..inner.l3], 0);
    // The outer header says TCP: nothing a tunnel would carry.
    frame[14 + 9] = 6;
    let mut off = inner.off;
    off.shift(20);
    off.encapsulated = 34;
    let e = GsoSegments::new(&frame, &off, 14).err().unwrap();
    assert_eq!((e.field, e.offset), ("encapsulation", 34));
    // An inner header that is not where the offload says.
    frame[14 + 9] = 4;
    off.encapsulated = 30;
    assert_eq!(GsoSegments::new(&frame, &off, 14).err().unwrap().field, "encapsulation");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn encapsulated_segments_are_the_inner_segments_behind_true_outer_headers(
        tunnel in prop_oneof![
            Just(Tunnel::IpInIpv4),
            Just(Tunnel::IpInIpv6),
            any::<(bool, bool)>().prop_map(|(v6, udp_checksum)| Tunnel::Vxlan { v6, udp_checksum }),
            Just(Tunnel::GreWithChecksum),
        ],
        v4 in any::<bool>(),
        tcp in any::<bool>(),
        len in 1usize..20_000,
        gso in 500u16..9000,
    ) {
        let payload: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(13)).collect();
        run_encapsulated(tunnel, v4, tcp, &payload, gso);
    }
}
