//! Offload state a frame carries between devices: the virtio-net header (`struct
//! virtio_net_hdr`, 10 bytes) that Linux puts in front of frames on PACKET sockets with
//! PACKET_VNET_HDR and on TAPs with IFF_VNET_HDR.
//!
//! A sender with checksum offload leaves the L4 checksum partial (CHECKSUM_PARTIAL: the field
//! holds the pseudo-header sum, and whoever finishes it sums from `csum_start` and stores at
//! `csum_start + csum_offset`); a sender with TSO/GSO hands over one super-packet of up to 64 KiB
//! to be cut into `gso_size`-byte segments. Carrying this header from the device that received a
//! frame to the one that sends it is what lets a router forward such frames whole, as the
//! kernel's own forwarding does.

use core::fmt;

/// `virtio_net_hdr` in the byte order Linux uses for packet sockets and TAPs on little-endian
/// hosts (legacy virtio: native order).
pub mod field {
    use core::ops::Range;
    pub const FLAGS: usize = 0;
    pub const GSO_TYPE: usize = 1;
    pub const HDR_LEN: Range<usize> = 2..4;
    pub const GSO_SIZE: Range<usize> = 4..6;
    pub const CSUM_START: Range<usize> = 6..8;
    pub const CSUM_OFFSET: Range<usize> = 8..10;
}

/// Length of `virtio_net_hdr`.
pub const VNET_HDR_LEN: usize = 10;

/// `flags`: the checksum at `csum_start + csum_offset` is partial and must be finished.
pub const NEEDS_CSUM: u8 = 1;
/// `flags`: the checksum was verified by the device (receive side only).
pub const DATA_VALID: u8 = 2;

/// What kind of super-packet a frame is (`gso_type` without its ECN bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Gso {
    #[default]
    None,
    TcpV4,
    TcpV6,
    /// UDP segmentation offload (`VIRTIO_NET_HDR_GSO_UDP_L4`): each segment a datagram.
    UdpL4,
}

impl Gso {
    const fn code(self) -> u8 {
        match self {
            Gso::None => 0,
            Gso::TcpV4 => 1,
            Gso::TcpV6 => 4,
            Gso::UdpL4 => 5,
        }
    }
}

/// `gso_type` bit: the TCP super-packet carries CWR, which must be on the first segment only.
const GSO_ECN: u8 = 0x80;

/// The offload state of one frame: a parsed `virtio_net_hdr`. `Offload::default()` is a frame
/// complete as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offload {
    pub flags: u8,
    pub gso: Gso,
    pub gso_ecn: bool,
    /// Length of the headers in front of the payload (a hint: Linux recomputes it).
    pub hdr_len: u16,
    /// Payload bytes per segment of a super-packet.
    pub gso_size: u16,
    /// From the first byte of the frame.
    pub csum_start: u16,
    /// From `csum_start`.
    pub csum_offset: u16,
    /// Where the inner IP header starts, from the first byte of the frame, when a VR's program
    /// put headers in front of a super-packet (an encapsulation); 0: none. No virtio-net header
    /// can say this, so such a frame is cut in software, each segment's outer headers made
    /// anew (`GsoSegments`).
    pub encapsulated: u16,
}

impl Offload {
    /// A frame complete as it stands: nothing to finish, nothing to cut.
    #[inline]
    pub fn is_plain(&self) -> bool {
        self.flags & NEEDS_CSUM == 0 && self.gso == Gso::None
    }

    #[inline]
    pub fn needs_csum(&self) -> bool {
        self.flags & NEEDS_CSUM != 0
    }

    #[inline]
    pub fn is_gso(&self) -> bool {
        self.gso != Gso::None
    }

    /// A super-packet behind headers a program put in front of it: only software can cut it.
    #[inline]
    pub fn is_encapsulated(&self) -> bool {
        self.encapsulated != 0
    }

