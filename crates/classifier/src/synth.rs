//! Synthetic rule sets and traffic for tests and the `pearl-bench classify` figure.
//!
//! The mix follows ClassBench's ACL/firewall seeds plus PEARL's own rule kinds. Of `n` rules:
//!
//! | share | kind | match | priority |
//! |------:|------|-------|----------|
//! | 25 % | VID (PEARL's default classification) | `in_port` + Ethernet dst exact | one shared band, `VID_PRIORITY` |
//! | 10 % | per-VR extras: control EtherTypes; a UDP service; a routed prefix | `in_port` + MAC + EtherType; + IPv4 proto 17 + UDP dst port; `in_port` + EtherType + IPv4 dst /16–/32 | unique, just above the VID band (they refine it) |
//! | 45 % | IPv4 ACL 5-tuple | EtherType 0x0800; src wildcard 35 % else /8–/32 (mostly /16, /24, /32, some odd); dst /8–/32 (mostly /16–/32); proto TCP 55 %, UDP 25 %, ICMP 5 %, any 15 %; dst port exact 65 % (mostly well-known), any 25 %, a range-expansion prefix 10 %; src port any 90 %, exact 10 % | unique, below the VID band or above the extras |
//! | 8 % | IPv6 ACL | EtherType 0x86dd; src any 40 % else /32–/64; dst /48, /56, /64 or /128; proto/ports as IPv4 | unique, below the VID band or above the extras |
//! | 12 % | SPP filters on the opaque key | 16-bit slice id exact + a 112-bit key (dst IPv4 exact or prefix, src IPv4 any or exact, ports exact or any, proto exact or any) | unique, below the VID band or above the extras |
//!
//! Addresses cluster in a pool of /16 "sites" as in ClassBench seeds, rules belong to one of
//! 256 VRs, and ports are 48 physical ports. Non-VID priorities are distinct, so the set
//! inserts without cross-VR ties. Such a set has hundreds of distinct masks.
//!
//! Keys ([`keys`]): 90 % are drawn to match a random rule (its value, random header values in
//! its wildcarded bits), 10 % are random headers, which mostly match only broad rules or none.
//! Everything is deterministic from the seed.

use crate::rule::{Rule, Verdict, VrId};
use pearl_wire::flow_key::{ip_to_u128, ipv4_prefix_mask, ipv6_prefix_mask, Field, FlowKey};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Number of VRs rules are spread over.
pub const VRS: u16 = 256;
/// Physical ports.
pub const PORTS: u16 = 48;

const ETH_IPV4: u128 = 0x0800;
const ETH_IPV6: u128 = 0x86dd;
const CONTROL_ETHERTYPES: [u128; 4] = [0x0806, 0x88cc, 0x8906, 0x88f7];
const WELL_KNOWN_PORTS: [u16; 24] =
    [80, 443, 22, 53, 25, 110, 143, 123, 161, 389, 445, 3389, 8080, 8443, 993, 995, 1194, 5060, 3306, 5432, 179, 500, 4500, 6379];
const SITES: usize = 2000;

/// Deterministic splitmix64 generator; the library must not depend on `rand`.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `percent`/100.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// Picks from `(weight, value)` pairs.
    fn weighted<T: Copy>(&mut self, table: &[(u64, T)]) -> T {
        let total: u64 = table.iter().map(|(w, _)| w).sum();
        let mut x = self.below(total);
        for &(w, v) in table {
            if x < w {
                return v;
            }
            x -= w;
        }
        table[table.len() - 1].1
    }
}

/// The VID band: every VID rule has this priority (distinct VR MACs keep them disjoint).
pub fn vid_priority(n: usize) -> u32 {
    2 * n as u32 + 1
}

/// A rule under construction: matches are added field by field.
struct Builder {
    value: FlowKey,
    mask: FlowKey,
}

impl Builder {
    fn new() -> Builder {
        Builder { value: FlowKey::default(), mask: FlowKey::default() }
    }

    fn exact(mut self, field: Field, v: u128) -> Builder {
        self.mask.set(field, u128::MAX);
        self.value.set(field, v);
        self
    }

    fn prefix(mut self, field: Field, v: u128, mask: u128) -> Builder {
        self.mask.set(field, mask);
        self.value.set(field, v & mask);
        self
    }

    fn build(self, priority: u32, vr: u16, action: u32) -> Rule {
        Rule { value: self.value, mask: self.mask, priority, result: Verdict { vr: VrId(vr), rule: None, action } }
    }
}

struct Generator {
    rng: Rng,
    sites: Vec<u32>,
}

impl Generator {
    fn ipv4(&mut self) -> u32 {
        let site = self.sites[self.rng.below(SITES as u64) as usize];
        site | (self.rng.next() as u32 & 0xffff)
    }

    fn vr_mac(vr: u16, port: u16, idx: u16) -> u128 {
        0x0200_0000_0000 | (u128::from(vr) << 24) | (u128::from(port) << 16) | u128::from(idx)
    }

