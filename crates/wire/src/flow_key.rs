//! The 10-tuple PEARL classifies on, plus SPP's opaque filter key, packed into fixed words.
//!
//! Packing every field at a fixed bit position lets the classifier mask, hash and compare a key
//! with a handful of word operations instead of field-by-field code.
//!
//! Layout (`words[i]`, bit 0 = least significant):
//!
//! | word | bits 0..16 | bits 16..32 | bits 32..48 | bits 48..64 |
//! |------|------------|-------------|-------------|-------------|
//! | 0    | in_port    | EtherType   | VLAN        | IP proto (48..56), zero (56..64) |
//! | 1    | Ethernet dst (0..48)                   || L4 src port |
//! | 2    | Ethernet src (0..48)                   || L4 dst port |
//! | 3, 4 | IP src, high and low 64 bits (IPv4 as `::ffff:a.b.c.d`) ||||
//! | 5, 6 | IP dst, likewise                        ||||
//! | 7, 8 | opaque key, high and low 64 bits (128 ≥ SPP's 112)     ||||
//!
//! VLAN: `0` means untagged; a tagged frame stores `0x1000 | vid` so VID 0 stays distinct.
//! ICMP stores type and code in the L4 source and destination ports (OpenFlow's convention).

use core::net::{IpAddr, Ipv6Addr};

/// One named field of a [`FlowKey`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    InPort,
    EthSrc,
    EthDst,
    EtherType,
    VlanId,
    IpSrc,
    IpDst,
    IpProto,
    L4Src,
    L4Dst,
    Opaque,
}

/// Where a field lives: `(word, shift, width)`; 128-bit fields span two words (high first).
struct Slot {
    word: usize,
    shift: u32,
    width: u32,
}

impl Field {
    pub const ALL: [Field; 11] = [
        Field::InPort,
        Field::EthSrc,
        Field::EthDst,
        Field::EtherType,
        Field::VlanId,
        Field::IpSrc,
        Field::IpDst,
        Field::IpProto,
        Field::L4Src,
        Field::L4Dst,
        Field::Opaque,
    ];

    /// Width of the field in bits.
    pub const fn bits(self) -> u32 {
        match self {
            Field::InPort | Field::EtherType | Field::VlanId | Field::L4Src | Field::L4Dst => 16,
            Field::EthSrc | Field::EthDst => 48,
            Field::IpProto => 8,
            Field::IpSrc | Field::IpDst | Field::Opaque => 128,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Field::InPort => "in_port",
            Field::EthSrc => "eth_src",
            Field::EthDst => "eth_dst",
            Field::EtherType => "ethertype",
            Field::VlanId => "vlan",
            Field::IpSrc => "ip_src",
            Field::IpDst => "ip_dst",
            Field::IpProto => "ip_proto",
            Field::L4Src => "l4_src",
            Field::L4Dst => "l4_dst",
            Field::Opaque => "opaque",
        }
    }

    const fn slot(self) -> Slot {
        let (word, shift) = match self {
            Field::InPort => (0, 0),
            Field::EtherType => (0, 16),
            Field::VlanId => (0, 32),
            Field::IpProto => (0, 48),
            Field::EthDst => (1, 0),
            Field::L4Src => (1, 48),
            Field::EthSrc => (2, 0),
            Field::L4Dst => (2, 48),
            Field::IpSrc => (3, 0),
            Field::IpDst => (5, 0),
            Field::Opaque => (7, 0),
        };
        Slot { word, shift, width: self.bits() }
    }
}

/// VLAN field value of a tagged frame with this VID (see the module note).
pub const fn vlan_tagged(vid: u16) -> u16 {
    0x1000 | (vid & 0x0fff)
}

/// A key's fields as plain integers, for building a key in one pass with [`FlowKey::pack`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowFields {
    pub in_port: u16,
    pub eth_dst: u64,
    pub eth_src: u64,
    pub ethertype: u16,
    pub vlan: u16,
    pub ip_src: u128,
    pub ip_dst: u128,
    pub ip_proto: u8,
    pub l4_src: u16,
    pub l4_dst: u16,
}

/// A packed classification key; also used as a mask (all-ones bits = "must match").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FlowKey {
    pub words: [u64; FlowKey::WORDS],
}

