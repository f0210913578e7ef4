//! The first step of a batch lookup at each table: which keys of the batch still need the
//! table (their best match so far ranks below its best rule) and pass its pre-filter.
//!
//! With many tables this step runs far more often than any probe, so it works on the batch's
//! keys laid out by column (one array per key word) and, where the CPU has AVX-512, tests
//! eight keys per instruction and compress-stores the survivors, never branching on a key's
//! (unpredictable) outcome; the scalar path computes the same answer.

use crate::tuple_table::TupleTable;
use pearl_wire::flow_key::FlowKey;

/// Keys a large batch lookup advances together.
pub(crate) const BATCH: usize = 256;
/// The width used for small calls (a data-plane rx batch): the per-call arrays are sized by the
/// width and initialised on every call, so a 32-packet batch must not pay for 256 lanes.
pub(crate) const SMALL_BATCH: usize = 32;

/// A batch of up to `N` keys (a multiple of 8), word by word.
///
/// One instance is refilled for every group of a call: zeroing and moving its `9 × N` words
/// per group cost more than the filter step over them. Lanes past `len` keep an earlier
/// group's words, which no pass reads (the vector pass masks them out).
pub(crate) struct KeyColumns<const N: usize> {
    words: [[u64; N]; FlowKey::WORDS],
    len: usize,
}

impl<const N: usize> KeyColumns<N> {
    pub fn new() -> KeyColumns<N> {
        KeyColumns { words: [[0; N]; FlowKey::WORDS], len: 0 }
    }

    /// Replaces the batch with (the first `N` of) `keys`.
    pub fn load<'a>(&mut self, keys: impl Iterator<Item = &'a FlowKey>) {
        self.len = 0;
        for (k, key) in keys.take(N).enumerate() {
            for (column, word) in self.words.iter_mut().zip(key.words) {
                column[k] = word;
            }
            self.len = k + 1;
        }
    }
}

/// How the filter step runs on this CPU; chosen once per batch call.
#[derive(Clone, Copy)]
pub(crate) enum FilterPass {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl FilterPass {
    pub fn detect() -> FilterPass {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512vbmi2")
        {
            return FilterPass::Avx512;
        }
        FilterPass::Scalar
    }

