//! What a router must not forward, judged from the IP header alone before any lookup: the
//! checks the Linux router makes in `ip_rcv_core`, `ip_route_input_slow`, `ip6_rcv_core` and
//! `ip6_forward`, with the same outcome (a silent drop, or the kernel's own answer), so that a
//! fast VR answers every packet class as a kernel router would.

use crate::reasons::{Exception, VrDrop};
use pearl_wire::checksum;

/// Why a packet does not take the forwarding path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Drop(VrDrop),
    /// The VR's kernel decides (and answers with the ICMP error it owes).
    Slow(Exception),
}

/// An IPv4 packet (`l3`: from its header on, length already checked by the extractor) with
/// source `src` and destination `dst`.
#[inline]
pub fn check_ipv4(l3: &[u8], header_len: usize, src: u32, dst: u32) -> Option<Refusal> {
    // RFC 1812 §5.2.2: verify the header checksum; one pass over 20 bytes.
    if !checksum::verifies(0, &l3[..header_len]) {
        return Some(Refusal::Drop(VrDrop::BadChecksum));
    }
    // RFC 1812 §5.3.7: multicast, limited broadcast, unspecified and loopback sources. The
    // rest of 0.0.0.0/8 is an ordinary address to Linux since 5.3, as to us.
    if src == 0 || src >> 24 == 127 || src >> 28 == 0xe || src == u32::MAX {
        return Some(Refusal::Drop(VrDrop::MartianSource));
    }
    if dst == 0 || dst >> 24 == 127 {
        return Some(Refusal::Drop(VrDrop::MartianDestination));
    }
    None
}

/// An IPv6 packet with source `src` and unicast destination `dst`.
#[inline]
pub fn check_ipv6(src: u128, dst: u128) -> Option<Refusal> {
    const LOOPBACK: u128 = 1;
    // RFC 4291 §2.7: multicast is never a source; the loopback address never leaves its node
    // (§2.5.3); the unspecified address is never forwarded (§2.5.2).
    if src >> 120 == 0xff || src == LOOPBACK || src == 0 {
        return Some(Refusal::Drop(VrDrop::MartianSource));
    }
    if dst == LOOPBACK {
        return Some(Refusal::Drop(VrDrop::MartianDestination));
    }
    // No route leads to the unspecified address: the kernel says so (ICMPv6 no route).
    if dst == 0 {
        return Some(Refusal::Slow(Exception::NoRoute));
    }
    // A link-local source may reach the VR itself, but must not leave its link: the kernel
    // tells which, and answers "beyond scope of source address" for the latter.
    if src >> 118 == 0x3fa {
        return Some(Refusal::Slow(Exception::LinkLocalSource));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// A 20-byte header from `src` to `dst` with a correct checksum.
    fn header(src: Ipv4Addr, dst: Ipv4Addr) -> [u8; 20] {
        let mut h = [0x45, 0, 0, 20, 0, 0, 0x40, 0, 64, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        h[12..16].copy_from_slice(&src.octets());
        h[16..20].copy_from_slice(&dst.octets());
        let c = checksum::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }

    fn v4(src: &str, dst: &str) -> Option<Refusal> {
        let (s, d): (Ipv4Addr, Ipv4Addr) = (src.parse().unwrap(), dst.parse().unwrap());
        check_ipv4(&header(s, d), 20, s.to_bits(), d.to_bits())
    }

    fn v6(src: &str, dst: &str) -> Option<Refusal> {
        let (s, d): (Ipv6Addr, Ipv6Addr) = (src.parse().unwrap(), dst.parse().unwrap());
        check_ipv6(s.to_bits(), d.to_bits())
    }

    #[test]
    fn ordinary_unicast_passes() {
        assert_eq!(v4("10.1.0.2", "198.51.100.7"), None);
        assert_eq!(v4("169.254.1.1", "198.51.100.7"), None, "Linux forwards IPv4 link-local sources");
        assert_eq!(v6("2001:db8:1::2", "2001:db8:100::7"), None);
    }

    #[test]
    fn a_header_whose_checksum_fails_is_dropped_as_such() {
        let mut h = header("10.1.0.2".parse().unwrap(), "198.51.100.7".parse().unwrap());
        h[8] = 63; // TTL changed without the checksum
        assert_eq!(check_ipv4(&h, 20, 0x0a01_0002, 0xc633_6407), Some(Refusal::Drop(VrDrop::BadChecksum)));
    }

    #[test]
    fn martian_sources_and_destinations_are_dropped() {
        for src in ["127.0.0.1", "0.0.0.0", "224.0.0.5", "239.1.1.1", "255.255.255.255"] {
            assert_eq!(v4(src, "198.51.100.7"), Some(Refusal::Drop(VrDrop::MartianSource)), "{src}");
        }
        assert_eq!(v4("0.1.2.3", "198.51.100.7"), None, "Linux forwards from 0.0.0.0/8 but 0.0.0.0");
        for dst in ["127.0.0.1", "0.0.0.0"] {
            assert_eq!(v4("10.1.0.2", dst), Some(Refusal::Drop(VrDrop::MartianDestination)), "{dst}");
        }
        for src in ["::1", "::", "ff02::1", "ff0e::5"] {
            assert_eq!(v6(src, "2001:db8:100::7"), Some(Refusal::Drop(VrDrop::MartianSource)), "{src}");
        }
        assert_eq!(v6("2001:db8:1::2", "::1"), Some(Refusal::Drop(VrDrop::MartianDestination)));
        assert_eq!(v6("2001:db8:1::2", "::"), Some(Refusal::Slow(Exception::NoRoute)), "the kernel answers no route");
    }

    #[test]
    fn an_ipv6_link_local_source_is_left_to_the_kernel() {
        for src in ["fe80::1", "febf::1"] {
            assert_eq!(v6(src, "2001:db8:100::7"), Some(Refusal::Slow(Exception::LinkLocalSource)), "{src}");
        }
        assert_eq!(v6("fec0::1", "2001:db8:100::7"), None, "site-local (deprecated) is not link-local");
    }
}
