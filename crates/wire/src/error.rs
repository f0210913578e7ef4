//! Why a frame was rejected, precisely enough to debug a capture and coarsely enough to count.
//!
//! Views report offsets relative to the start of the buffer they were given; [`extract`]
//! re-bases them onto the frame so an operator can find the byte in a hex dump.
//!
//! [`extract`]: crate::extract::extract

use core::fmt;

/// The header a [`WireError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    Ethernet,
    Vlan,
    Arp,
    Ipv4,
    Ipv6,
    Ipv6Ext,
    Icmpv4,
    Icmpv6,
    Udp,
    Tcp,
    Vxlan,
}

impl Layer {
    pub const fn name(self) -> &'static str {
        match self {
            Layer::Ethernet => "ethernet",
            Layer::Vlan => "vlan tag",
            Layer::Arp => "arp",
            Layer::Ipv4 => "ipv4",
            Layer::Ipv6 => "ipv6",
            Layer::Ipv6Ext => "ipv6 extension",
            Layer::Icmpv4 => "icmpv4",
            Layer::Icmpv6 => "icmpv6",
            Layer::Udp => "udp",
            Layer::Tcp => "tcp",
            Layer::Vxlan => "vxlan",
        }
    }
}

/// A malformed or unsupported frame. `offset` is the byte offset of the offending field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireError {
    /// The header starting at `offset` needs `needed` bytes but only `present` remain.
    Truncated { layer: Layer, offset: usize, needed: usize, present: usize },
    /// The IP version nibble disagrees with the EtherType (or next header) that announced it.
    BadVersion { layer: Layer, offset: usize, expected: u8, found: u8 },
    /// IPv4 IHL below the 5 words of the fixed header.
    BadIhl { offset: usize, ihl: u8 },
    /// IPv4 total length shorter than the header or longer than the bytes present.
    BadTotalLength { offset: usize, total_len: u16, header_len: usize, present: usize },
    /// IPv6 payload length beyond the bytes present after the fixed header.
    BadPayloadLength { offset: usize, payload_len: u16, present: usize },
    /// An IPv6 extension header (`next_header` is its protocol number) runs past the payload.
    ExtHeaderOverrun { offset: usize, next_header: u8, needed: usize, present: usize },
    /// More IPv6 extension headers than the walker follows; a DoS guard, not an RFC limit.
    ExtHeaderChainTooLong { offset: usize, limit: usize },
    /// ARP hardware/protocol address sizes other than Ethernet's 6 and IPv4's 4.
    BadArpSizes { offset: usize, hardware_len: u8, protocol_len: u8 },
    /// ARP hardware/protocol types other than Ethernet (1) and IPv4 (0x0800).
    BadArpTypes { offset: usize, hardware_type: u16, protocol_type: u16 },
    /// TCP data offset below 5 words or beyond the segment.
    BadTcpDataOffset { offset: usize, data_offset: u8, present: usize },
    /// UDP length field below 8 or beyond the IP payload.
    BadUdpLength { offset: usize, length: u16, present: usize },
    /// A checksum that does not verify (only `Repr::parse` checks these; the fast path does not).
    BadChecksum { layer: Layer, offset: usize },
    /// A VXLAN header whose I flag (a valid VNI) is not set (RFC 7348 §5).
    BadVxlanFlags { offset: usize, flags: u8 },
}

