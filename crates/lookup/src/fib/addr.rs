//! Address arithmetic shared by the IPv4 (`u32`) and IPv6 (`u128`) FIBs.

use core::fmt::Debug;
use core::hash::Hash;

/// An address as an unsigned integer, most significant bit first.
pub trait AddrBits: Copy + Ord + Eq + Hash + Debug + Send + Sync + 'static {
    const WIDTH: u32;
    const ZERO: Self;

    /// Bits `[depth, depth + stride)` as an index (`depth + stride <= WIDTH`).
    fn slot(self, depth: u32, stride: u32) -> usize;
    /// The address with its bits from `len` on cleared.
    fn network(self, len: u32) -> Self;
    /// The last address of the prefix `self/len` (host bits set).
    fn last(self, len: u32) -> Self;
    /// `self` with bits `[depth, depth + stride)` replaced by `index`.
    fn with_slot(self, depth: u32, stride: u32, index: usize) -> Self;
}

macro_rules! addr_bits {
    ($t:ty) => {
        impl AddrBits for $t {
            const WIDTH: u32 = <$t>::BITS;
            const ZERO: Self = 0;

            #[inline(always)]
            fn slot(self, depth: u32, stride: u32) -> usize {
                ((self << depth) >> (Self::WIDTH - stride)) as usize
            }

            #[inline]
            fn network(self, len: u32) -> Self {
                if len == 0 {
                    0
                } else {
                    self & (<$t>::MAX << (Self::WIDTH - len))
                }
            }

            #[inline]
            fn last(self, len: u32) -> Self {
                if len >= Self::WIDTH {
                    self
                } else {
                    self | (<$t>::MAX >> len)
                }
            }

            #[inline]
            fn with_slot(self, depth: u32, stride: u32, index: usize) -> Self {
                let shift = Self::WIDTH - depth - stride;
                let field = ((1 as $t) << stride).wrapping_sub(1) << shift;
                (self & !field) | ((index as $t) << shift)
            }
        }
    };
}

addr_bits!(u32);
addr_bits!(u128);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_ranges() {
        let a: u32 = 0x0a01_02ff;
        assert_eq!(a.slot(0, 16), 0x0a01);
        assert_eq!(a.slot(16, 8), 0x02);
        assert_eq!(a.slot(24, 8), 0xff);
        assert_eq!(a.network(8), 0x0a00_0000);
        assert_eq!(a.network(0), 0);
        assert_eq!(a.network(32), a);
        assert_eq!(0x0a00_0000u32.last(8), 0x0aff_ffff);
        assert_eq!(0u32.last(0), u32::MAX);
        assert_eq!(0x0a00_0000u32.with_slot(16, 8, 0x42), 0x0a00_4200);
        let b: u128 = 0x2001_0db8 << 96;
        assert_eq!(b.slot(0, 16), 0x2001);
        assert_eq!(b.slot(16, 8), 0x0d);
        assert_eq!(b.with_slot(120, 8, 7), b | 7);
    }
}
