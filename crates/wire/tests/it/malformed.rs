//! Every `WireError` variant `extract` can return, from a good frame with one field broken; and
//! the faults it must not call errors (a router forwards on the IP header, as Linux does).

use crate::frames;

use pearl_wire::{extract, Layer, WireError};

/// `frame` with `edits` (offset, byte) applied.
fn broken(frame: &[u8], edits: &[(usize, u8)]) -> Vec<u8> {
    let mut f = frame.to_vec();
    for &(at, byte) in edits {
        f[at] = byte;
    }
    f
}

#[track_caller]
fn rejects(frame: &[u8], expected: WireError, reason: &str, display: &str) {
    let err = extract(frame, 1).unwrap_err();
    assert_eq!(err, expected);
    assert_eq!(err.reason(), reason);
    assert_eq!(err.to_string(), display);
}

#[test]
fn truncated_ethernet() {
    rejects(
        &frames::IPV4_UDP_DNS[..13],
        WireError::Truncated { layer: Layer::Ethernet, offset: 0, needed: 14, present: 13 },
        "truncated",
        "truncated ethernet header at byte 0: need 14 bytes, have 13",
    );
}

#[test]
fn truncated_inner_vlan_tag() {
    rejects(
        &frames::QINQ_IPV4_UDP[..20],
        WireError::Truncated { layer: Layer::Vlan, offset: 18, needed: 4, present: 2 },
        "truncated",
        "truncated vlan tag header at byte 18: need 4 bytes, have 2",
    );
}

#[test]
fn truncated_ipv4_and_ipv6_fixed_headers() {
    let err = extract(&frames::IPV4_UDP_DNS[..30], 1).unwrap_err();
    assert_eq!(err, WireError::Truncated { layer: Layer::Ipv4, offset: 14, needed: 20, present: 16 });
    let err = extract(&frames::IPV6_UDP_DNS[..50], 1).unwrap_err();
    assert_eq!(err, WireError::Truncated { layer: Layer::Ipv6, offset: 14, needed: 40, present: 36 });
}

#[test]
fn ipv4_ihl_below_five() {
    rejects(
        &broken(frames::IPV4_UDP_DNS, &[(14, 0x43)]),
        WireError::BadIhl { offset: 14, ihl: 3 },
        "bad_ihl",
        "ipv4 ihl at byte 14: 3 < 5",
    );
}

#[test]
fn ipv4_ihl_beyond_frame() {
    let err = extract(&broken(frames::IPV4_UDP_DNS, &[(14, 0x4f)])[..50], 1).unwrap_err();
    assert_eq!(err, WireError::Truncated { layer: Layer::Ipv4, offset: 14, needed: 60, present: 36 });
}

#[test]
fn ipv4_total_length_beyond_frame() {
    rejects(
        &broken(frames::IPV4_UDP_DNS, &[(16, 0x01), (17, 0x00)]),
        WireError::BadTotalLength { offset: 16, total_len: 256, header_len: 20, present: 57 },
        "bad_total_length",
        "ipv4 total length at byte 16: 256 outside 20..=57",
    );
}

#[test]
fn ipv4_total_length_below_header() {
    let err = extract(&broken(frames::IPV4_OPTIONS_IGMP, &[(16, 0), (17, 20)]), 1).unwrap_err();
    assert_eq!(err, WireError::BadTotalLength { offset: 16, total_len: 20, header_len: 24, present: 46 });
}

#[test]
fn ip_version_disagrees_with_ethertype() {
    rejects(
        &broken(frames::IPV4_UDP_DNS, &[(14, 0x65)]),
        WireError::BadVersion { layer: Layer::Ipv4, offset: 14, expected: 4, found: 6 },
        "bad_version",
        "ipv4 version at byte 14: 6 != 4",
    );
    let err = extract(&broken(frames::VLAN_IPV6_ICMPV6_ECHO, &[(18, 0x45)]), 1).unwrap_err();
    assert_eq!(err, WireError::BadVersion { layer: Layer::Ipv6, offset: 18, expected: 6, found: 4 });
}

#[test]
fn ipv6_payload_length_beyond_frame() {
    rejects(
        &broken(frames::IPV6_EXT_CHAIN_TCP, &[(18, 0x01), (19, 0x00)]),
        WireError::BadPayloadLength { offset: 18, payload_len: 256, present: 44 },
        "bad_payload_length",
        "ipv6 payload length at byte 18: 256 > 44 bytes present",
    );
}

#[test]
fn arp_with_wrong_sizes_or_types() {
    rejects(
        &broken(frames::ARP_REQUEST, &[(18, 8)]),
        WireError::BadArpSizes { offset: 18, hardware_len: 8, protocol_len: 4 },
        "bad_arp_sizes",
        "arp address sizes at byte 18: hardware 8 (want 6), protocol 4 (want 4)",
    );
    let err = extract(&broken(frames::ARP_REQUEST, &[(15, 6)]), 1).unwrap_err();
    assert_eq!(err, WireError::BadArpTypes { offset: 14, hardware_type: 6, protocol_type: 0x0800 });
    assert_eq!(err.reason(), "bad_arp_types");
    let err = extract(&frames::ARP_REQUEST[..40], 1).unwrap_err();
    assert_eq!(err, WireError::Truncated { layer: Layer::Arp, offset: 14, needed: 28, present: 26 });
}