impl FlowKey {
    pub const WORDS: usize = 9;

    /// A mask that matches every field exactly.
    pub const EXACT: FlowKey = FlowKey { words: [u64::MAX; FlowKey::WORDS] };

    /// Packs `f` (opaque key zero). Assembles each word whole: setting fields one by one reads
    /// back words just written, which stalls the extractor on store forwarding.
    #[inline(always)]
    pub fn pack(f: &FlowFields) -> FlowKey {
        const MAC: u64 = (1 << 48) - 1;
        FlowKey {
            words: [
                u64::from(f.in_port) | u64::from(f.ethertype) << 16 | u64::from(f.vlan) << 32 | u64::from(f.ip_proto) << 48,
                (f.eth_dst & MAC) | u64::from(f.l4_src) << 48,
                (f.eth_src & MAC) | u64::from(f.l4_dst) << 48,
                (f.ip_src >> 64) as u64,
                f.ip_src as u64,
                (f.ip_dst >> 64) as u64,
                f.ip_dst as u64,
                0,
                0,
            ],
        }
    }

    /// Reads a field as a 128-bit integer (narrow fields are zero-extended).
    pub fn get(&self, field: Field) -> u128 {
        let s = field.slot();
        if s.width == 128 {
            (u128::from(self.words[s.word]) << 64) | u128::from(self.words[s.word + 1])
        } else {
            u128::from((self.words[s.word] >> s.shift) & low_bits(s.width))
        }
    }

    /// Writes a field; bits above the field's width are ignored.
    pub fn set(&mut self, field: Field, value: u128) {
        let s = field.slot();
        if s.width == 128 {
            self.words[s.word] = (value >> 64) as u64;
            self.words[s.word + 1] = value as u64;
        } else {
            let m = low_bits(s.width) << s.shift;
            self.words[s.word] = (self.words[s.word] & !m) | (((value as u64) << s.shift) & m);
        }
    }

    pub fn with(mut self, field: Field, value: u128) -> Self {
        self.set(field, value);
        self
    }

    /// Bitwise AND with a mask.
    #[inline(always)]
    pub fn masked(&self, mask: &FlowKey) -> FlowKey {
        let mut out = FlowKey::default();
        for i in 0..Self::WORDS {
            out.words[i] = self.words[i] & mask.words[i];
        }
        out
    }

    /// True when `self & mask == value` (value must already be masked).
    #[inline(always)]
    pub fn matches(&self, value: &FlowKey, mask: &FlowKey) -> bool {
        let mut diff = 0;
        for i in 0..Self::WORDS {
            diff |= (self.words[i] & mask.words[i]) ^ value.words[i];
        }
        diff == 0
    }

    pub fn in_port(&self) -> u16 {
        self.get(Field::InPort) as u16
    }
    pub fn ethertype(&self) -> u16 {
        self.get(Field::EtherType) as u16
    }
    pub fn vlan(&self) -> u16 {
        self.get(Field::VlanId) as u16
    }
    pub fn ip_proto(&self) -> u8 {
        self.get(Field::IpProto) as u8
    }
    pub fn l4_src(&self) -> u16 {
        self.get(Field::L4Src) as u16
    }
    pub fn l4_dst(&self) -> u16 {
        self.get(Field::L4Dst) as u16
    }
    pub fn eth_src(&self) -> [u8; 6] {
        mac_from(self.get(Field::EthSrc))
    }
    pub fn eth_dst(&self) -> [u8; 6] {
        mac_from(self.get(Field::EthDst))
    }
    pub fn ip_src(&self) -> IpAddr {
        ip_from(self.get(Field::IpSrc))
    }
    pub fn ip_dst(&self) -> IpAddr {
        ip_from(self.get(Field::IpDst))
    }
}

/// A MAC address as the 48-bit integer stored in a key.
pub fn mac_to_u128(mac: [u8; 6]) -> u128 {
    mac.iter().fold(0u128, |acc, b| (acc << 8) | u128::from(*b))
}

fn mac_from(v: u128) -> [u8; 6] {
    let b = (v as u64).to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// An IP address as stored in a key: IPv6 as is, IPv4 as `::ffff:a.b.c.d`.
pub fn ip_to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(a.to_ipv6_mapped()),
        IpAddr::V6(a) => u128::from(a),
    }
}

