//! Route messages (`RTM_NEWROUTE`, `RTM_DELROUTE`): `struct rtmsg`, its attributes and its
//! next hops, parsed without copying.

use crate::consts::*;
use crate::message::{attr_u32, attributes, bytes, ne_u16, ne_u32, ParseError};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `struct rtmsg`.
const RTMSG_LEN: usize = 12;
/// `struct rtnexthop`.
const RTNH_LEN: usize = 8;

/// One route as the kernel describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteMsg<'a> {
    pub family: u8,
    /// The destination network (the family's zero address for a default route).
    pub dst: IpAddr,
    pub dst_len: u8,
    pub src_len: u8,
    pub tos: u8,
    pub table: u32,
    /// `RTN_*`.
    pub kind: u8,
    /// `RTM_F_*`, and for a single-path route its `RTNH_F_*` in the low byte.
    pub flags: u32,
    pub metric: u32,
    oif: Option<u32>,
    gateway: Option<IpAddr>,
    multipath: Option<&'a [u8]>,
    /// Lightweight-tunnel encapsulation (MPLS, SRv6, …), which the fast path cannot add.
    pub encap: bool,
    /// A next-hop object id; the kernel also spells the next hops out unless
    /// `nexthop_compat_mode` is off.
    pub nh_id: Option<u32>,
}

/// One next hop of a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Path {
    pub ifindex: u32,
    pub gateway: Option<IpAddr>,
    /// Relative weight, 1 to 256.
    pub weight: u16,
    /// `RTNH_F_*`.
    pub flags: u8,
}

impl<'a> RouteMsg<'a> {
    #[inline]
    pub fn parse(payload: &'a [u8]) -> Result<RouteMsg<'a>, ParseError> {
        let h = bytes(payload, 0, RTMSG_LEN, "rtmsg")?;
        let family = h[0];
        let mut m = RouteMsg {
            family,
            dst: zero(family)?,
            dst_len: h[1],
            src_len: h[2],
            tos: h[3],
            table: u32::from(h[4]),
            kind: h[7],
            flags: ne_u32(&h[8..12]),
            metric: 0,
            oif: None,
            gateway: None,
            multipath: None,
            encap: false,
            nh_id: None,
        };
        if u32::from(m.dst_len) > max_len(family) {
            return Err(ParseError::BadLength { what: "rtmsg.rtm_dst_len", len: usize::from(m.dst_len) });
        }
        for a in attributes(&payload[RTMSG_LEN..]) {
            let (kind, value) = a?;
            match kind {
                RTA_DST => m.dst = address(family, value, "RTA_DST")?,
                RTA_OIF => m.oif = Some(attr_u32(value, "RTA_OIF")?),
                RTA_GATEWAY => m.gateway = Some(address(family, value, "RTA_GATEWAY")?),
                RTA_VIA => m.gateway = Some(via(value)?),
                RTA_PRIORITY => m.metric = attr_u32(value, "RTA_PRIORITY")?,
                RTA_TABLE => m.table = attr_u32(value, "RTA_TABLE")?,
                RTA_MULTIPATH => m.multipath = Some(value),
                RTA_ENCAP => m.encap = true,
                RTA_NH_ID => m.nh_id = Some(attr_u32(value, "RTA_NH_ID")?),
                _ => {}
            }
        }
        Ok(m)
    }

    /// The next hops: the `RTA_MULTIPATH` list, or the single one the route's own attributes
    /// name (none for routes without an interface or gateway, such as unreachable ones).
    #[inline]
    pub fn paths(&self) -> Paths<'a> {
        match self.multipath {
            Some(rest) => Paths::Multi { rest, family: self.family },
            None if self.oif.is_some() || self.gateway.is_some() => {
                Paths::Single(Some(Path { ifindex: self.oif.unwrap_or(0), gateway: self.gateway, weight: 1, flags: self.flags as u8 }))
            }
            None => Paths::Single(None),
        }
    }
}

pub enum Paths<'a> {
    Single(Option<Path>),
    Multi { rest: &'a [u8], family: u8 },
}

