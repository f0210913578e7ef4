//! The lookup node: `2^stride` slots, leaf-pushed and run-length compressed.
//!
//! A node stores one entry per *run* of equal slots instead of one per slot, so a /16 node that
//! holds a handful of /24s costs tens of words, not 256. Slots are grouped by 64; each group has
//! a run-start bitmap and the number of runs before it, so the entry of slot `i` is found with one
//! popcount: `entries[rank[g] + popcount(bits[g] & up_to(i)) - 1]` (the poptrie idea, with the
//! leaf and child vectors merged into one run vector).
//!
//! Layout in arena words: `groups × [bits_lo, bits_hi, rank]`, then the entries. An entry with
//! [`CHILD`] set is the arena offset of a child node; otherwise it is a next-hop id, or
//! [`NO_ROUTE`] where no prefix (other than the default route, kept outside the trie) covers
//! the slot.

pub const CHILD: u32 = 1 << 31;
pub const NO_ROUTE: u32 = CHILD - 1;

/// Strides by depth: a wide root so that most lookups need two nodes, then bytes.
#[inline(always)]
pub const fn stride_at(depth: u32) -> u32 {
    if depth == 0 {
        16
    } else {
        8
    }
}

#[inline(always)]
pub const fn header_words(stride: u32) -> usize {
    3 * ((1usize << stride) / 64)
}

/// The entry for `index` in the node at `node`.
///
/// # Safety
/// `words` must hold a node of this `stride` at `node`, and `index < 2^stride`.
#[inline(always)]
pub unsafe fn entry(words: *const u32, node: u32, index: usize, stride: u32) -> u32 {
    let group = node as usize + 3 * (index >> 6);
    let bits = (words.add(group) as *const u64).read_unaligned();
    let rank = *words.add(group + 2) as usize;
    let runs = (bits & (u64::MAX >> (63 - (index & 63)))).count_ones() as usize;
    *words.add(node as usize + header_words(stride) + rank + runs - 1)
}

/// Starts loading the cache lines `entry(words, node, index, _)` will read.
#[inline(always)]
pub fn prefetch(words: *const u32, node: u32, index: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let group = words.wrapping_add(node as usize + 3 * (index >> 6));
        // SAFETY: prefetching is a hint; it never faults, whatever the address.
        unsafe {
            _mm_prefetch(group as *const i8, _MM_HINT_T0);
            _mm_prefetch(group.wrapping_add(16) as *const i8, _MM_HINT_T0);
        }
    }
}

/// Words needed to encode `slots`.
pub fn encoded_len(slots: &[u32]) -> usize {
    let runs = 1 + slots.windows(2).filter(|w| w[0] != w[1]).count();
    header_words(stride_of(slots)) + runs
}

/// Encodes `slots` into `out` (exactly `encoded_len(slots)` words).
pub fn encode(slots: &[u32], out: &mut [u32]) {
    let header = header_words(stride_of(slots));
    let mut runs = 0u32;
    for (g, group) in slots.chunks(64).enumerate() {
        let mut bits = 0u64;
        for (j, &v) in group.iter().enumerate() {
            let i = g * 64 + j;
            if i == 0 || slots[i - 1] != v {
                bits |= 1 << j;
                out[header + runs as usize] = v;
                runs += 1;
            }
        }
        let before = runs - bits.count_ones();
        out[3 * g] = bits as u32;
        out[3 * g + 1] = (bits >> 32) as u32;
        out[3 * g + 2] = before;
    }
}

/// Expands an encoded node back into one entry per slot.
pub fn decode(node: &[u32], slots: &mut [u32]) {
    let header = header_words(stride_of(slots));
    let mut run = 0usize;
    for (g, group) in slots.chunks_mut(64).enumerate() {
        let bits = u64::from(node[3 * g]) | (u64::from(node[3 * g + 1]) << 32);
        for (j, slot) in group.iter_mut().enumerate() {
            if bits & (1 << j) != 0 {
                run += 1;
            }
            *slot = node[header + run - 1];
        }
    }
}

/// Length in words of the encoded node at the start of `words`.
pub fn len(words: &[u32], stride: u32) -> usize {
    let groups = (1usize << stride) / 64;
    let last = 3 * (groups - 1);
    let bits = u64::from(words[last]) | (u64::from(words[last + 1]) << 32);
    header_words(stride) + words[last + 2] as usize + bits.count_ones() as usize
}

fn stride_of(slots: &[u32]) -> u32 {
    debug_assert!(slots.len().is_power_of_two() && slots.len() >= 64);
    slots.len().trailing_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn encode_decode_and_entry_agree(runs in proptest::collection::vec((0u32..5, 1usize..40), 1..40), wide in any::<bool>()) {
            let stride = if wide { 16 } else { 8 };
            let n = 1usize << stride;
            let mut slots = Vec::with_capacity(n);
            for (v, k) in runs.iter().cycle() {
                if slots.len() >= n { break; }
                slots.extend(std::iter::repeat(*v).take(*k));
            }
            slots.truncate(n);
            let mut words = vec![0u32; encoded_len(&slots)];
            encode(&slots, &mut words);
            prop_assert_eq!(len(&words, stride), words.len());
            let mut back = vec![0u32; n];
            decode(&words, &mut back);
            prop_assert_eq!(&back, &slots);
            for i in 0..n {
                prop_assert_eq!(unsafe { entry(words.as_ptr(), 0, i, stride) }, slots[i]);
            }
        }
    }
}
