//! VXLAN headers (RFC 7348 §5): 8 bytes between a UDP header and the inner Ethernet frame.
//!
//! ```text
//!  0               1               2               3
//! |R|R|R|R|I|R|R|R|            Reserved                           |
//! |                VXLAN Network Identifier (VNI) |   Reserved    |
//! ```

use crate::error::{need, Layer, WireError};

mod field {
    use core::ops::Range;
    pub const FLAGS: usize = 0;
    pub const VNI: Range<usize> = 4..7;
}

pub const HEADER_LEN: usize = 8;

/// The I flag: the VNI is valid. A receiver drops a header without it.
pub const FLAG_VNI: u8 = 0x08;

/// The port IANA assigned to VXLAN.
pub const UDP_PORT: u16 = 4789;

/// The largest VNI: 24 bits.
pub const MAX_VNI: u32 = 0x00ff_ffff;

/// Outer bytes a VXLAN tunnel adds to an inner Ethernet frame's IP packet: outer IPv4 (20),
/// UDP (8), VXLAN (8) and the inner Ethernet header (14), so an underlay of MTU m carries inner
/// IP packets of m − 50.
pub const OVERHEAD_IPV4: u32 = 50;
/// The same over an IPv6 underlay, whose header is 40 bytes.
pub const OVERHEAD_IPV6: u32 = 70;

/// A view of a VXLAN header and the inner frame after it.
#[derive(Debug, Clone)]
pub struct VxlanPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VxlanPacket<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        VxlanPacket { buffer }
    }

    /// `buffer` is the UDP payload: the header must be whole and carry the I flag.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        need(Layer::Vxlan, b, HEADER_LEN)?;
        if b[field::FLAGS] & FLAG_VNI == 0 {
            return Err(WireError::BadVxlanFlags { offset: field::FLAGS, flags: b[field::FLAGS] });
        }
        Ok(VxlanPacket { buffer })
    }

    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    #[inline]
    pub fn vni(&self) -> u32 {
        let v = &self.buffer.as_ref()[field::VNI];
        u32::from(v[0]) << 16 | u32::from(v[1]) << 8 | u32::from(v[2])
    }

    /// The inner Ethernet frame.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VxlanPacket<T> {
    /// Sets the flags byte; the reserved bytes are zeroed (RFC 7348: set to zero on transmit).
    pub fn set_flags(&mut self, flags: u8) {
        let b = self.buffer.as_mut();
        b[field::FLAGS] = flags;
        b[1..4].fill(0);
    }

    /// Sets the 24-bit VNI (higher bits are ignored) and zeroes the reserved byte after it.
    pub fn set_vni(&mut self, vni: u32) {
        let b = self.buffer.as_mut();
        b[field::VNI].copy_from_slice(&vni.to_be_bytes()[1..]);
        b[field::VNI.end] = 0;
    }
}

/// A VXLAN header's one field that means something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VxlanRepr {
    pub vni: u32,
}

impl VxlanRepr {
    pub fn parse<T: AsRef<[u8]>>(packet: &VxlanPacket<T>) -> Result<Self, WireError> {
        Ok(VxlanRepr { vni: packet.vni() })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header (I flag set, reserved bits zero) into the first 8 bytes of `packet`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut VxlanPacket<T>) {
        packet.set_flags(FLAG_VNI);
        packet.set_vni(self.vni);
    }

    /// The header as bytes, for a sender that gathers it in front of the inner frame.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0; HEADER_LEN];
        self.emit(&mut VxlanPacket::new_unchecked(&mut b[..]));
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The UDP payload of a datagram a Linux `vxlan` device (id 100) sent, as tcpdump shows it:
    /// flags 0x08, VNI 100, then the inner frame's first bytes.
    const LINUX_VNI_100: [u8; 14] = [0x08, 0, 0, 0, 0x00, 0x00, 0x64, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];

    #[test]
    fn a_header_from_a_linux_vxlan_device_parses_to_its_vni_and_inner_frame() {
        let p = VxlanPacket::new_checked(&LINUX_VNI_100[..]).unwrap();
        assert_eq!(p.flags(), FLAG_VNI);
        assert_eq!(VxlanRepr::parse(&p).unwrap(), VxlanRepr { vni: 100 });
        assert_eq!(p.payload(), &[0xff; 6]);
    }

    #[test]
    fn emit_writes_the_rfc_layout_and_parses_back() {
        let repr = VxlanRepr { vni: 0x12_3456 };
        assert_eq!(repr.to_bytes(), [0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0]);
        let mut b = [0xaa; 8];
        repr.emit(&mut VxlanPacket::new_unchecked(&mut b[..]));
        assert_eq!(b, [0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0], "reserved bits are zeroed");
        assert_eq!(VxlanRepr::parse(&VxlanPacket::new_checked(&b[..]).unwrap()).unwrap(), repr);
        assert_eq!(VxlanRepr { vni: MAX_VNI }.to_bytes()[4..7], [0xff; 3]);
    }

    #[test]
    fn a_header_without_the_i_flag_or_short_is_refused_with_its_reason() {
        let mut b = LINUX_VNI_100;
        b[0] = 0x00;
        let e = VxlanPacket::new_checked(&b[..]).unwrap_err();
        assert_eq!(e, WireError::BadVxlanFlags { offset: 0, flags: 0 });
        assert_eq!(e.reason(), "bad_vxlan_flags");
        let e = VxlanPacket::new_checked(&LINUX_VNI_100[..7]).unwrap_err();
        assert_eq!(e, WireError::Truncated { layer: Layer::Vxlan, offset: 0, needed: 8, present: 7 });
    }
}
