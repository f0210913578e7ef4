//! Hash of a key projected on a table's mask.
//!
//! Folded 64×64→128-bit multiplies (as in foldhash) mix two words per multiply, and the five
//! multiplies are independent, so a hash costs a few cycles of latency instead of a nine-step
//! dependent chain.

use pearl_wire::flow_key::FlowKey;

const SEEDS: [u64; 10] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
    0x4528_21e6_38d0_1377,
    0xbe54_66cf_34e9_0c6c,
    0xc0ac_29b7_c97c_50dd,
    0x3f84_d5b5_b547_0917,
    0x9216_d5d9_8979_fb1b,
    0xd131_0ba6_98df_b5ac,
];

#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a).wrapping_mul(u128::from(b));
    (p as u64) ^ ((p >> 64) as u64)
}

/// Hash of `key & mask`; never 0, which the tables use to mark an empty slot.
#[inline(always)]
pub(crate) fn masked_hash(key: &FlowKey, mask: &FlowKey) -> u64 {
    let w: [u64; FlowKey::WORDS] = core::array::from_fn(|i| key.words[i] & mask.words[i]);
    let a = fold_mul(w[0] ^ SEEDS[0], w[1] ^ SEEDS[1]);
    let b = fold_mul(w[2] ^ SEEDS[2], w[3] ^ SEEDS[3]);
    let c = fold_mul(w[4] ^ SEEDS[4], w[5] ^ SEEDS[5]);
    let d = fold_mul(w[6] ^ SEEDS[6], w[7] ^ SEEDS[7]);
    let e = fold_mul(w[8] ^ SEEDS[8], SEEDS[9]);
    let h = fold_mul(a ^ c ^ e, b ^ d ^ SEEDS[9]);
    h.max(1)
}

/// A hasher for the control side's maps of keys and masks (the interface index is rebuilt from
/// every rule on each change): a folded multiply per word, where the standard SipHash spent
/// most of that rebuild hashing.
#[derive(Default, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

impl core::hash::Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = fold_mul(self.0 ^ u64::from_le_bytes(word), SEEDS[9]);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = fold_mul(self.0 ^ n, SEEDS[9]);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Maps hashed with [`KeyHasher`].
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, core::hash::BuildHasherDefault<KeyHasher>>;
