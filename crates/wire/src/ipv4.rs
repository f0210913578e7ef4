//! IPv4 headers (RFC 791), options included, and the router's in-place TTL decrement.

use core::net::Ipv4Addr;

use crate::bytes::{be16, set_be16};
use crate::checksum;
use crate::error::{need, Layer, WireError};

mod field {
    use core::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    /// TTL and protocol form one 16-bit word of the checksum; the TTL update edits that word.
    pub const TTL_PROTOCOL: Range<usize> = 8..10;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC_ADDR: Range<usize> = 12..16;
    pub const DST_ADDR: Range<usize> = 16..20;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = field::DST_ADDR.end;
/// Longest header: IHL is 4 bits of 32-bit words.
pub const MAX_HEADER_LEN: usize = 60;

const DONT_FRAG: u16 = 0x4000;
const MORE_FRAGS: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

/// A view of an IPv4 packet; after `new_checked` the header and `total_len` bytes are present.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Validates version, IHL and total length against the buffer (which may carry link padding).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        need(Layer::Ipv4, b, HEADER_LEN)?;
        let version = b[field::VER_IHL] >> 4;
        if version != 4 {
            return Err(WireError::BadVersion { layer: Layer::Ipv4, offset: 0, expected: 4, found: version });
        }
        let ihl = b[field::VER_IHL] & 0x0f;
        if ihl < 5 {
            return Err(WireError::BadIhl { offset: field::VER_IHL, ihl });
        }
        let header_len = usize::from(ihl) * 4;
        need(Layer::Ipv4, b, header_len)?;
        let total_len = be16(&b[field::LENGTH]);
        if usize::from(total_len) < header_len || usize::from(total_len) > b.len() {
            return Err(WireError::BadTotalLength { offset: field::LENGTH.start, total_len, header_len, present: b.len() });
        }
        Ok(Ipv4Packet { buffer })
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    #[inline]
    pub fn has_options(&self) -> bool {
        self.header_len() > HEADER_LEN
    }

    /// The raw options; routers hand packets with options to the slow path.
    #[inline]
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    pub fn dscp_ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN]
    }

    #[inline]
    pub fn total_len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }

    pub fn ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::IDENT])
    }

    pub fn dont_frag(&self) -> bool {
        be16(&self.buffer.as_ref()[field::FLG_OFF]) & DONT_FRAG != 0
    }

    #[inline]
    pub fn more_frags(&self) -> bool {
        be16(&self.buffer.as_ref()[field::FLG_OFF]) & MORE_FRAGS != 0
    }

    /// Fragment offset in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (be16(&self.buffer.as_ref()[field::FLG_OFF]) & OFFSET_MASK) << 3
    }

    /// True for any fragment, the first one (offset 0, more-fragments set) included.
    #[inline]
    pub fn is_fragment(&self) -> bool {
        be16(&self.buffer.as_ref()[field::FLG_OFF]) & (MORE_FRAGS | OFFSET_MASK) != 0
    }

    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    #[inline]
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        addr(&self.buffer.as_ref()[field::SRC_ADDR])
    }

    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        addr(&self.buffer.as_ref()[field::DST_ADDR])
    }

    pub fn verify_checksum(&self) -> bool {
        checksum::verifies(0, &self.buffer.as_ref()[..self.header_len()])
    }

    /// The payload up to `total_len`, without link-layer padding.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets version 4 and the IHL for a header of `header_len` bytes (a multiple of 4, ≤ 60).
    pub fn set_header_len(&mut self, header_len: usize) {
        self.buffer.as_mut()[field::VER_IHL] = 0x40 | ((header_len / 4) as u8 & 0x0f);
    }

    pub fn set_dscp_ecn(&mut self, value: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = value;
    }

    pub fn set_total_len(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::LENGTH], value);
    }

    pub fn set_ident(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::IDENT], value);
    }

    /// Flags and offset together: they share one word. `offset` is in bytes (a multiple of 8).
    pub fn set_fragmentation(&mut self, dont_frag: bool, more_frags: bool, offset: u16) {
        let word = (u16::from(dont_frag) * DONT_FRAG) | (u16::from(more_frags) * MORE_FRAGS) | (offset >> 3);
        set_be16(&mut self.buffer.as_mut()[field::FLG_OFF], word);
    }

    pub fn set_ttl(&mut self, value: u8) {
        self.buffer.as_mut()[field::TTL] = value;
    }

    pub fn set_protocol(&mut self, value: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = value;
    }

    pub fn set_checksum(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    pub fn set_src_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&value.octets());
    }

    pub fn set_dst_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&value.octets());
    }

    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }

    /// Recomputes the header checksum from scratch.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = checksum::checksum(&self.buffer.as_ref()[..self.header_len()]);
        self.set_checksum(sum);
    }

    /// The forwarding step: TTL − 1 with an RFC 1624 incremental checksum update, O(1) in the
    /// header length. Returns the new TTL, or `None` with the packet untouched when the TTL is
    /// 0 or 1: such a packet must not be forwarded (the slow path sends ICMP time exceeded).
    #[inline(always)]
    pub fn decrement_ttl(&mut self) -> Option<u8> {
        let b = self.buffer.as_mut();
        let ttl = b[field::TTL];
        if ttl <= 1 {
            return None;
        }
        let old = be16(&b[field::TTL_PROTOCOL]);
        b[field::TTL] = ttl - 1;
        let new = be16(&b[field::TTL_PROTOCOL]);
        let sum = checksum::update(be16(&b[field::CHECKSUM]), old, new);
        set_be16(&mut b[field::CHECKSUM], sum);
        Some(ttl - 1)
    }
}

