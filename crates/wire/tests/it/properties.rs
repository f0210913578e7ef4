//! Properties against naive references: extraction on hostile input, checksum arithmetic, and
//! the RFC 1624 TTL update against full recomputation.

use crate::frames;

use proptest::prelude::*;

use pearl_wire::checksum::{self, fold, sum};
use pearl_wire::{extract, Ipv4Packet, Ipv6Packet, L3Kind};

/// Invariants of any `Ok` extraction: offsets inside the frame and in layer order.
fn check_extraction(frame: &[u8]) {
    if let Ok(ex) = extract(frame, 3) {
        assert!(ex.info.l3_offset >= 14 && ex.info.l3_offset <= frame.len());
        if let Some(l4) = ex.info.l4_offset {
            assert!(l4 > ex.info.l3_offset && l4 <= frame.len());
            assert!(matches!(ex.info.kind, L3Kind::Ipv4 | L3Kind::Ipv6));
        }
        assert_eq!(ex.key.in_port(), 3);
        assert_eq!(ex.key.words[7..], [0, 0], "extract never sets the opaque key");
    }
}

/// Byte-wise 16-bit one's-complement sum, the textbook reference.
fn naive_sum(data: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for pair in data.chunks(2) {
        s += u32::from(pair[0]) << 8 | u32::from(*pair.get(1).unwrap_or(&0));
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// A random IPv4 header (with options); `corner` forces the old (1) or new (2) checksum to 0.
fn ipv4_header(fields: ([u8; 20], Vec<u8>), ttl: u8, corner: u8) -> Vec<u8> {
    let (mut fixed, mut options) = fields;
    options.truncate(40);
    options.truncate(options.len() / 4 * 4);
    let mut h = fixed.to_vec();
    h.extend_from_slice(&options);
    fixed[0] = 0x40 | (h.len() / 4) as u8;
    h[..20].copy_from_slice(&fixed);
    h[8] = if corner == 2 { ttl - 1 } else { ttl };
    h[10..12].fill(0);
    if corner != 0 {
        // Choose the identification word so the covered words sum to 0xffff: checksum 0x0000.
        h[4..6].fill(0);
        let ident = !fold(sum(&h));
        h[4..6].copy_from_slice(&ident.to_be_bytes());
    }
    h[8] = ttl;
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn extract_never_panics_on_arbitrary_bytes(frame in proptest::collection::vec(any::<u8>(), 0..256)) {
        check_extraction(&frame);
    }

    /// Random bytes rarely get past Ethernet; mutating real frames reaches every layer.
    #[test]
    fn extract_never_panics_on_mutated_frames(
        which in 0..frames::ALL.len(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut frame = frames::ALL[which].1.to_vec();
        for (at, byte) in edits {
            let i = at.index(frame.len());
            frame[i] = byte;
        }
        let len = cut.index(frame.len() + 1);
        check_extraction(&frame[..len]);
        check_extraction(&frame);
    }

    #[test]
    fn word_sum_equals_naive_sum(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        prop_assert_eq!(fold(sum(&data)), naive_sum(&data));
    }

    #[test]
    fn ttl_decrement_equals_full_recompute(
        fields in (any::<[u8; 20]>(), proptest::collection::vec(any::<u8>(), 0..=40)),
        ttl in 2u8..=255,
        corner in 0u8..3,
    ) {
        let mut header = ipv4_header(fields, ttl, corner);
        let mut expected = header.clone();
        prop_assert!(Ipv4Packet::new_unchecked(&header).verify_checksum());
        if corner == 1 {
            prop_assert_eq!(&header[10..12], &[0, 0]);
        }

        let new_ttl = Ipv4Packet::new_unchecked(&mut header).decrement_ttl();

        expected[8] = ttl - 1;
        let mut reference = Ipv4Packet::new_unchecked(&mut expected);
        reference.fill_checksum();
        prop_assert_eq!(new_ttl, Some(ttl - 1));
        prop_assert_eq!(&header, &expected);
        if corner == 2 {
            prop_assert_eq!(&header[10..12], &[0, 0], "eqn. 2 would give 0xffff here");
        }
    }
}

#[test]
fn expired_ttl_is_left_untouched() {
    for ttl in [0, 1] {
        let mut frame = frames::IPV4_UDP_DNS.to_vec();
        frame[14 + 8] = ttl;
        let before = frame.clone();
        assert_eq!(Ipv4Packet::new_checked(&mut frame[14..]).unwrap().decrement_ttl(), None);
        assert_eq!(frame, before);
    }
}

#[test]
fn hop_limit_decrements_until_one() {
    let mut frame = frames::IPV6_UDP_DNS.to_vec();
    let mut ip = Ipv6Packet::new_checked(&mut frame[14..]).unwrap();
    assert_eq!(ip.decrement_hop_limit(), Some(63));
    ip.set_hop_limit(1);
    assert_eq!(ip.decrement_hop_limit(), None);
    assert_eq!(ip.hop_limit(), 1);
}