    fn port(&mut self) -> u16 {
        if self.rng.chance(70) {
            WELL_KNOWN_PORTS[self.rng.below(WELL_KNOWN_PORTS.len() as u64) as usize]
        } else {
            self.rng.next() as u16
        }
    }

    fn v4_len(&mut self, src: bool) -> Option<u8> {
        if src {
            self.rng.weighted(&[
                (35, None),
                (5, Some(8)),
                (3, Some(12)),
                (12, Some(16)),
                (5, Some(20)),
                (20, Some(24)),
                (5, Some(28)),
                (15, Some(32)),
            ])
        } else {
            let mid = 19 + self.rng.below(5) as u8;
            let long = 25 + self.rng.below(7) as u8;
            self.rng.weighted(&[(2, Some(8)), (15, Some(16)), (10, Some(mid)), (30, Some(24)), (13, Some(long)), (30, Some(32))])
        }
    }

    /// Protocol and port matches shared by the IPv4 and IPv6 ACL kinds.
    fn transport(&mut self, b: Builder) -> Builder {
        let proto = self.rng.weighted(&[(55, Some(6u8)), (25, Some(17)), (5, Some(1)), (15, None)]);
        let Some(proto) = proto else { return b };
        let mut b = b.exact(Field::IpProto, proto.into());
        if proto == 1 {
            return b;
        }
        match self.rng.below(100) {
            0..=64 => b = b.exact(Field::L4Dst, self.port().into()),
            65..=89 => {}
            _ => {
                // One entry of a port range expanded into prefixes, e.g. 1024–65535.
                let len = 1 + self.rng.below(8) as u32;
                let mask = (0xffffu128 << (16 - len)) & 0xffff;
                b = b.prefix(Field::L4Dst, u128::from(self.rng.next() as u16), mask);
            }
        }
        if self.rng.chance(10) {
            b = b.exact(Field::L4Src, self.port().into());
        }
        b
    }

    fn acl_v4(&mut self) -> Builder {
        let mut b = Builder::new().exact(Field::EtherType, ETH_IPV4);
        if let Some(len) = self.v4_len(true) {
            b = b.prefix(Field::IpSrc, ip_to_u128(Ipv4Addr::from(self.ipv4()).into()), ipv4_prefix_mask(len));
        }
        let len = self.v4_len(false).unwrap_or(32);
        b = b.prefix(Field::IpDst, ip_to_u128(Ipv4Addr::from(self.ipv4()).into()), ipv4_prefix_mask(len));
        self.transport(b)
    }

    fn ipv6(&mut self) -> u128 {
        let site = 0x2001_0db8_0000u128 | (self.rng.below(SITES as u64) as u128);
        (site << 80) | u128::from(self.rng.next()) | (u128::from(self.rng.next() as u16) << 64)
    }

    fn acl_v6(&mut self) -> Builder {
        let mut b = Builder::new().exact(Field::EtherType, ETH_IPV6);
        if !self.rng.chance(40) {
            let len = self.rng.weighted(&[(30, 32u8), (30, 48), (40, 64)]);
            b = b.prefix(Field::IpSrc, ip_to_u128(Ipv6Addr::from(self.ipv6()).into()), ipv6_prefix_mask(len));
        }
        let len = self.rng.weighted(&[(25, 48u8), (15, 56), (35, 64), (25, 128)]);
        b = b.prefix(Field::IpDst, ip_to_u128(Ipv6Addr::from(self.ipv6()).into()), ipv6_prefix_mask(len));
        self.transport(b)
    }

    /// SPP's IPv4 code option filter key: slice id, then dst IP, src IP, dst port, src port,
    /// proto (bits 127..112, 111..80, 79..48, 47..32, 31..16, 15..8).
    fn spp_filter(&mut self, slice: u16) -> Builder {
        let mut value = u128::from(slice) << 112;
        let mut mask = 0xffffu128 << 112;
        let dst_len = self.rng.weighted(&[(60, 32u32), (25, 24), (15, 16)]);
        value |= u128::from(self.ipv4()) << 80;
        mask |= u128::from(u32::MAX << (32 - dst_len)) << 80;
        if self.rng.chance(30) {
            value |= u128::from(self.ipv4()) << 48;
            mask |= 0xffff_ffffu128 << 48;
        }
        if self.rng.chance(70) {
            value |= u128::from(self.port()) << 32;
            mask |= 0xffffu128 << 32;
        }
        if self.rng.chance(20) {
            value |= u128::from(self.port()) << 16;
            mask |= 0xffffu128 << 16;
        }
        if self.rng.chance(80) {
            value |= u128::from(self.rng.weighted(&[(60, 6u8), (40, 17)])) << 8;
            mask |= 0xffu128 << 8;
        }
        Builder::new().prefix(Field::Opaque, value, mask)
    }
}