    /// Reads a header; an unknown `gso_type` (such as the legacy UDP fragmentation offload,
    /// which no device of ours asks for) is an error naming that byte.
    pub fn parse(header: &[u8]) -> Result<Offload, BadOffload> {
        if header.len() < VNET_HDR_LEN {
            return Err(BadOffload { field: "length", offset: header.len() });
        }
        let word = |r: core::ops::Range<usize>| u16::from_le_bytes([header[r.start], header[r.start + 1]]);
        let gso_type = header[field::GSO_TYPE];
        let gso = match gso_type & !GSO_ECN {
            0 => Gso::None,
            1 => Gso::TcpV4,
            4 => Gso::TcpV6,
            5 => Gso::UdpL4,
            _ => return Err(BadOffload { field: "gso_type", offset: field::GSO_TYPE }),
        };
        Ok(Offload {
            flags: header[field::FLAGS],
            gso,
            gso_ecn: gso_type & GSO_ECN != 0,
            hdr_len: word(field::HDR_LEN),
            gso_size: word(field::GSO_SIZE),
            csum_start: word(field::CSUM_START),
            csum_offset: word(field::CSUM_OFFSET),
            encapsulated: 0,
        })
    }

    /// Writes the header into the first `VNET_HDR_LEN` bytes of `out`.
    pub fn emit(&self, out: &mut [u8]) {
        out[field::FLAGS] = self.flags;
        out[field::GSO_TYPE] = self.gso.code() | if self.gso_ecn { GSO_ECN } else { 0 };
        out[field::HDR_LEN].copy_from_slice(&self.hdr_len.to_le_bytes());
        out[field::GSO_SIZE].copy_from_slice(&self.gso_size.to_le_bytes());
        out[field::CSUM_START].copy_from_slice(&self.csum_start.to_le_bytes());
        out[field::CSUM_OFFSET].copy_from_slice(&self.csum_offset.to_le_bytes());
    }

    /// Moves the offsets by `delta` bytes, for a frame whose headers grew or shrank in front of
    /// the checksummed part (a VLAN tag put back or taken out).
    #[inline]
    pub fn shift(&mut self, delta: i32) {
        if self.needs_csum() {
            self.csum_start = (i32::from(self.csum_start) + delta) as u16;
        }
        if self.hdr_len != 0 {
            self.hdr_len = (i32::from(self.hdr_len) + delta) as u16;
        }
        if self.encapsulated != 0 {
            self.encapsulated = (i32::from(self.encapsulated) + delta) as u16;
        }
    }
}

/// A virtio-net header pearld cannot honour, naming its field and byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadOffload {
    pub field: &'static str,
    pub offset: usize,
}

impl fmt::Display for BadOffload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "virtio-net header: unsupported {} at byte {}", self.field, self.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tcp_super_packet_header_round_trips() {
        // As a veth hands one over: NEEDS_CSUM, TCPv4 with ECN, 66-byte headers, MSS 1448,
        // checksum from byte 34, field 16 bytes in.
        let bytes = [1u8, 0x81, 66, 0, 0xa8, 0x05, 34, 0, 16, 0];
        let o = Offload::parse(&bytes).unwrap();
        assert_eq!(
            o,
            Offload {
                flags: NEEDS_CSUM,
                gso: Gso::TcpV4,
                gso_ecn: true,
                hdr_len: 66,
                gso_size: 1448,
                csum_start: 34,
                csum_offset: 16,
                encapsulated: 0
            }
        );
        assert!(o.needs_csum() && o.is_gso() && !o.is_plain());
        let mut out = [0u8; VNET_HDR_LEN];
        o.emit(&mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn a_plain_header_is_all_zeroes() {
        let o = Offload::parse(&[0; VNET_HDR_LEN]).unwrap();
        assert!(o.is_plain());
        assert_eq!(o, Offload::default());
    }

    #[test]
    fn unknown_gso_types_and_short_headers_are_refused_by_name() {
        let e = Offload::parse(&[0, 3, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap_err();
        assert!(e.to_string().contains("gso_type"), "{e}");
        assert!(Offload::parse(&[0; 9]).is_err());
    }

    #[test]
    fn shifting_moves_the_checksum_start_and_header_length() {
        let mut o = Offload { flags: NEEDS_CSUM, csum_start: 34, hdr_len: 66, ..Offload::default() };
        o.shift(4);
        assert_eq!((o.csum_start, o.hdr_len), (38, 70));
        let mut plain = Offload::default();
        plain.shift(4);
        assert_eq!(plain, Offload::default(), "a plain frame stays plain");
    }
}
