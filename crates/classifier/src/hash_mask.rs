//! How coarse a tuple table's hash mask is (TupleMerge's relaxation).
//!
//! Tuple space search with one table per distinct rule mask degrades on real rule sets: ACLs
//! mix every source and destination prefix length, so hundreds of tables would be probed. A
//! table may instead hash on a *less specific* mask than its rules (every rule's mask covers
//! the table's), verifying candidates with the full value/mask compare. Rounding prefix lengths
//! down to a few steps and dropping non-exact small fields lets most rules share a handful of
//! tables, while the bucket bound in the classifier keeps the verification lists short.

use pearl_wire::flow_key::{Field, FlowKey};

/// IPv4 prefixes (counted within the 32 IPv4 bits) round down to multiples of this.
const IPV4_STEP: u32 = 8;
/// IPv6 prefixes round down to multiples of this.
const IPV6_STEP: u32 = 16;
/// The opaque (filter) key rounds down to multiples of this.
const OPAQUE_STEP: u32 = 16;

/// The mask a new table should hash on for a rule with `mask`; always covered by `mask`.
pub(crate) fn relaxed(mask: &FlowKey) -> FlowKey {
    let mut out = FlowKey::default();
    for field in Field::ALL {
        let bits = field.bits();
        let m = mask.get(field) << (128 - bits);
        let len = m.leading_ones().min(bits);
        let keep = match field {
            Field::IpSrc | Field::IpDst => ip_len(len),
            Field::Opaque => len - len % OPAQUE_STEP,
            _ if len == bits => bits,
            _ => 0,
        };
        out.set(field, prefix(keep, bits));
    }
    out
}

/// The most specific hash mask for a rule whose bucket overflowed in the relaxed table: its
/// own mask, without bits outside every field (keys never set those).
pub(crate) fn unrelaxed(mask: &FlowKey) -> FlowKey {
    let mut out = FlowKey::default();
    for field in Field::ALL {
        out.set(field, mask.get(field));
    }
    out
}

fn ip_len(len: u32) -> u32 {
    const MAPPED: u32 = 96;
    if len >= MAPPED {
        let v4 = len - MAPPED;
        MAPPED + v4 - v4 % IPV4_STEP
    } else {
        len - len % IPV6_STEP
    }
}

/// A field mask with the top `len` of `bits` set.
fn prefix(len: u32, bits: u32) -> u128 {
    if len == 0 {
        0
    } else {
        (u128::MAX << (128 - len)) >> (128 - bits)
    }
}

/// True when every bit of `inner` is also in `outer`.
pub(crate) fn covered_by(inner: &FlowKey, outer: &FlowKey) -> bool {
    (0..FlowKey::WORDS).all(|i| inner.words[i] & !outer.words[i] == 0)
}
