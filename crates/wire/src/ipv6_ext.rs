//! The IPv6 extension-header chain (RFC 8200 §4), walked to the upper-layer protocol.
//!
//! The chain is attacker-controlled and has no length field of its own, so the walker bounds
//! the number of headers and checks every header's length against the packet before stepping.

use crate::bytes::{be16, be32};
use crate::error::WireError;
use crate::numbers::ip_proto;

/// Extension headers followed before giving up; real traffic carries at most three or four.
pub const MAX_EXT_HEADERS: usize = 8;

/// Every extension header is at least 8 bytes (next header, length, 6 bytes of body).
const MIN_EXT_LEN: usize = 8;

/// True for the next-header values the walker steps over: hop-by-hop, routing, fragment,
/// authentication and destination options. ESP and unknown values end the chain.
#[inline]
pub const fn is_ext_header(next_header: u8) -> bool {
    matches!(
        next_header,
        ip_proto::HOP_BY_HOP | ip_proto::IPV6_ROUTING | ip_proto::IPV6_FRAGMENT | ip_proto::AUTH | ip_proto::IPV6_DEST_OPTS
    )
}

/// One extension header of the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtHeader<'a> {
    /// Which header this is (the next-header value that announced it).
    pub kind: u8,
    /// Offset from the start of the IPv6 header.
    pub offset: usize,
    /// The whole header, its next-header and length bytes included.
    pub bytes: &'a [u8],
}

impl ExtHeader<'_> {
    /// What follows this header.
    #[inline]
    pub fn next_header(&self) -> u8 {
        self.bytes[0]
    }

    /// The fragment header's fields, if this is one.
    #[inline]
    pub fn fragment(&self) -> Option<Fragment> {
        if self.kind != ip_proto::IPV6_FRAGMENT {
            return None;
        }
        let word = be16(&self.bytes[2..4]);
        Some(Fragment { offset: word & !7, more: word & 1 != 0, ident: be32(&self.bytes[4..8]) })
    }
}

/// A fragment header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment {
    /// In bytes.
    pub offset: u16,
    pub more: bool,
    pub ident: u32,
}

impl Fragment {
    /// Only the first fragment carries the rest of the chain and the upper-layer header.
    #[inline]
    pub const fn is_first(&self) -> bool {
        self.offset == 0
    }
}

/// Where the chain ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpperLayer {
    /// The upper-layer protocol; for a non-first fragment, the fragment header's next header.
    pub protocol: u8,
    /// Offset of the upper-layer header (of the fragment data for a non-first fragment).
    pub offset: usize,
    pub fragment: Option<Fragment>,
    pub ext_headers: usize,
}

/// Iterates over the extension headers of one packet; yields at most one error, then stops.
#[derive(Debug, Clone)]
pub struct ExtHeaderWalker<'a> {
    packet: &'a [u8],
    next_header: u8,
    offset: usize,
    count: usize,
    done: bool,
}

impl<'a> ExtHeaderWalker<'a> {
    /// `packet` is the IPv6 packet bounded by its payload length; the chain starts at `offset`
    /// with `next_header`.
    #[inline]
    pub const fn new(packet: &'a [u8], next_header: u8, offset: usize) -> Self {
        ExtHeaderWalker { packet, next_header, offset, count: 0, done: false }
    }

    /// Walks to the end of the chain.
    #[inline]
    pub fn upper_layer(mut self) -> Result<UpperLayer, WireError> {
        let mut fragment = None;
        for header in self.by_ref() {
            if let Some(f) = header?.fragment() {
                fragment = Some(f);
            }
        }
        Ok(UpperLayer { protocol: self.next_header, offset: self.offset, fragment, ext_headers: self.count })
    }
}

impl<'a> Iterator for ExtHeaderWalker<'a> {
    type Item = Result<ExtHeader<'a>, WireError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done || !is_ext_header(self.next_header) {
            return None;
        }
        if self.count == MAX_EXT_HEADERS {
            self.done = true;
            return Some(Err(WireError::ExtHeaderChainTooLong { offset: self.offset, limit: MAX_EXT_HEADERS }));
        }
        let rest = self.packet.get(self.offset..).unwrap_or_default();
        let kind = self.next_header;
        let len = match rest.get(1) {
            None => MIN_EXT_LEN,
            Some(_) if kind == ip_proto::IPV6_FRAGMENT => MIN_EXT_LEN,
            Some(&units) if kind == ip_proto::AUTH => (usize::from(units) + 2) * 4,
            Some(&units) => (usize::from(units) + 1) * 8,
        };
        if rest.len() < len {
            self.done = true;
            return Some(Err(WireError::ExtHeaderOverrun { offset: self.offset, next_header: kind, needed: len, present: rest.len() }));
        }
        let header = ExtHeader { kind, offset: self.offset, bytes: &rest[..len] };
        self.next_header = header.next_header();
        self.offset += len;
        self.count += 1;
        // A later fragment's data is not a header chain; whatever its first byte says is payload.
        if header.fragment().is_some_and(|f| !f.is_first()) {
            self.done = true;
        }
        Some(Ok(header))
    }
}
