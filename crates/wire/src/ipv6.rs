//! IPv6 fixed headers (RFC 8200) and the router's in-place hop-limit decrement.

use core::net::Ipv6Addr;

use crate::bytes::{be16, be32, set_be16, set_be32};
use crate::error::{need, Layer, WireError};
use crate::ipv6_ext::ExtHeaderWalker;

mod field {
    use core::ops::Range;
    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Range<usize> = 8..24;
    pub const DST_ADDR: Range<usize> = 24..40;
}

pub const HEADER_LEN: usize = field::DST_ADDR.end;

/// A view of an IPv6 packet; after `new_checked` the header and `payload_len` bytes are present.
/// Jumbograms (payload length 0 with a jumbo option) are not supported.
#[derive(Debug, Clone)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        need(Layer::Ipv6, b, HEADER_LEN)?;
        let version = b[0] >> 4;
        if version != 6 {
            return Err(WireError::BadVersion { layer: Layer::Ipv6, offset: 0, expected: 6, found: version });
        }
        let payload_len = be16(&b[field::LENGTH]);
        if usize::from(payload_len) > b.len() - HEADER_LEN {
            return Err(WireError::BadPayloadLength { offset: field::LENGTH.start, payload_len, present: b.len() - HEADER_LEN });
        }
        Ok(Ipv6Packet { buffer })
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    pub fn traffic_class(&self) -> u8 {
        (be32(&self.buffer.as_ref()[field::VER_TC_FLOW]) >> 20) as u8
    }

    pub fn flow_label(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::VER_TC_FLOW]) & 0x000f_ffff
    }

    #[inline]
    pub fn payload_len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// The first next-header value: an extension header or the upper-layer protocol.
    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NXT_HDR]
    }

    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    #[inline]
    pub fn src_addr(&self) -> Ipv6Addr {
        addr(&self.buffer.as_ref()[field::SRC_ADDR])
    }

    #[inline]
    pub fn dst_addr(&self) -> Ipv6Addr {
        addr(&self.buffer.as_ref()[field::DST_ADDR])
    }

    /// The payload up to `payload_len`, without link-layer padding.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.packet_len()]
    }

    /// Header plus payload.
    #[inline]
    pub fn packet_len(&self) -> usize {
        HEADER_LEN + usize::from(self.payload_len())
    }

    /// Walks the extension headers; its offsets count from the start of this header.
    #[inline]
    pub fn ext_headers(&self) -> ExtHeaderWalker<'_> {
        ExtHeaderWalker::new(&self.buffer.as_ref()[..self.packet_len()], self.next_header(), HEADER_LEN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Sets version 6 with the given traffic class and flow label.
    pub fn set_version_class_flow(&mut self, traffic_class: u8, flow_label: u32) {
        let word = (6 << 28) | (u32::from(traffic_class) << 20) | (flow_label & 0x000f_ffff);
        set_be32(&mut self.buffer.as_mut()[field::VER_TC_FLOW], word);
    }

    pub fn set_payload_len(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::LENGTH], value);
    }

    pub fn set_next_header(&mut self, value: u8) {
        self.buffer.as_mut()[field::NXT_HDR] = value;
    }

    pub fn set_hop_limit(&mut self, value: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = value;
    }

    pub fn set_src_addr(&mut self, value: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&value.octets());
    }

    pub fn set_dst_addr(&mut self, value: Ipv6Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&value.octets());
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.packet_len();
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// The forwarding step: hop limit − 1 (IPv6 has no header checksum). Returns the new value,
    /// or `None` with the packet untouched when it is 0 or 1 and must not be forwarded.
    #[inline(always)]
    pub fn decrement_hop_limit(&mut self) -> Option<u8> {
        let hop = &mut self.buffer.as_mut()[field::HOP_LIMIT];
        if *hop <= 1 {
            return None;
        }
        *hop -= 1;
        Some(*hop)
    }
}

fn addr(b: &[u8]) -> Ipv6Addr {
    let mut octets = [0u8; 16];
    octets.copy_from_slice(&b[..16]);
    Ipv6Addr::from(octets)
}

/// An IPv6 fixed header's contents; extension headers, if any, are part of the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Repr {
    pub src_addr: Ipv6Addr,
    pub dst_addr: Ipv6Addr,
    pub next_header: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub flow_label: u32,
    pub payload_len: usize,
}

impl Ipv6Repr {
    /// A header with hop limit 64, traffic class 0 and no flow label.
    pub const fn new(src_addr: Ipv6Addr, dst_addr: Ipv6Addr, next_header: u8, payload_len: usize) -> Self {
        Ipv6Repr { src_addr, dst_addr, next_header, hop_limit: 64, traffic_class: 0, flow_label: 0, payload_len }
    }

    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv6Packet<T>) -> Self {
        Ipv6Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
            payload_len: usize::from(packet.payload_len()),
        }
    }

    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv6Packet<T>) {
        packet.set_version_class_flow(self.traffic_class, self.flow_label);
        packet.set_payload_len(self.payload_len as u16);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}
