//! ICMPv6 messages (RFC 4443); echo is parsed into fields, everything else kept raw.

use core::net::Ipv6Addr;

use crate::bytes::{be16, be32, set_be16, set_be32};
use crate::checksum::{self, PseudoHeader};
use crate::error::{need, Layer, WireError};
use crate::numbers::ip_proto;

mod field {
    use core::ops::{Range, RangeFrom};
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    /// Type-specific: identifier and sequence number for echo.
    pub const REST_OF_HEADER: Range<usize> = 4..8;
    pub const ECHO_IDENT: Range<usize> = 4..6;
    pub const ECHO_SEQ_NO: Range<usize> = 6..8;
    pub const DATA: RangeFrom<usize> = 8..;
}

/// Every ICMPv6 message has type, code, checksum and 4 type-specific bytes.
pub const HEADER_LEN: usize = field::DATA.start;

pub const ECHO_REPLY: u8 = 129;
pub const ECHO_REQUEST: u8 = 128;

/// A view of an ICMPv6 message spanning the whole buffer (the IP payload).
#[derive(Debug, Clone)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv6Packet { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        need(Layer::Icmpv6, buffer.as_ref(), HEADER_LEN)?;
        Ok(Icmpv6Packet { buffer })
    }

    #[inline]
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    #[inline]
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    pub fn rest_of_header(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::REST_OF_HEADER])
    }

    pub fn echo_ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_IDENT])
    }

    pub fn echo_seq_no(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_SEQ_NO])
    }

    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA]
    }

    /// ICMPv6 checksums cover the IPv6 pseudo-header, hence the addresses.
    pub fn verify_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        let b = self.buffer.as_ref();
        checksum::verifies(pseudo_sum(src, dst, b.len()), b)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    pub fn set_msg_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::TYPE] = value;
    }

    pub fn set_code(&mut self, value: u8) {
        self.buffer.as_mut()[field::CODE] = value;
    }

    pub fn set_rest_of_header(&mut self, value: u32) {
        set_be32(&mut self.buffer.as_mut()[field::REST_OF_HEADER], value);
    }

    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }

    pub fn fill_checksum(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        set_be16(&mut self.buffer.as_mut()[field::CHECKSUM], 0);
        let b = self.buffer.as_ref();
        let sum = !checksum::fold(pseudo_sum(src, dst, b.len()) + checksum::sum(b));
        set_be16(&mut self.buffer.as_mut()[field::CHECKSUM], sum);
    }
}

fn pseudo_sum(src: Ipv6Addr, dst: Ipv6Addr, len: usize) -> u64 {
    PseudoHeader::V6 { src, dst }.sum(ip_proto::ICMPV6, len as u32)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmpv6Repr<'a> {
    EchoRequest {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    EchoReply {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    /// Any other message, type-specific header bytes and body kept as they are.
    Other {
        msg_type: u8,
        code: u8,
        rest_of_header: u32,
        data: &'a [u8],
    },
}

impl<'a> Icmpv6Repr<'a> {
    /// Parses a checked message, verifying its checksum.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv6Packet<&'a T>, src: Ipv6Addr, dst: Ipv6Addr) -> Result<Self, WireError> {
        if !packet.verify_checksum(src, dst) {
            return Err(WireError::BadChecksum { layer: Layer::Icmpv6, offset: field::CHECKSUM.start });
        }
        let data = &packet.buffer.as_ref()[field::DATA];
        let (ident, seq_no) = (packet.echo_ident(), packet.echo_seq_no());
        Ok(match (packet.msg_type(), packet.code()) {
            (ECHO_REQUEST, 0) => Icmpv6Repr::EchoRequest { ident, seq_no, data },
            (ECHO_REPLY, 0) => Icmpv6Repr::EchoReply { ident, seq_no, data },
            (msg_type, code) => Icmpv6Repr::Other { msg_type, code, rest_of_header: packet.rest_of_header(), data },
        })
    }

    fn data(&self) -> &'a [u8] {
        match *self {
            Icmpv6Repr::EchoRequest { data, .. } | Icmpv6Repr::EchoReply { data, .. } | Icmpv6Repr::Other { data, .. } => data,
        }
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data().len()
    }

    /// Writes the message into a buffer of exactly `buffer_len()` bytes, checksum included.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Icmpv6Packet<T>, src: Ipv6Addr, dst: Ipv6Addr) {
        let (msg_type, code, rest) = match *self {
            Icmpv6Repr::EchoRequest { ident, seq_no, .. } => (ECHO_REQUEST, 0, (u32::from(ident) << 16) | u32::from(seq_no)),
            Icmpv6Repr::EchoReply { ident, seq_no, .. } => (ECHO_REPLY, 0, (u32::from(ident) << 16) | u32::from(seq_no)),
            Icmpv6Repr::Other { msg_type, code, rest_of_header, .. } => (msg_type, code, rest_of_header),
        };
        packet.set_msg_type(msg_type);
        packet.set_code(code);
        packet.set_rest_of_header(rest);
        let data = self.data();
        packet.data_mut()[..data.len()].copy_from_slice(data);
        packet.fill_checksum(src, dst);
    }
}