#[test]
fn ethernet_padding_is_not_an_error() {
    let mut padded = frames::IPV4_UDP_DNS.to_vec();
    padded.extend_from_slice(&[0xee; 9]);
    assert_eq!(extract(&padded, 1), extract(frames::IPV4_UDP_DNS, 1));
}

#[test]
fn every_frame_truncated_anywhere_is_an_error_not_a_panic() {
    for (name, frame) in frames::ALL {
        let full = extract(frame, 1).unwrap();
        for len in 0..frame.len() {
            let cut = &frame[..len];
            if let Ok(ex) = extract(cut, 1) {
                // Only trailing bytes outside every header (padding, payload) may go.
                assert!(ex.info.l4_offset.unwrap_or(ex.info.l3_offset) <= len, "{name} cut at {len}");
                assert_eq!(ex.key, full.key, "{name} cut at {len}");
            }
        }
    }
}

/// What `extract` makes of a frame it must accept: protocol, ports, where L4 starts.
fn accepted(frame: &[u8]) -> (u8, u16, u16, Option<usize>) {
    let ex = extract(frame, 1).unwrap_or_else(|e| panic!("refused: {e}"));
    (ex.key.ip_proto(), ex.key.l4_src(), ex.key.l4_dst(), ex.info.l4_offset)
}

#[test]
fn transport_lengths_that_do_not_fit_are_forwarded_with_the_ports_as_read() {
    // UDP length 4, and 38 where 37 bytes are there.
    assert_eq!(accepted(&broken(frames::IPV4_UDP_DNS, &[(38, 0), (39, 4)])), (17, 54321, 53, Some(34)));
    assert_eq!(accepted(&broken(frames::IPV6_UDP_DNS, &[(58, 0), (59, 38)])), accepted(frames::IPV6_UDP_DNS));
    // TCP data offsets of 4 and 15 words (the segment has 5).
    for offset in [0x40, 0xf0] {
        assert_eq!(accepted(&broken(frames::IPV4_TCP_SYN, &[(46, offset)])), accepted(frames::IPV4_TCP_SYN));
    }
}

#[test]
fn a_transport_header_cut_short_by_the_ip_length_reads_as_far_as_it_goes() {
    // Total length 24 leaves the UDP ports (4 bytes) but not the rest of its header.
    assert_eq!(accepted(&broken(frames::IPV4_UDP_DNS, &[(16, 0), (17, 24)])), (17, 54321, 53, Some(34)));
    // Total length 22: the source port only.
    assert_eq!(accepted(&broken(frames::IPV4_UDP_DNS, &[(16, 0), (17, 22)])), (17, 54321, 0, Some(34)));
    // An echo request with 6 of its 8 header bytes: type and code are there.
    assert_eq!(accepted(&broken(frames::IPV4_ICMP_ECHO, &[(16, 0), (17, 26)])), (1, 8, 0, Some(34)));
}

#[test]
fn an_extension_chain_the_walker_cannot_follow_is_forwarded_without_ports() {
    // Destination options (at 70) claiming 4 × 8 bytes where 28 remain: the first header,
    // hop-by-hop (0), is the protocol.
    let ex = extract(&broken(frames::IPV6_EXT_CHAIN_TCP, &[(71, 3)]), 1).unwrap();
    assert_eq!((ex.key.ip_proto(), ex.key.l4_src(), ex.key.l4_dst(), ex.info.l4_offset), (0, 0, 0, None));
    assert!(ex.info.ipv6_hop_by_hop, "the hop-by-hop header is still seen, for the slow path");
    // Nine destination-options headers: one more than the walker follows.
    let mut frame = frames::IPV6_UDP_DNS[..54].to_vec();
    let udp = &frames::IPV6_UDP_DNS[54..];
    let chain = 9;
    frame[20] = 60;
    frame[18..20].copy_from_slice(&((chain * 8 + udp.len()) as u16).to_be_bytes());
    for i in 0..chain {
        let next = if i + 1 == chain { 17 } else { 60 };
        frame.extend_from_slice(&[next, 0, 1, 4, 0, 0, 0, 0]);
    }
    frame.extend_from_slice(udp);
    assert_eq!(accepted(&frame), (60, 0, 0, None));
    // With eight, the walker reaches UDP.
    let eight = [&frame[..14], &[0x60, 0, 0, 0], &((8 * 8 + udp.len()) as u16).to_be_bytes()[..], &frame[20..54], &frame[62..]].concat();
    assert_eq!(accepted(&eight).0, 17);
}
