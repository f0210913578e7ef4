//! The internet checksum (RFC 1071) and the pseudo-headers of UDP, TCP and ICMPv6.
//!
//! Sums are carried unfolded in a `u64` so callers can chain pseudo-header, header and payload
//! sums and fold once; 32-bit words are summed because 2^16 ≡ 1 (mod 0xffff), which makes a
//! 32-bit one's-complement sum fold to the same 16-bit one with half the additions.

use core::net::{Ipv4Addr, Ipv6Addr};

/// One's-complement sum of `data` as big-endian 16-bit words (odd tail padded with zero), unfolded.
#[inline]
pub fn sum(data: &[u8]) -> u64 {
    let mut acc = 0u64;
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        acc += u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    }
    let rest = words.remainder();
    let mut tail = [0u8; 4];
    tail[..rest.len()].copy_from_slice(rest);
    acc + u64::from(u32::from_be_bytes(tail))
}

/// Folds an unfolded sum into 16 bits with end-around carry.
#[inline]
pub const fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The checksum field value for `data` whose checksum field is zero.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(data))
}

/// True when `data` (checksum field included) sums to one's-complement zero.
#[inline]
pub fn verifies(initial: u64, data: &[u8]) -> bool {
    fold(initial + sum(data)) == 0xffff
}

/// RFC 1624 eqn. 3: the checksum after one 16-bit word of the covered data changed from `old`
/// to `new`, HC' = ~(~HC + ~m + m'). Unlike eqn. 2 it never yields 0xffff where a full
/// recomputation gives 0x0000.
#[inline(always)]
pub const fn update(checksum: u16, old: u16, new: u16) -> u16 {
    // Three 16-bit words sum below 0x30000: two end-around folds always suffice, and a
    // per-packet path is better off without `fold`'s loop.
    let sum = (!checksum) as u32 + (!old) as u32 + new as u32;
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    !(sum as u16)
}

/// The addresses that UDP, TCP and ICMPv6 checksums cover besides their own bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PseudoHeader {
    V4 { src: Ipv4Addr, dst: Ipv4Addr },
    V6 { src: Ipv6Addr, dst: Ipv6Addr },
}

impl PseudoHeader {
    /// Unfolded sum of the pseudo-header for an upper-layer packet of `length` bytes.
    #[inline]
    pub fn sum(&self, protocol: u8, length: u32) -> u64 {
        let addrs = match self {
            PseudoHeader::V4 { src, dst } => sum(&src.octets()) + sum(&dst.octets()),
            PseudoHeader::V6 { src, dst } => sum(&src.octets()) + sum(&dst.octets()),
        };
        addrs + u64::from(protocol) + u64::from(length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // The worked example of RFC 1071 section 3: sum 0xddf2, checksum 0x220d.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(&data)), 0xddf2);
        assert_eq!(checksum(&data), 0x220d);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(sum(&[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
    }

    #[test]
    fn known_ipv4_header() {
        // Header from a capture; its checksum field (bytes 10..12) is 0xb861.
        let mut h =
            [0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7];
        assert!(verifies(0, &h));
        h[10] = 0;
        h[11] = 0;
        assert_eq!(checksum(&h), 0xb861);
    }
}