fn addr(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

/// An IPv4 header's contents. `options` must be at most 40 bytes; `emit` pads them with
/// End-of-Options zeros to a multiple of 4 and truncates beyond 40.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr<'a> {
    pub src_addr: Ipv4Addr,
    pub dst_addr: Ipv4Addr,
    pub protocol: u8,
    pub ttl: u8,
    pub dscp_ecn: u8,
    pub ident: u16,
    pub dont_frag: bool,
    pub more_frags: bool,
    /// In bytes, a multiple of 8.
    pub frag_offset: u16,
    pub options: &'a [u8],
    pub payload_len: usize,
}

impl<'a> Ipv4Repr<'a> {
    /// An unfragmented, option-less header with TTL 64.
    pub const fn new(src_addr: Ipv4Addr, dst_addr: Ipv4Addr, protocol: u8, payload_len: usize) -> Self {
        Ipv4Repr {
            src_addr,
            dst_addr,
            protocol,
            ttl: 64,
            dscp_ecn: 0,
            ident: 0,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
            options: &[],
            payload_len,
        }
    }

    /// Parses a checked packet, verifying the header checksum.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Ipv4Packet<&'a T>) -> Result<Self, WireError> {
        if !packet.verify_checksum() {
            return Err(WireError::BadChecksum { layer: Layer::Ipv4, offset: field::CHECKSUM.start });
        }
        let options = &packet.buffer.as_ref()[HEADER_LEN..packet.header_len()];
        Ok(Ipv4Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            ttl: packet.ttl(),
            dscp_ecn: packet.dscp_ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
            options,
            payload_len: usize::from(packet.total_len()) - packet.header_len(),
        })
    }

    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options.len().div_ceil(4).min(10) * 4
    }

    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload_len
    }

    /// Writes the header (checksum included); the payload goes at `header_len()`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv4Packet<T>) {
        let header_len = self.header_len();
        packet.set_header_len(header_len);
        packet.set_dscp_ecn(self.dscp_ecn);
        packet.set_total_len((header_len + self.payload_len) as u16);
        packet.set_ident(self.ident);
        packet.set_fragmentation(self.dont_frag, self.more_frags, self.frag_offset);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        let options = packet.options_mut();
        let n = self.options.len().min(options.len());
        options[..n].copy_from_slice(&self.options[..n]);
        options[n..].fill(0);
        packet.fill_checksum();
    }
}
