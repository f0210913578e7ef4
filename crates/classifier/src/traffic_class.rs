//! Traffic classes: the classifier keeps one set of tuple tables per EtherType class, so a key
//! only probes tables that can hold rules for its class.
//!
//! Almost every rule and every key pin the EtherType, and IPv4 and IPv6 rules hash on
//! unrelated address bits: kept together, IPv4 keys paid the pre-filter of every IPv6 table,
//! and IPv4 rules merged into IPv6 tables whose address bits are constant for them, so every
//! IPv4 key hit their buckets. A rule that does not pin the EtherType exactly (VID and SPP
//! filter rules) can match keys of every class, so it is installed in every class's tables.

use pearl_wire::flow_key::{Field, FlowKey};

const ETH_IPV4: u128 = 0x0800;
const ETH_IPV6: u128 = 0x86dd;
const EXACT_ETHERTYPE: u128 = 0xffff;

/// Number of traffic classes; classes index the classifier's table sets.
pub(crate) const CLASSES: usize = 3;
const IPV4: usize = 0;
const IPV6: usize = 1;
const OTHER: usize = 2;

/// The class of a key: IPv4, IPv6 or anything else.
#[inline(always)]
pub(crate) fn of_key(key: &FlowKey) -> usize {
    class_of_ethertype(key.get(Field::EtherType))
}

/// The classes whose keys `mask`/`value` can match.
pub(crate) fn of_rule(value: &FlowKey, mask: &FlowKey) -> core::ops::Range<usize> {
    if mask.get(Field::EtherType) == EXACT_ETHERTYPE {
        let class = class_of_ethertype(value.get(Field::EtherType));
        class..class + 1
    } else {
        0..CLASSES
    }
}

/// Key bits every key of `class` has alike: its EtherType, and for IPv4 the 96 bits in front
/// of each address in the v4-mapped layout. Hashing on them tells no two keys apart.
pub(crate) fn constant_bits(class: usize) -> FlowKey {
    const MAPPED_PREFIX: u128 = !0u128 << 32;
    let mut bits = FlowKey::default();
    if class != OTHER {
        bits.set(Field::EtherType, EXACT_ETHERTYPE);
    }
    if class == IPV4 {
        bits.set(Field::IpSrc, MAPPED_PREFIX);
        bits.set(Field::IpDst, MAPPED_PREFIX);
    }
    bits
}

#[inline(always)]
fn class_of_ethertype(ethertype: u128) -> usize {
    match ethertype {
        ETH_IPV4 => IPV4,
        ETH_IPV6 => IPV6,
        _ => OTHER,
    }
}
