//! 802.1Q / 802.1ad tags: the 4 bytes after a VLAN TPID (TCI, then the next EtherType).

use crate::bytes::{be16, set_be16};
use crate::error::{need, Layer, WireError};

mod field {
    use core::ops::Range;
    pub const TCI: Range<usize> = 0..2;
    pub const ETHERTYPE: Range<usize> = 2..4;
}

/// Bytes a tag adds to a frame; also the length of the body after its TPID.
pub const HEADER_LEN: usize = field::ETHERTYPE.end;

/// A view of one tag body, starting just after its TPID.
#[derive(Debug, Clone)]
pub struct VlanHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanHeader<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        VlanHeader { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        need(Layer::Vlan, buffer.as_ref(), HEADER_LEN)?;
        Ok(VlanHeader { buffer })
    }

    #[inline]
    pub fn tci(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::TCI])
    }

    #[inline]
    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }

    #[inline]
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    #[inline]
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    /// The EtherType of what follows this tag.
    #[inline]
    pub fn ethertype(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ETHERTYPE])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanHeader<T> {
    pub fn set_tci(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::TCI], value);
    }

    pub fn set_ethertype(&mut self, value: u16) {
        set_be16(&mut self.buffer.as_mut()[field::ETHERTYPE], value);
    }
}

/// One tag: its TPID (0x8100 or 0x88a8) and TCI fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanRepr {
    pub tpid: u16,
    pub pcp: u8,
    pub dei: bool,
    pub vid: u16,
}

impl VlanRepr {
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(header: &VlanHeader<T>, tpid: u16) -> Self {
        VlanRepr { tpid, pcp: header.pcp(), dei: header.dei(), vid: header.vid() }
    }

    /// Writes the TCI and `next_ethertype`; the TPID belongs to the enclosing header.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, header: &mut VlanHeader<T>, next_ethertype: u16) {
        let tci = (u16::from(self.pcp & 7) << 13) | (u16::from(self.dei) << 12) | (self.vid & 0x0fff);
        header.set_tci(tci);
        header.set_ethertype(next_ethertype);
    }
}

/// The tags of a frame, outermost first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VlanTags {
    Untagged,
    Single(VlanRepr),
    Double(VlanRepr, VlanRepr),
}

impl VlanTags {
    /// The tag a port's VLAN membership is decided on: the service tag of a double-tagged frame.
    #[inline]
    pub const fn outermost(&self) -> Option<&VlanRepr> {
        match self {
            VlanTags::Untagged => None,
            VlanTags::Single(t) | VlanTags::Double(t, _) => Some(t),
        }
    }

    /// Bytes the tags occupy (TPIDs included).
    #[inline]
    pub const fn len(&self) -> usize {
        match self {
            VlanTags::Untagged => 0,
            VlanTags::Single(_) => HEADER_LEN,
            VlanTags::Double(..) => 2 * HEADER_LEN,
        }
    }

    pub const fn is_empty(&self) -> bool {
        matches!(self, VlanTags::Untagged)
    }
}
