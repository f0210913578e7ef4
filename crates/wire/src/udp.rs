//! UDP datagrams (RFC 768).

use crate::bytes::{be16, set_be16};
use crate::checksum::{self, PseudoHeader};
use crate::error::{need, Layer, WireError};
use crate::numbers::ip_proto;

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// A view of a UDP datagram; after `new_checked` its `len()` bytes are present.
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// `buffer` is the IP payload; the length field must fit inside it.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        need(Layer::Udp, b, HEADER_LEN)?;
        let length = be16(&b[field::LENGTH]);
        if usize::from(length) < HEADER_LEN || usize::from(length) > b.len() {
            return Err(WireError::BadUdpLength { offset: field::LENGTH.start, length, present: b.len() });
        }
        Ok(UdpPacket { buffer })
    }

    #[inline]
    pub fn src_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::SRC_PORT])
    }

    #[inline]
    pub fn dst_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::DST_PORT])
    }

    /// The length field: header plus payload.
    #[inline]
    pub fn len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }

    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) == HEADER_LEN
    }

    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// Checks the checksum, except the all-zero "none" value IPv4 permits (RFC 768).
    pub fn verify_checksum(&self, pseudo: &PseudoHeader) -> bool {
        if self.checksum() == 0 && matches!(pseudo, PseudoHeader::V4 { .. }) {
            return true;
        }
        let datagram = &self.buffer.as_ref()[..usize::from(self.len())];
        checksum::verifies(pseudo.sum(ip_proto::UDP, u32::from(self.len())), datagram)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    pub fn set_src_port(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::SRC_PORT], value);
    }

    pub fn set_dst_port(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::DST_PORT], value);
    }

    pub fn set_len(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::LENGTH], value);
    }

    pub fn set_checksum(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Computes the checksum over pseudo-header and datagram; a zero result is sent as 0xffff
    /// because zero means "no checksum" on IPv4.
    pub fn fill_checksum(&mut self, pseudo: &PseudoHeader) {
        self.set_checksum(0);
        let len = self.len();
        let datagram = &self.buffer.as_ref()[..usize::from(len)];
        let sum = !checksum::fold(pseudo.sum(ip_proto::UDP, u32::from(len)) + checksum::sum(datagram));
        self.set_checksum(if sum == 0 { 0xffff } else { sum });
    }
}

/// A UDP datagram's ports and payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr<'a> {
    pub src_port: u16,
    pub dst_port: u16,
    pub payload: &'a [u8],
}

impl<'a> UdpRepr<'a> {
    /// Parses a checked datagram, verifying its checksum against `pseudo`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &UdpPacket<&'a T>, pseudo: &PseudoHeader) -> Result<Self, WireError> {
        if !packet.verify_checksum(pseudo) {
            return Err(WireError::BadChecksum { layer: Layer::Udp, offset: field::CHECKSUM.start });
        }
        let payload = &packet.buffer.as_ref()[HEADER_LEN..usize::from(packet.len())];
        Ok(UdpRepr { src_port: packet.src_port(), dst_port: packet.dst_port(), payload })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }

    /// Writes header, payload and checksum into a buffer of at least `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut UdpPacket<T>, pseudo: &PseudoHeader) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(self.buffer_len() as u16);
        packet.payload_mut().copy_from_slice(self.payload);
        packet.fill_checksum(pseudo);
    }
}