fn ip_from(v: u128) -> IpAddr {
    let a = Ipv6Addr::from(v);
    match a.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(a),
    }
}

/// The key-field mask of an IPv4 prefix of length `len` (0..=32) stored v4-mapped.
pub fn ipv4_prefix_mask(len: u8) -> u128 {
    ipv6_prefix_mask(96 + len.min(32))
}

/// The key-field mask of an IPv6 prefix of length `len` (0..=128).
pub fn ipv6_prefix_mask(len: u8) -> u128 {
    match len {
        0 => 0,
        l if l >= 128 => u128::MAX,
        l => u128::MAX << (128 - u32::from(l)),
    }
}

const fn low_bits(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_without_touching_neighbours() {
        let mut k = FlowKey::default();
        let vals: [(Field, u128); 11] = [
            (Field::InPort, 0xbeef),
            (Field::EthSrc, 0x0200_0000_0101),
            (Field::EthDst, 0xffff_ffff_ffff),
            (Field::EtherType, 0x86dd),
            (Field::VlanId, u128::from(vlan_tagged(100))),
            (Field::IpSrc, ip_to_u128("10.0.0.1".parse().unwrap())),
            (Field::IpDst, ip_to_u128("2001:db8::1".parse().unwrap())),
            (Field::IpProto, 17),
            (Field::L4Src, 5353),
            (Field::L4Dst, 0xffff),
            (Field::Opaque, (1u128 << 112) - 1),
        ];
        for (f, v) in vals {
            k.set(f, v);
        }
        for (f, v) in vals {
            assert_eq!(k.get(f), v, "{}", f.name());
        }
        assert_eq!(k.ip_src(), "10.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(k.ip_dst(), "2001:db8::1".parse::<IpAddr>().unwrap());
        assert_eq!(k.eth_src(), [2, 0, 0, 0, 1, 1]);
        assert_eq!(k.words[0] >> 56, 0, "reserved bits stay zero");
    }

    #[test]
    fn pack_agrees_with_setting_fields_one_by_one() {
        let f = FlowFields {
            in_port: 7,
            eth_dst: 0x0200_0000_0101,
            eth_src: 0x02aa_0000_0002,
            ethertype: 0x86dd,
            vlan: vlan_tagged(42),
            ip_src: ip_to_u128("2001:db8::1".parse().unwrap()),
            ip_dst: ip_to_u128("10.1.2.3".parse().unwrap()),
            ip_proto: 6,
            l4_src: 1234,
            l4_dst: 80,
        };
        let by_field = FlowKey::default()
            .with(Field::InPort, 7)
            .with(Field::EthDst, 0x0200_0000_0101)
            .with(Field::EthSrc, 0x02aa_0000_0002)
            .with(Field::EtherType, 0x86dd)
            .with(Field::VlanId, u128::from(vlan_tagged(42)))
            .with(Field::IpSrc, f.ip_src)
            .with(Field::IpDst, f.ip_dst)
            .with(Field::IpProto, 6)
            .with(Field::L4Src, 1234)
            .with(Field::L4Dst, 80);
        assert_eq!(FlowKey::pack(&f), by_field);
    }

    #[test]
    fn prefix_masks_match_only_inside_the_prefix() {
        let mask = FlowKey::default().with(Field::IpDst, ipv4_prefix_mask(24));
        let value = FlowKey::default().with(Field::IpDst, ip_to_u128("192.0.2.0".parse().unwrap())).masked(&mask);
        let inside = FlowKey::default().with(Field::IpDst, ip_to_u128("192.0.2.77".parse().unwrap()));
        let outside = FlowKey::default().with(Field::IpDst, ip_to_u128("192.0.3.1".parse().unwrap()));
        let v6 = FlowKey::default().with(Field::IpDst, ip_to_u128("::c000:0201".parse().unwrap()));
        assert!(inside.matches(&value, &mask));
        assert!(!outside.matches(&value, &mask));
        assert!(!v6.matches(&value, &mask), "an IPv4 rule must not match an IPv4-compatible IPv6 address");
    }
}