impl Iterator for Paths<'_> {
    type Item = Result<Path, ParseError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Paths::Single(p) => p.take().map(Ok),
            Paths::Multi { rest, family } => {
                if rest.is_empty() {
                    return None;
                }
                let parsed = next_hop(rest, *family);
                match parsed {
                    Ok((path, used)) => {
                        *rest = &rest[used.min(rest.len())..];
                        Some(Ok(path))
                    }
                    Err(e) => {
                        *rest = &[];
                        Some(Err(e))
                    }
                }
            }
        }
    }
}

/// One `struct rtnexthop` and its attributes; returns it and the bytes it spans.
#[inline]
fn next_hop(buf: &[u8], family: u8) -> Result<(Path, usize), ParseError> {
    let h = bytes(buf, 0, RTNH_LEN, "rtnexthop")?;
    let len = usize::from(ne_u16(&h[0..2]));
    if len < RTNH_LEN {
        return Err(ParseError::BadLength { what: "rtnexthop", len });
    }
    let whole = bytes(buf, 0, len, "rtnexthop")?;
    let mut path = Path { ifindex: ne_u32(&h[4..8]), gateway: None, weight: u16::from(h[3]) + 1, flags: h[2] };
    for a in attributes(&whole[RTNH_LEN..]) {
        let (kind, value) = a?;
        match kind {
            RTA_GATEWAY => path.gateway = Some(address(family, value, "rtnexthop RTA_GATEWAY")?),
            RTA_VIA => path.gateway = Some(via(value)?),
            _ => {}
        }
    }
    Ok((path, (len + 3) & !3))
}