impl WireError {
    /// Stable snake_case name the data plane uses as a drop counter.
    pub const fn reason(&self) -> &'static str {
        Self::REASONS[self.reason_index()]
    }

    /// The position of `reason()` in [`WireError::REASONS`]: a counter array index.
    pub const fn reason_index(&self) -> usize {
        match self {
            WireError::Truncated { .. } => 0,
            WireError::BadVersion { .. } => 1,
            WireError::BadIhl { .. } => 2,
            WireError::BadTotalLength { .. } => 3,
            WireError::BadPayloadLength { .. } => 4,
            WireError::ExtHeaderOverrun { .. } => 5,
            WireError::ExtHeaderChainTooLong { .. } => 6,
            WireError::BadArpSizes { .. } => 7,
            WireError::BadArpTypes { .. } => 8,
            WireError::BadTcpDataOffset { .. } => 9,
            WireError::BadUdpLength { .. } => 10,
            WireError::BadChecksum { .. } => 11,
            WireError::BadVxlanFlags { .. } => 12,
        }
    }

    /// Every `reason()` value, so counters can be registered before the first drop.
    pub const REASONS: [&'static str; 13] = [
        "truncated",
        "bad_version",
        "bad_ihl",
        "bad_total_length",
        "bad_payload_length",
        "ext_header_overrun",
        "ext_header_chain_too_long",
        "bad_arp_sizes",
        "bad_arp_types",
        "bad_tcp_data_offset",
        "bad_udp_length",
        "bad_checksum",
        "bad_vxlan_flags",
    ];

    /// Byte offset of the offending field.
    pub fn offset(&self) -> usize {
        let mut e = *self;
        *e.offset_mut()
    }

    /// The same error with its offset moved by `base`: a view's error seen from the enclosing frame.
    #[cold]
    pub fn shifted(mut self, base: usize) -> Self {
        *self.offset_mut() += base;
        self
    }

    fn offset_mut(&mut self) -> &mut usize {
        match self {
            WireError::Truncated { offset, .. }
            | WireError::BadVersion { offset, .. }
            | WireError::BadIhl { offset, .. }
            | WireError::BadTotalLength { offset, .. }
            | WireError::BadPayloadLength { offset, .. }
            | WireError::ExtHeaderOverrun { offset, .. }
            | WireError::ExtHeaderChainTooLong { offset, .. }
            | WireError::BadArpSizes { offset, .. }
            | WireError::BadArpTypes { offset, .. }
            | WireError::BadTcpDataOffset { offset, .. }
            | WireError::BadUdpLength { offset, .. }
            | WireError::BadChecksum { offset, .. }
            | WireError::BadVxlanFlags { offset, .. } => offset,
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WireError::Truncated { layer, offset, needed, present } => {
                write!(f, "truncated {} header at byte {offset}: need {needed} bytes, have {present}", layer.name())
            }
            WireError::BadVersion { layer, offset, expected, found } => {
                write!(f, "{} version at byte {offset}: {found} != {expected}", layer.name())
            }
            WireError::BadIhl { offset, ihl } => write!(f, "ipv4 ihl at byte {offset}: {ihl} < 5"),
            WireError::BadTotalLength { offset, total_len, header_len, present } => {
                write!(f, "ipv4 total length at byte {offset}: {total_len} outside {header_len}..={present}")
            }
            WireError::BadPayloadLength { offset, payload_len, present } => {
                write!(f, "ipv6 payload length at byte {offset}: {payload_len} > {present} bytes present")
            }
            WireError::ExtHeaderOverrun { offset, next_header, needed, present } => write!(
                f,
                "ipv6 extension header {next_header} at byte {offset}: needs {needed} bytes, \
                 {present} left in payload"
            ),
            WireError::ExtHeaderChainTooLong { offset, limit } => {
                write!(f, "ipv6 extension header at byte {offset}: chain longer than {limit} headers")
            }
            WireError::BadArpSizes { offset, hardware_len, protocol_len } => write!(
                f,
                "arp address sizes at byte {offset}: hardware {hardware_len} (want 6), \
                 protocol {protocol_len} (want 4)"
            ),
            WireError::BadArpTypes { offset, hardware_type, protocol_type } => write!(
                f,
                "arp types at byte {offset}: hardware {hardware_type} (want 1), \
                 protocol {protocol_type:#06x} (want 0x0800)"
            ),
            WireError::BadTcpDataOffset { offset, data_offset, present } => {
                write!(f, "tcp data offset at byte {offset}: {data_offset} words outside 5..={}", (present / 4).min(15))
            }
            WireError::BadUdpLength { offset, length, present } => {
                write!(f, "udp length at byte {offset}: {length} outside 8..={present}")
            }
            WireError::BadChecksum { layer, offset } => {
                write!(f, "{} checksum at byte {offset} does not verify", layer.name())
            }
            WireError::BadVxlanFlags { offset, flags } => {
                write!(f, "vxlan flags at byte {offset}: {flags:#04x} lacks the I flag (0x08)")
            }
        }
    }
}

impl std::error::Error for WireError {}

/// Fails with `Truncated` unless `buffer` holds `needed` bytes; the one length check per view.
#[inline(always)]
pub(crate) fn need(layer: Layer, buffer: &[u8], needed: usize) -> Result<(), WireError> {
    if buffer.len() < needed {
        return Err(WireError::Truncated { layer, offset: 0, needed, present: buffer.len() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_field_and_byte() {
        let e = WireError::BadIhl { offset: 0, ihl: 3 }.shifted(14);
        assert_eq!(e.to_string(), "ipv4 ihl at byte 14: 3 < 5");
        assert_eq!(e.reason(), "bad_ihl");
    }

    #[test]
    fn every_reason_is_listed() {
        let samples = [
            WireError::Truncated { layer: Layer::Udp, offset: 0, needed: 8, present: 1 },
            WireError::BadVersion { layer: Layer::Ipv4, offset: 0, expected: 4, found: 6 },
            WireError::BadIhl { offset: 0, ihl: 0 },
            WireError::BadTotalLength { offset: 0, total_len: 0, header_len: 20, present: 20 },
            WireError::BadPayloadLength { offset: 0, payload_len: 9, present: 0 },
            WireError::ExtHeaderOverrun { offset: 0, next_header: 0, needed: 8, present: 2 },
            WireError::ExtHeaderChainTooLong { offset: 0, limit: 8 },
            WireError::BadArpSizes { offset: 0, hardware_len: 0, protocol_len: 0 },
            WireError::BadArpTypes { offset: 0, hardware_type: 0, protocol_type: 0 },
            WireError::BadTcpDataOffset { offset: 0, data_offset: 0, present: 20 },
            WireError::BadUdpLength { offset: 0, length: 0, present: 8 },
            WireError::BadChecksum { layer: Layer::Ipv4, offset: 0 },
            WireError::BadVxlanFlags { offset: 0, flags: 0 },
        ];
        let reasons: Vec<_> = samples.iter().map(WireError::reason).collect();
        assert_eq!(reasons, WireError::REASONS);
        for e in samples {
            assert_eq!(e.shifted(14).offset(), 14);
            assert!(e.to_string().contains("at byte 0"), "{e}");
        }
    }
}
