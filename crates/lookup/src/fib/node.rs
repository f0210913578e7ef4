//! The lookup node: `2^stride` slots, leaf-pushed and run-length compressed.
//!
//! A node stores one entry per *run* of equal slots instead of one per slot, so a /16 node that
//! holds a handful of /24s costs tens of words, not 256. Slots are grouped by 64; each group has
//! a run-start bitmap and the number of runs before it, so the entry of slot `i` is found with one
//! popcount: `entries[base + rank[g] + popcount(bits[g] & up_to(i)) - 1]` (the poptrie idea, with
//! the leaf and child vectors merged into one run vector).
//!
//! Headers and entries live in separate arenas. A lookup on a full table is bound by how many
//! cache lines it fetches from beyond L2; the headers of a full IPv4 table (~1.3 MB) stay in L2,
//! so each level costs one distant line (its entry) instead of two.
//!
//! Header words: `[base, groups × [bits_lo, bits_hi, rank]]`, `base` being the offset of the
//! node's entries. An entry with [`CHILD`] set is the header offset of a child node; otherwise
//! it is a next-hop id, or [`NO_ROUTE`] where no prefix (other than the default route, kept
//! outside the trie) covers the slot.

pub const CHILD: u32 = 1 << 31;
pub const NO_ROUTE: u32 = CHILD - 1;

/// Bits the root consumes, in both families: wide enough that most IPv4 lookups need two
/// nodes, small enough (12 KiB of header) for a VR with ten routes.
pub const ROOT_STRIDE: u32 = 16;

#[inline(always)]
pub const fn header_words(stride: u32) -> usize {
    1 + 3 * ((1usize << stride) / 64)
}

/// The entry for `index` in the node whose header is at `node`.
///
/// # Safety
/// `headers` must hold a node of this `stride` at `node` whose entries are in `entries`, and
/// `index < 2^stride`.
#[inline(always)]
pub unsafe fn entry(headers: *const u32, entries: *const u32, node: u32, index: usize) -> u32 {
    *entry_ptr(headers, entries, node, index)
}

/// Where [`entry`] reads; same safety contract.
#[inline(always)]
pub unsafe fn entry_ptr(headers: *const u32, entries: *const u32, node: u32, index: usize) -> *const u32 {
    let header = headers.add(node as usize);
    let group = header.add(1 + 3 * (index >> 6));
    let bits = (group as *const u64).read_unaligned();
    let rank = *group.add(2) as usize;
    let runs = (bits & (u64::MAX >> (63 - (index & 63)))).count_ones() as usize;
    entries.add(*header as usize + rank + runs - 1)
}

/// Address of the header words `entry(headers, _, node, index)` reads first.
#[inline(always)]
pub fn header_ptr(headers: *const u32, node: u32, index: usize) -> *const u32 {
    headers.wrapping_add(node as usize + 1 + 3 * (index >> 6))
}

/// Starts loading the cache line at `p`.
#[inline(always)]
pub fn prefetch(p: *const u32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0)
    };
}

/// Number of runs (entries) `slots` encode to.
pub fn runs(slots: &[u32]) -> usize {
    1 + slots.windows(2).filter(|w| w[0] != w[1]).count()
}

/// Encodes `slots` into a header (pointing at entries stored at `base`) and its entries.
pub fn encode(slots: &[u32], base: u32, header: &mut [u32], entries: &mut [u32]) {
    header[0] = base;
    let mut runs = 0u32;
    for (g, group) in slots.chunks(64).enumerate() {
        let mut bits = 0u64;
        for (j, &v) in group.iter().enumerate() {
            let i = g * 64 + j;
            if i == 0 || slots[i - 1] != v {
                bits |= 1 << j;
                entries[runs as usize] = v;
                runs += 1;
            }
        }
        let words = &mut header[1 + 3 * g..4 + 3 * g];
        words[0] = bits as u32;
        words[1] = (bits >> 32) as u32;
        words[2] = runs - bits.count_ones();
    }
}

/// Expands a node back into one entry per slot; `entries` starts at the node's base.
pub fn decode(header: &[u32], entries: &[u32], slots: &mut [u32]) {
    let mut run = 0usize;
    for (g, group) in slots.chunks_mut(64).enumerate() {
        let bits = u64::from(header[1 + 3 * g]) | (u64::from(header[2 + 3 * g]) << 32);
        for (j, slot) in group.iter_mut().enumerate() {
            if bits & (1 << j) != 0 {
                run += 1;
            }
            *slot = entries[run - 1];
        }
    }
}

/// Number of entries of the node whose header starts `header`.
pub fn entry_count(header: &[u32], stride: u32) -> usize {
    let last = 1 + 3 * ((1usize << stride) / 64 - 1);
    let bits = u64::from(header[last]) | (u64::from(header[last + 1]) << 32);
    header[last + 2] as usize + bits.count_ones() as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn encode_decode_and_entry_agree(runs_in in proptest::collection::vec((0u32..5, 1usize..40), 1..40), wide in any::<bool>()) {
            let stride = if wide { 16 } else { 8 };
            let n = 1usize << stride;
            let mut slots = Vec::with_capacity(n);
            for (v, k) in runs_in.iter().cycle() {
                if slots.len() >= n { break; }
                slots.extend(std::iter::repeat_n(*v, *k));
            }
            slots.truncate(n);
            // Entries at a non-zero base, as in an arena holding other nodes.
            let base = 7u32;
            let mut header = vec![0u32; header_words(stride)];
            let mut entries = vec![0u32; base as usize + runs(&slots)];
            encode(&slots, base, &mut header, &mut entries[base as usize..]);
            prop_assert_eq!(entry_count(&header, stride), runs(&slots));
            let mut back = vec![0u32; n];
            decode(&header, &entries[base as usize..], &mut back);
            prop_assert_eq!(&back, &slots);
            for (i, &slot) in slots.iter().enumerate() {
                // SAFETY: `header` and `entries` are the node `encode` wrote, `i` one of its slots.
                prop_assert_eq!(unsafe { entry(header.as_ptr(), entries.as_ptr(), 0, i) }, slot);
            }
        }
    }
}