#[inline]
fn zero(family: u8) -> Result<IpAddr, ParseError> {
    match family {
        AF_INET => Ok(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        AF_INET6 => Ok(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
        other => Err(ParseError::BadLength { what: "rtmsg.rtm_family (not AF_INET or AF_INET6)", len: usize::from(other) }),
    }
}

#[inline]
fn max_len(family: u8) -> u32 {
    if family == AF_INET {
        32
    } else {
        128
    }
}

/// An address of `family` from an attribute value.
#[inline]
pub fn address(family: u8, value: &[u8], what: &'static str) -> Result<IpAddr, ParseError> {
    match (family, value.len()) {
        (AF_INET, 4) => Ok(IpAddr::V4(Ipv4Addr::new(value[0], value[1], value[2], value[3]))),
        (AF_INET6, 16) => {
            let mut a = [0u8; 16];
            a.copy_from_slice(value);
            Ok(IpAddr::V6(Ipv6Addr::from(a)))
        }
        (_, len) => Err(ParseError::BadLength { what, len }),
    }
}

/// `struct rtvia`: a gateway of another family (an IPv4 route via an IPv6 neighbour).
#[inline]
fn via(value: &[u8]) -> Result<IpAddr, ParseError> {
    let family = bytes(value, 0, 2, "RTA_VIA")?;
    address(ne_u16(family) as u8, &value[2..], "RTA_VIA address")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ip route add 10.9.0.0/16 via 10.0.0.2 dev ifindex 2 metric 20` as the kernel reports it.
    #[rustfmt::skip]
    const SINGLE: [u8; 60] = [
        2, 16, 0, 0, 254, 4, 0, 1, 0, 0, 0, 0,  // rtmsg: AF_INET /16, main, boot, universe, unicast
        8, 0, 15, 0, 254, 0, 0, 0,              // RTA_TABLE 254
        8, 0, 6, 0, 20, 0, 0, 0,                // RTA_PRIORITY 20
        8, 0, 1, 0, 10, 9, 0, 0,                // RTA_DST 10.9.0.0
        8, 0, 5, 0, 10, 0, 0, 2,                // RTA_GATEWAY 10.0.0.2
        8, 0, 4, 0, 2, 0, 0, 0,                 // RTA_OIF 2
        5, 0, 99, 0, 7, 0, 0, 0,                // an attribute this parser does not know
    ];

    #[test]
    fn a_single_path_route() {
        let m = RouteMsg::parse(&SINGLE).unwrap();
        assert_eq!(
            (m.family, m.dst, m.dst_len, m.table, m.kind, m.metric),
            (AF_INET, "10.9.0.0".parse().unwrap(), 16, 254, RTN_UNICAST, 20)
        );
        let paths: Vec<_> = m.paths().collect::<Result<_, _>>().unwrap();
        assert_eq!(paths, vec![Path { ifindex: 2, gateway: Some("10.0.0.2".parse().unwrap()), weight: 1, flags: 0 }]);
    }

    #[test]
    fn an_ipv6_multipath_route_with_weights_and_a_dead_member() {
        #[rustfmt::skip]
        let mut buf = vec![
            10, 48, 0, 0, 254, 3, 0, 1, 0, 0, 0, 0,
            20, 0, 1, 0, 0x20, 1, 0x0d, 0xb8, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // RTA_DST 2001:db8:9::
            60, 0, 9, 0,                                                           // RTA_MULTIPATH
              28, 0, 0, 2, 3, 0, 0, 0,                                             //   weight 3, ifindex 3
                20, 0, 5, 0, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,   //   via fe80::1
              28, 0, 1, 0, 4, 0, 0, 0,                                             //   dead, ifindex 4
                20, 0, 5, 0, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
            8, 0, 15, 0, 254, 0, 0, 0,
        ];
        let m = RouteMsg::parse(&buf).unwrap();
        let paths: Vec<_> = m.paths().collect::<Result<_, _>>().unwrap();
        assert_eq!(m.dst, "2001:db8:9::".parse::<IpAddr>().unwrap());
        assert_eq!(paths[0], Path { ifindex: 3, gateway: Some("fe80::1".parse().unwrap()), weight: 3, flags: 0 });
        assert_eq!(paths[1], Path { ifindex: 4, gateway: Some("fe80::2".parse().unwrap()), weight: 1, flags: RTNH_F_DEAD });
        // A next hop claiming more bytes than the attribute holds.
        buf[12 + 20 + 4] = 200;
        let m = RouteMsg::parse(&buf).unwrap();
        assert!(matches!(m.paths().next(), Some(Err(ParseError::Truncated { what: "rtnexthop", .. }))));
    }

    #[test]
    fn an_ipv4_route_via_an_ipv6_gateway() {
        #[rustfmt::skip]
        let buf = [
            2, 0, 0, 0, 254, 4, 0, 1, 0, 0, 0, 0,  // the default route
            22, 0, 18, 0, 10, 0, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0,  // RTA_VIA AF_INET6 fe80::9
            8, 0, 4, 0, 5, 0, 0, 0,
        ];
        let m = RouteMsg::parse(&buf).unwrap();
        assert_eq!((m.dst, m.dst_len), ("0.0.0.0".parse().unwrap(), 0));
        let p = m.paths().next().unwrap().unwrap();
        assert_eq!((p.ifindex, p.gateway), (5, Some("fe80::9".parse().unwrap())));
    }

    #[test]
    fn malformed_routes_are_refused_by_name() {
        let mut bad_len = SINGLE;
        bad_len[1] = 33;
        assert_eq!(RouteMsg::parse(&bad_len), Err(ParseError::BadLength { what: "rtmsg.rtm_dst_len", len: 33 }));
        let mut bad_gw = SINGLE;
        bad_gw[36] = 7; // RTA_GATEWAY claims 3 bytes
        assert_eq!(RouteMsg::parse(&bad_gw[..]).unwrap_err(), ParseError::BadLength { what: "RTA_GATEWAY", len: 3 });
        assert!(matches!(RouteMsg::parse(&SINGLE[..8]), Err(ParseError::Truncated { what: "rtmsg", .. })));
        let unreachable = [2, 8, 0, 0, 254, 3, 0, RTN_UNREACHABLE, 0, 0, 0, 0];
        assert_eq!(RouteMsg::parse(&unreachable).unwrap().paths().count(), 0);
    }
}