    /// Writes the batch positions of the keys that need `table` and pass its pre-filter to
    /// `todo`; returns their count and whether any key still needed the table at all.
    #[inline(always)]
    pub fn select<const N: usize>(self, table: &TupleTable, cols: &KeyColumns<N>, floor: &[u64; N], todo: &mut [u16; N]) -> (usize, bool) {
        match self {
            FilterPass::Scalar => select_scalar(table, cols, floor, todo),
            // SAFETY: `detect` chose this variant only where the CPU has these AVX-512 parts.
            #[cfg(target_arch = "x86_64")]
            FilterPass::Avx512 => unsafe { select_avx512(table, cols, floor, todo) },
        }
    }
}

fn select_scalar<const N: usize>(table: &TupleTable, cols: &KeyColumns<N>, floor: &[u64; N], todo: &mut [u16; N]) -> (usize, bool) {
    let f = table.filter_view();
    let (first, second) = (&cols.words[f.words[0]], &cols.words[f.words[1]]);
    let mut n = 0;
    let mut live = false;
    for k in 0..cols.len {
        let needed = table.max_rank > floor[k];
        live |= needed;
        todo[n] = k as u16;
        // Branch-free: whether a key passes is unpredictable.
        n += usize::from(needed & f.passes(first[k], second[k]));
    }
    (n, live)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512vbmi2")]
unsafe fn select_avx512<const N: usize>(table: &TupleTable, cols: &KeyColumns<N>, floor: &[u64; N], todo: &mut [u16; N]) -> (usize, bool) {
    use core::arch::x86_64::*;
    let f = table.filter_view();
    let (first_column, second_column) = (&cols.words[f.words[0]], &cols.words[f.words[1]]);
    let first_mask = _mm512_set1_epi64(f.masks[0] as i64);
    let second_mask = _mm512_set1_epi64(f.masks[1] as i64);
    let mult = _mm512_set1_epi64(f.multiplier as i64);
    let shift = _mm512_set1_epi64(i64::from(f.shift));
    let best = _mm512_set1_epi64(table.max_rank as i64);
    let low6 = _mm512_set1_epi64(63);
    let one = _mm512_set1_epi64(1);
    let lane_numbers = _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7);
    let mut n = 0;
    let mut live = false;
    const { assert!(N.is_multiple_of(8)) };
    for c in 0..N / 8 {
        let first = c * 8;
        if first >= cols.len {
            break;
        }
        let lanes: __mmask8 = if cols.len - first >= 8 { 0xff } else { (1u8 << (cols.len - first)) - 1 };
        // SAFETY (loads and gather): `first + 8 <= N` for both arrays; gathered indices are
        // `bit / 64` for a bit below the bitmap's length, and unneeded lanes load nothing.
        let fl = _mm512_loadu_si512(floor.as_ptr().add(first).cast());
        let need = _mm512_mask_cmpgt_epu64_mask(lanes, best, fl);
        if need == 0 {
            continue;
        }
        live = true;
        let w0 = _mm512_and_si512(_mm512_loadu_si512(first_column.as_ptr().add(first).cast()), first_mask);
        let w1 = _mm512_and_si512(_mm512_loadu_si512(second_column.as_ptr().add(first).cast()), second_mask);
        let w = _mm512_xor_si512(w0, _mm512_rol_epi64::<31>(w1));
        let bit = _mm512_srlv_epi64(_mm512_mullo_epi64(w, mult), shift);
        let words = _mm512_mask_i64gather_epi64::<8>(_mm512_setzero_si512(), need, _mm512_srli_epi64::<6>(bit), f.bits.as_ptr().cast());
        let pass = _mm512_mask_test_epi64_mask(need, _mm512_srlv_epi64(words, _mm512_and_si512(bit, low6)), one);
        // Compressing in a register and storing all eight lanes is much cheaper than a
        // compress-store to memory; lanes past the survivors are overwritten or never read.
        // SAFETY: `n` never exceeds `first`, the number of keys already seen, so the eight
        // lanes stored at `n` stay within `todo`.
        let positions = _mm_add_epi16(_mm_set1_epi16(first as i16), lane_numbers);
        _mm_storeu_si128(todo.as_mut_ptr().add(n).cast(), _mm_maskz_compress_epi16(pass, positions));
        n += pass.count_ones() as usize;
    }
    (n, live)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash_mask::{covered_by, relaxed};
    use crate::rule::{rank, RuleId};
    use crate::synth;

    /// The vector path must select exactly what the scalar path selects.
    #[test]
    fn every_pass_selects_the_same_keys() {
        let rules = synth::rules(3000, 3);
        let keys = synth::keys(&rules, 4 * BATCH + 5, 4);
        let hash_mask = relaxed(&rules[0].mask);
        let mut table = TupleTable::new(hash_mask);
        for (i, rule) in rules.iter().enumerate().filter(|(_, r)| covered_by(&hash_mask, &r.mask)) {
            table.insert(rank(rule.priority, RuleId(i as u32)), rule.value, &rule.mask, rule.result);
        }
        let pass = FilterPass::detect();
        for (g, group) in keys.chunks(BATCH).enumerate() {
            let mut columns = KeyColumns::<BATCH>::new();
            columns.load(group.iter());
            let floor: [u64; BATCH] = core::array::from_fn(|k| if (k + g) % 3 == 0 { u64::MAX } else { 0 });
            let (mut scalar, mut chosen) = ([0u16; BATCH], [0u16; BATCH]);
            let (n, live) = select_scalar(&table, &columns, &floor, &mut scalar);
            assert_eq!(pass.select(&table, &columns, &floor, &mut chosen), (n, live));
            assert_eq!(scalar[..n], chosen[..n]);
        }
    }
}
