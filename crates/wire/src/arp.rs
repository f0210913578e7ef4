//! ARP for IPv4 over Ethernet (RFC 826); other hardware/protocol pairs are rejected.

use core::net::Ipv4Addr;

use crate::bytes::{be16, mac, set_be16};
use crate::error::{need, Layer, WireError};
use crate::numbers::ethertype;

mod field {
    use core::ops::Range;
    pub const HTYPE: Range<usize> = 0..2;
    pub const PTYPE: Range<usize> = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Range<usize> = 6..8;
    pub const SHA: Range<usize> = 8..14;
    pub const SPA: Range<usize> = 14..18;
    pub const THA: Range<usize> = 18..24;
    pub const TPA: Range<usize> = 24..28;
}

/// Bytes before the addresses, enough to learn their sizes.
const FIXED_LEN: usize = field::OPER.end;
/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = field::TPA.end;
const HARDWARE_ETHERNET: u16 = 1;

/// A view of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }

    /// Checks the sizes and types before the length, so a short packet with wrong sizes reports
    /// the sizes (the actionable fault), not a truncation.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        need(Layer::Arp, b, FIXED_LEN)?;
        if b[field::HLEN] != 6 || b[field::PLEN] != 4 {
            return Err(WireError::BadArpSizes { offset: field::HLEN, hardware_len: b[field::HLEN], protocol_len: b[field::PLEN] });
        }
        let (htype, ptype) = (be16(&b[field::HTYPE]), be16(&b[field::PTYPE]));
        if htype != HARDWARE_ETHERNET || ptype != ethertype::IPV4 {
            return Err(WireError::BadArpTypes { offset: 0, hardware_type: htype, protocol_type: ptype });
        }
        need(Layer::Arp, b, PACKET_LEN)?;
        Ok(ArpPacket { buffer })
    }

    pub fn hardware_type(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::HTYPE])
    }

    pub fn protocol_type(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::PTYPE])
    }

    pub fn operation(&self) -> ArpOperation {
        ArpOperation::from(be16(&self.buffer.as_ref()[field::OPER]))
    }

    pub fn sender_hardware_addr(&self) -> [u8; 6] {
        mac(&self.buffer.as_ref()[field::SHA])
    }

    pub fn sender_protocol_addr(&self) -> Ipv4Addr {
        ipv4(&self.buffer.as_ref()[field::SPA])
    }

    pub fn target_hardware_addr(&self) -> [u8; 6] {
        mac(&self.buffer.as_ref()[field::THA])
    }

    pub fn target_protocol_addr(&self) -> Ipv4Addr {
        ipv4(&self.buffer.as_ref()[field::TPA])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Writes the fixed Ethernet/IPv4 type and size fields.
    pub fn set_ethernet_ipv4(&mut self) {
        let b = self.buffer.as_mut();
        set_be16(&mut b[field::HTYPE], HARDWARE_ETHERNET);
        set_be16(&mut b[field::PTYPE], ethertype::IPV4);
        b[field::HLEN] = 6;
        b[field::PLEN] = 4;
    }

    pub fn set_operation(&mut self, op: ArpOperation) {
        set_be16(&mut self.buffer.as_mut()[field::OPER], op.into());
    }

    pub fn set_sender_hardware_addr(&mut self, addr: [u8; 6]) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&addr);
    }

    pub fn set_sender_protocol_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&addr.octets());
    }

    pub fn set_target_hardware_addr(&mut self, addr: [u8; 6]) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&addr);
    }

    pub fn set_target_protocol_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&addr.octets());
    }
}

fn ipv4(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArpOperation {
    Request,
    Reply,
    Other(u16),
}

impl From<u16> for ArpOperation {
    fn from(v: u16) -> Self {
        match v {
            1 => ArpOperation::Request,
            2 => ArpOperation::Reply,
            v => ArpOperation::Other(v),
        }
    }
}

impl From<ArpOperation> for u16 {
    fn from(op: ArpOperation) -> u16 {
        match op {
            ArpOperation::Request => 1,
            ArpOperation::Reply => 2,
            ArpOperation::Other(v) => v,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpRepr {
    pub operation: ArpOperation,
    pub sender_hardware_addr: [u8; 6],
    pub sender_protocol_addr: Ipv4Addr,
    pub target_hardware_addr: [u8; 6],
    pub target_protocol_addr: Ipv4Addr,
}

impl ArpRepr {
    /// The view's checks already pin the types and sizes, so a checked packet always parses.
    pub fn parse<T: AsRef<[u8]>>(packet: &ArpPacket<T>) -> Self {
        ArpRepr {
            operation: packet.operation(),
            sender_hardware_addr: packet.sender_hardware_addr(),
            sender_protocol_addr: packet.sender_protocol_addr(),
            target_hardware_addr: packet.target_hardware_addr(),
            target_protocol_addr: packet.target_protocol_addr(),
        }
    }

    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ArpPacket<T>) {
        packet.set_ethernet_ipv4();
        packet.set_operation(self.operation);
        packet.set_sender_hardware_addr(self.sender_hardware_addr);
        packet.set_sender_protocol_addr(self.sender_protocol_addr);
        packet.set_target_hardware_addr(self.target_hardware_addr);
        packet.set_target_protocol_addr(self.target_protocol_addr);
    }
}
