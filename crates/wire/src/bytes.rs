//! Big-endian reads and writes on slices whose length the caller's `field` range fixes.
//!
//! Callers index with constant ranges after `new_checked`, so these never see a short slice;
//! the fixed-size array conversions let the compiler drop the bounds checks.

#[inline(always)]
pub(crate) fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

#[inline(always)]
pub(crate) fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[inline(always)]
pub(crate) fn set_be16(b: &mut [u8], value: u16) {
    b[..2].copy_from_slice(&value.to_be_bytes());
}

#[inline(always)]
pub(crate) fn set_be32(b: &mut [u8], value: u32) {
    b[..4].copy_from_slice(&value.to_be_bytes());
}

#[inline(always)]
pub(crate) fn mac(b: &[u8]) -> [u8; 6] {
    [b[0], b[1], b[2], b[3], b[4], b[5]]
}
