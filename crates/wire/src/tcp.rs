//! TCP segment headers (RFC 9293): enough to classify and to fix checksums after rewrites.

use crate::bytes::{be16, be32, set_be16};
use crate::checksum::{self, PseudoHeader};
use crate::error::{need, Layer, WireError};
use crate::numbers::ip_proto;

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ_NUM: Range<usize> = 4..8;
    pub const ACK_NUM: Range<usize> = 8..12;
    /// Data offset (high nibble) and the flag bits.
    pub const OFF_FLAGS: Range<usize> = 12..14;
    pub const WINDOW: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = field::URGENT.end;

pub mod flags {
    pub const FIN: u16 = 0x001;
    pub const SYN: u16 = 0x002;
    pub const RST: u16 = 0x004;
    pub const PSH: u16 = 0x008;
    pub const ACK: u16 = 0x010;
    pub const URG: u16 = 0x020;
}

/// A view of a TCP segment spanning the whole buffer (the IP payload).
#[derive(Debug, Clone)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        need(Layer::Tcp, b, HEADER_LEN)?;
        let data_offset = b[field::OFF_FLAGS.start] >> 4;
        if data_offset < 5 || usize::from(data_offset) * 4 > b.len() {
            return Err(WireError::BadTcpDataOffset { offset: field::OFF_FLAGS.start, data_offset, present: b.len() });
        }
        Ok(TcpPacket { buffer })
    }

    #[inline]
    pub fn src_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::SRC_PORT])
    }

    #[inline]
    pub fn dst_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::DST_PORT])
    }

    pub fn seq_number(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::SEQ_NUM])
    }

    pub fn ack_number(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::ACK_NUM])
    }

    /// Header length in bytes, options included.
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::OFF_FLAGS.start] >> 4) * 4
    }

    /// The flag bits (see [`flags`]).
    pub fn flags(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::OFF_FLAGS]) & 0x01ff
    }

    pub fn window(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::WINDOW])
    }

    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    pub fn urgent_pointer(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::URGENT])
    }

    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    pub fn verify_checksum(&self, pseudo: &PseudoHeader) -> bool {
        let b = self.buffer.as_ref();
        checksum::verifies(pseudo.sum(ip_proto::TCP, b.len() as u32), b)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    pub fn set_src_port(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::SRC_PORT], value);
    }

    pub fn set_dst_port(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::DST_PORT], value);
    }

    pub fn set_checksum(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    pub fn fill_checksum(&mut self, pseudo: &PseudoHeader) {
        self.set_checksum(0);
        let b = self.buffer.as_ref();
        let sum = !checksum::fold(pseudo.sum(ip_proto::TCP, b.len() as u32) + checksum::sum(b));
        self.set_checksum(sum);
    }
}
