//! A VR's imported prefixes (`leak:`): which other VR's tables serve a destination. Leaks are
//! few per VR and looked up only for VRs that have some, longest prefix first, so a plain
//! list does.

use core::net::IpAddr;
use pearl_control::Config;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeakTable {
    /// (network, length, source VR id), longest first.
    v4: Vec<(u32, u8, u16)>,
    v6: Vec<(u128, u8, u16)>,
}

impl LeakTable {
    /// VR `vr`'s (index into `config.vrs`) imports, with source VRs by id.
    pub fn of(config: &Config, vr: usize) -> LeakTable {
        let mut t = LeakTable::default();
        for leak in &config.vrs[vr].leak {
            let Some(from) = config.vrs.iter().find(|v| v.name == leak.from) else { continue };
            for p in &leak.prefixes {
                match p.addr {
                    IpAddr::V4(a) => t.v4.push((u32::from(a), p.len, from.id)),
                    IpAddr::V6(a) => t.v6.push((u128::from(a), p.len, from.id)),
                }
            }
        }
        t.v4.sort_by_key(|&(_, len, _)| std::cmp::Reverse(len));
        t.v6.sort_by_key(|&(_, len, _)| std::cmp::Reverse(len));
        t
    }

    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }

    /// The VR whose routes serve IPv4 destination `dst`, if a leaked prefix covers it.
    #[inline]
    pub fn source_v4(&self, dst: u32) -> Option<u16> {
        self.v4.iter().find(|&&(net, len, _)| len == 0 || (dst ^ net) >> (32 - u32::from(len)) == 0).map(|&(_, _, from)| from)
    }

    /// As `source_v4`, for IPv6.
    #[inline]
    pub fn source_v6(&self, dst: u128) -> Option<u16> {
        self.v6.iter().find(|&&(net, len, _)| len == 0 || (dst ^ net) >> (128 - u32::from(len)) == 0).map(|&(_, _, from)| from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pearl_control::parse_config;

    #[test]
    fn the_longest_covering_prefix_names_the_source() {
        let c = parse_config(
            "ports: [{name: p0, interface: pe0}]
vrs:
  - {name: red, id: 1, interfaces: [{name: eth0, port: p0, mac: '02:00:00:00:01:00'}]}
  - {name: green, id: 2, interfaces: [{name: eth0, port: p0, mac: '02:00:00:00:02:00'}]}
  - name: blue
    id: 3
    interfaces: [{name: eth0, port: p0, mac: '02:00:00:00:03:00'}]
    leak: [{from: red, prefixes: [10.0.0.0/8, '2001:db8::/32', 0.0.0.0/0]}, {from: green, prefixes: [10.1.0.0/16]}]
",
        )
        .unwrap();
        let t = LeakTable::of(&c, 2);
        let v4 = |s: &str| u32::from(s.parse::<core::net::Ipv4Addr>().unwrap());
        assert_eq!(t.source_v4(v4("10.1.2.3")), Some(2), "the /16 beats the /8");
        assert_eq!(t.source_v4(v4("10.2.0.1")), Some(1));
        assert_eq!(t.source_v4(v4("192.0.2.1")), Some(1), "the default route covers all");
        let v6 = |s: &str| u128::from(s.parse::<core::net::Ipv6Addr>().unwrap());
        assert_eq!(t.source_v6(v6("2001:db8::1")), Some(1));
        assert_eq!(t.source_v6(v6("2001:db9::1")), None);
        assert!(LeakTable::of(&c, 0).is_empty());
    }
}
