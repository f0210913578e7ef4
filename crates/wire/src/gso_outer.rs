//! The outer headers of an encapsulated super-packet (a VR's program put a tunnel's headers in
//! front of a GSO super-packet): each segment cut from the inner packet gets a copy of them,
//! made true for that segment as Linux's tunnel GSO makes them (`ipip_gso_segment`,
//! `gre_gso_segment`, `skb_udp_tunnel_segment`): outer IPv4 total length, identification (one
//! more per segment) and header checksum; outer IPv6 payload length; outer UDP length and
//! checksum (left 0 over IPv4 when the sender left it 0); a GRE checksum when the GRE header has
//! one. Between a UDP or GRE header and the inner IP header (VXLAN, Geneve, an inner Ethernet
//! header) the bytes are copied as they are.

use crate::checksum::{checksum, fold, sum};
use crate::numbers::ip_proto;
use crate::offload::BadOffload;

/// The most outer headers whose fields are made per segment.
const MAX_OUTER: usize = 6;
/// GRE's flag: a checksum field follows the header's first word.
const GRE_CHECKSUM: u8 = 0x80;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outer {
    Ipv4,
    Ipv6,
    /// Its checksum is to be computed (over IPv6, or non-zero as the program left it).
    Udp {
        checksum: bool,
    },
    Gre,
}

/// What to make anew in each segment's outer headers, innermost last.
#[derive(Clone, Copy, Debug, Default)]
pub struct OuterHeaders {
    headers: [(Option<Outer>, u16); MAX_OUTER],
    count: usize,
}

impl OuterHeaders {
    /// Walks the headers of `frame` from `from` (the outer IP header) to `inner` (the inner IP
    /// header); an error names what cannot be a tunnel's header.
    pub fn parse(frame: &[u8], from: usize, inner: usize) -> Result<OuterHeaders, BadOffload> {
        let bad = |offset: usize| BadOffload { field: "encapsulation", offset };
        let mut outer = OuterHeaders::default();
        let mut at = from;
        while at < inner {
            if outer.count == MAX_OUTER {
                return Err(bad(at));
            }
            let (kind, next, protocol) = match frame.get(at).map(|b| b >> 4) {
                Some(4) if frame.len() >= at + 20 => (Outer::Ipv4, at + usize::from(frame[at] & 0xf) * 4, frame[at + 9]),
                Some(6) if frame.len() >= at + 40 => (Outer::Ipv6, at + 40, frame[at + 6]),
                _ => return Err(bad(at)),
            };
            outer.push(kind, at);
            let v4 = kind == Outer::Ipv4;
            at = next;
            match protocol {
                ip_proto::IPV4_IN_IP | ip_proto::IPV6_IN_IP => continue,
                ip_proto::UDP if at + 8 <= inner => {
                    let checksum = !v4 || frame[at + 6..at + 8] != [0, 0];
                    outer.push(Outer::Udp { checksum }, at);
                }
                ip_proto::GRE if at + 4 <= inner => {
                    if frame[at] & GRE_CHECKSUM != 0 {
                        outer.push(Outer::Gre, at);
                    }
                }
                _ => return Err(bad(at)),
            }
            return Ok(outer);
        }
        if at != inner {
            return Err(bad(inner));
        }
        Ok(outer)
    }

    fn push(&mut self, kind: Outer, at: usize) {
        self.headers[self.count] = (Some(kind), at as u16);
        self.count += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Makes the outer headers of `segment` (number `index`, complete behind them) true for it,
    /// innermost first: a UDP or GRE checksum covers what follows it.
    pub fn fix(&self, segment: &mut [u8], index: u16) {
        let len = segment.len();
        for k in (0..self.count).rev() {
            let (Some(kind), at) = self.headers[k] else { continue };
            let at = usize::from(at);
            match kind {
                Outer::Ipv4 => {
                    let ip = &mut segment[at..];
                    ip[2..4].copy_from_slice(&((len - at) as u16).to_be_bytes());
                    let id = u16::from_be_bytes([ip[4], ip[5]]).wrapping_add(index);
                    ip[4..6].copy_from_slice(&id.to_be_bytes());
                    ip[10..12].fill(0);
                    let header = usize::from(ip[0] & 0xf) * 4;
                    let c = checksum(&ip[..header]);
                    ip[10..12].copy_from_slice(&c.to_be_bytes());
                }
                Outer::Ipv6 => segment[at + 4..at + 6].copy_from_slice(&((len - at - 40) as u16).to_be_bytes()),
                Outer::Udp { checksum } => {
                    segment[at + 4..at + 6].copy_from_slice(&((len - at) as u16).to_be_bytes());
                    segment[at + 6..at + 8].fill(0);
                    if checksum {
                        // The enclosing IP header is the entry before this one.
                        let ip = usize::from(self.headers[k - 1].1);
                        let addrs = if segment[ip] >> 4 == 4 { &segment[ip + 12..ip + 20] } else { &segment[ip + 8..ip + 40] };
                        let c = match !fold(sum(addrs) + u64::from(ip_proto::UDP) + (len - at) as u64 + sum(&segment[at..])) {
                            0 => 0xffff,
                            c => c,
                        };
                        segment[at + 6..at + 8].copy_from_slice(&c.to_be_bytes());
                    }
                }
                Outer::Gre => {
                    segment[at + 4..at + 6].fill(0);
                    let c = checksum(&segment[at..]);
                    segment[at + 4..at + 6].copy_from_slice(&c.to_be_bytes());
                }
            }
        }
    }
}
