//! Ethernet II frames, with the 802.1Q / 802.1ad tags that may follow the MAC addresses.

use crate::bytes::{be16, mac, set_be16};
use crate::error::{need, Layer, WireError};
use crate::numbers::ethertype;
use crate::vlan::{self, VlanHeader, VlanRepr, VlanTags};

mod field {
    use core::ops::{Range, RangeFrom};
    pub const DESTINATION: Range<usize> = 0..6;
    pub const SOURCE: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const PAYLOAD: RangeFrom<usize> = 14..;
}

/// Length of an untagged Ethernet II header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A view of an Ethernet II frame; `ethertype` is the first one, a TPID if the frame is tagged.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        need(Layer::Ethernet, buffer.as_ref(), HEADER_LEN)?;
        Ok(EthernetFrame { buffer })
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn dst_addr(&self) -> [u8; 6] {
        mac(&self.buffer.as_ref()[field::DESTINATION])
    }

    #[inline]
    pub fn src_addr(&self) -> [u8; 6] {
        mac(&self.buffer.as_ref()[field::SOURCE])
    }

    #[inline]
    pub fn ethertype(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ETHERTYPE])
    }

    /// Everything after the first EtherType: a VLAN tag or the network-layer packet.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    pub fn set_dst_addr(&mut self, addr: [u8; 6]) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&addr);
    }

    pub fn set_src_addr(&mut self, addr: [u8; 6]) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&addr);
    }

    pub fn set_ethertype(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::ETHERTYPE], value);
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// An Ethernet header with its VLAN tags resolved: `ethertype` is the innermost one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    pub dst_addr: [u8; 6],
    pub src_addr: [u8; 6],
    pub tags: VlanTags,
    pub ethertype: u16,
}

impl EthernetRepr {
    /// Reads the MACs and up to two tags: an 0x8100 or 0x88a8 tag, optionally followed by one
    /// 0x8100 tag. A third tag is not unwrapped; its TPID is reported as the EtherType.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<Self, WireError> {
        let mut repr =
            EthernetRepr { dst_addr: frame.dst_addr(), src_addr: frame.src_addr(), tags: VlanTags::Untagged, ethertype: frame.ethertype() };
        if repr.ethertype != ethertype::VLAN && repr.ethertype != ethertype::QINQ {
            return Ok(repr);
        }
        let outer = read_tag(frame.payload(), repr.ethertype, HEADER_LEN)?;
        repr.ethertype = outer.1;
        if repr.ethertype != ethertype::VLAN {
            repr.tags = VlanTags::Single(outer.0);
            return Ok(repr);
        }
        let inner = read_tag(&frame.payload()[vlan::HEADER_LEN..], repr.ethertype, HEADER_LEN + vlan::HEADER_LEN)?;
        repr.ethertype = inner.1;
        repr.tags = VlanTags::Double(outer.0, inner.0);
        Ok(repr)
    }

    /// Bytes up to the network-layer packet.
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN + self.tags.len()
    }

    /// Where the network-layer packet of `frame` starts (behind its tags).
    pub fn l3_offset(frame: &[u8]) -> Result<usize, WireError> {
        Ok(EthernetRepr::parse(&EthernetFrame::new_checked(frame)?)?.header_len())
    }

    /// Writes the header and tags; the network-layer packet goes at `header_len()`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        let mut after = self.ethertype;
        let tags: &[VlanRepr] = match &self.tags {
            VlanTags::Untagged => &[],
            VlanTags::Single(t) => core::slice::from_ref(t),
            VlanTags::Double(outer, inner) => &[*outer, *inner],
        };
        // Each tag's EtherType field names what follows it, so write innermost first.
        for (i, tag) in tags.iter().enumerate().rev() {
            let start = i * vlan::HEADER_LEN;
            tag.emit(&mut VlanHeader::new_unchecked(&mut frame.payload_mut()[start..]), after);
            after = tag.tpid;
        }
        frame.set_ethertype(after);
    }
}

fn read_tag(bytes: &[u8], tpid: u16, at: usize) -> Result<(VlanRepr, u16), WireError> {
    let header = VlanHeader::new_checked(bytes).map_err(|e| e.shifted(at))?;
    Ok((VlanRepr::parse(&header, tpid), header.ethertype()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_tag_round_trip() {
        let repr = EthernetRepr {
            dst_addr: [0xff; 6],
            src_addr: [2, 0, 0, 0, 0, 1],
            tags: VlanTags::Double(
                VlanRepr { tpid: ethertype::QINQ, pcp: 5, dei: false, vid: 100 },
                VlanRepr { tpid: ethertype::VLAN, pcp: 0, dei: true, vid: 4094 },
            ),
            ethertype: ethertype::IPV6,
        };
        let mut buf = [0u8; 22];
        repr.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[12..22], &[0x88, 0xa8, 0xa0, 0x64, 0x81, 0x00, 0x1f, 0xfe, 0x86, 0xdd]);
        let parsed = EthernetRepr::parse(&EthernetFrame::new_checked(&buf[..]).unwrap()).unwrap();
        assert_eq!(parsed, repr);
        assert_eq!(parsed.header_len(), 22);
    }

    #[test]
    fn truncated_inner_tag_reports_its_offset() {
        let mut buf = [0u8; 20];
        buf[12..14].copy_from_slice(&ethertype::VLAN.to_be_bytes());
        buf[16..18].copy_from_slice(&ethertype::VLAN.to_be_bytes());
        let err = EthernetRepr::parse(&EthernetFrame::new_checked(&buf[..]).unwrap()).unwrap_err();
        assert_eq!(err, WireError::Truncated { layer: Layer::Vlan, offset: 18, needed: 4, present: 2 });
    }
}
