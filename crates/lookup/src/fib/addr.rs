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

    /// The stride of the trie nodes at `depth` (a depth some node starts at).
    fn stride_at(depth: u32) -> u32;
}

macro_rules! addr_bits {
    ($t:ty, $below_root:expr) => {
        impl AddrBits for $t {
            #[inline(always)]
            fn stride_at(depth: u32) -> u32 {
                if depth == 0 {
                    super::node::ROOT_STRIDE
                } else {
                    let below_root: fn(u32) -> u32 = $below_root;
                    below_root(depth)
                }
            }

            const WIDTH: u32 = <$t>::BITS;
            const ZERO: Self = 0;

            #[inline(always)]
            fn slot(self, depth: u32, stride: u32) -> usize {
                // Nearly every IPv6 lookup ends within the first 64 bits: spare it the
                // two-register shifts of a 128-bit integer.
                if Self::WIDTH > 64 && depth + stride <= 64 {
                    let high = (self >> (Self::WIDTH - 64)) as u64;
                    return ((high << depth) >> (64 - stride)) as usize;
                }
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

// IPv4: a 16-bit root, then bytes: a /24 is found in the second node.
addr_bits!(u32, |_depth| 8);

// IPv6: the real table's longer routes fall under a few dozen /16s, so a second 16-bit level
// costs little memory and resolves /17–/32 in two nodes and /48 in four.
addr_bits!(u128, |depth| if depth == 16 { 16 } else { 8 });

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