/// `n` rules of the documented mix, deterministic from `seed`.
pub fn rules(n: usize, seed: u64) -> Vec<Rule> {
    let mut g = Generator { rng: Rng(seed ^ 0x5eed_c1a5_51f1_e700), sites: Vec::new() };
    g.sites = (0..SITES).map(|_| (g.rng.next() as u32) & 0xffff_0000).collect();
    let vid = vid_priority(n);
    // Distinct priorities for every non-VID rule, from shuffled disjoint ranges: extras just
    // above the band, the others below it or above the extras.
    let n32 = n as u32;
    let mut above: Vec<u32> = (vid + 1..=vid + n32).collect();
    let mut anywhere: Vec<u32> = (1..vid).chain(vid + n32 + 1..=vid + 2 * n32).collect();
    for list in [&mut above, &mut anywhere] {
        for i in (1..list.len()).rev() {
            list.swap(i, g.rng.below(i as u64 + 1) as usize);
        }
    }
    let mut rules = Vec::with_capacity(n);
    let mut vid_rules = 0u32;
    for _ in 0..n {
        let vr = g.rng.below(u64::from(VRS)) as u16;
        let action = g.rng.below(64) as u32;
        let rule = match g.rng.below(100) {
            0..=24 => {
                let port = (vid_rules % u32::from(PORTS)) as u16;
                let mac = Generator::vr_mac(vr, port, (vid_rules / u32::from(PORTS)) as u16);
                vid_rules += 1;
                Builder::new().exact(Field::InPort, port.into()).exact(Field::EthDst, mac).build(vid, vr, action)
            }
            25..=34 => {
                let priority = above.pop().expect("n priorities above the band");
                let port = g.rng.below(u64::from(PORTS)) as u16;
                let mac = Generator::vr_mac(vr, port, g.rng.below(64) as u16);
                let b = Builder::new().exact(Field::InPort, port.into());
                let b = match g.rng.below(3) {
                    0 => b.exact(Field::EthDst, mac).exact(Field::EtherType, CONTROL_ETHERTYPES[g.rng.below(4) as usize]),
                    1 => b
                        .exact(Field::EthDst, mac)
                        .exact(Field::EtherType, ETH_IPV4)
                        .exact(Field::IpProto, 17)
                        .exact(Field::L4Dst, g.port().into()),
                    _ => {
                        let len = 16 + g.rng.below(17) as u8;
                        b.exact(Field::EtherType, ETH_IPV4).prefix(
                            Field::IpDst,
                            ip_to_u128(Ipv4Addr::from(g.ipv4()).into()),
                            ipv4_prefix_mask(len),
                        )
                    }
                };
                b.build(priority, vr, action)
            }
            kind => {
                let priority = anywhere.pop().expect("n priorities outside the band");
                let b = match kind {
                    35..=79 => g.acl_v4(),
                    80..=87 => g.acl_v6(),
                    _ => g.spp_filter(vr),
                };
                b.build(priority, vr, action)
            }
        };
        rules.push(rule);
    }
    rules
}

/// `n` lookup keys for `rules`: 90 % drawn to match a random rule, 10 % random headers.
pub fn keys(rules: &[Rule], n: usize, seed: u64) -> Vec<FlowKey> {
    let mut g = Generator { rng: Rng(seed ^ 0x6b65_7973_0000_0001), sites: Vec::new() };
    g.sites = (0..SITES).map(|_| (g.rng.next() as u32) & 0xffff_0000).collect();
    (0..n)
        .map(|_| {
            let header = random_header(&mut g.rng);
            if rules.is_empty() || g.rng.chance(10) {
                return header;
            }
            let rule = &rules[g.rng.below(rules.len() as u64) as usize];
            FlowKey { words: core::array::from_fn(|i| rule.value.words[i] | (header.words[i] & !rule.mask.words[i])) }
        })
        .collect()
}

/// A plausible frame's key: mostly IPv4 TCP/UDP, random addresses and ports, no filter key.
fn random_header(rng: &mut Rng) -> FlowKey {
    let ethertype = rng.weighted(&[(85, ETH_IPV4), (10, ETH_IPV6), (5, 0x0806)]);
    let ip = |rng: &mut Rng| {
        if ethertype == ETH_IPV6 {
            u128::from(rng.next()) << 64 | u128::from(rng.next())
        } else {
            ip_to_u128(Ipv4Addr::from(rng.next() as u32).into())
        }
    };
    FlowKey::default()
        .with(Field::InPort, rng.below(u64::from(PORTS)).into())
        .with(Field::EthSrc, u128::from(rng.next()) & 0xffff_ffff_ffff)
        .with(Field::EthDst, u128::from(rng.next()) & 0xffff_ffff_ffff)
        .with(Field::EtherType, ethertype)
        .with(Field::IpSrc, ip(rng))
        .with(Field::IpDst, ip(rng))
        .with(Field::IpProto, rng.weighted(&[(60, 6u128), (35, 17), (5, 1)]))
        .with(Field::L4Src, (rng.next() as u16).into())
        .with(Field::L4Dst, (rng.next() as u16).into())
}
