//! Source NAT into a VR's reserved ports (`nat:`), kept by the one worker that sees both
//! directions of its flows. RFC 4787 behaviour: endpoint-independent mapping (a private
//! address and port keep their outside port whatever they talk to) and endpoint-independent
//! filtering (anyone may answer to a mapped port, as full-cone NATs do, which keeps peer-to-peer
//! protocols working); UDP mappings last 5 minutes after the last packet either way (REQ-5),
//! TCP ones 2 h 4 min, 4 minutes once a FIN or RST was seen (RFC 5382). ICMP echo (RFC 5508):
//! the identifier is mapped into the reserved range like a port, for 60 s. What else leaves by
//! the outside interface from another address (other ICMP, other protocols, fragments) is
//! dropped and counted.

use pearl_control::NatConfig;
use std::collections::HashMap;

const UDP_TIMEOUT_S: u32 = 300;
const TCP_TIMEOUT_S: u32 = 7440;
const TCP_CLOSING_TIMEOUT_S: u32 = 240;
const ICMP_TIMEOUT_S: u32 = 60;
const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;
const ECHO_REPLY: u8 = 0;
const ECHO_REQUEST: u8 = 8;

#[derive(Clone, Copy)]
struct Mapping {
    ip: u32,
    port: u16,
    seen_s: u32,
    closing: bool,
}

/// One VR's mappings on one worker.
pub struct NatTable {
    pub config: NatConfig,
    /// The port (index) of the outside interface.
    pub port: u16,
    /// (protocol, private address, private port) → outside port.
    out: HashMap<(u8, u32, u16), u16>,
    /// `[tcp, udp, icmp echo][outside port or identifier - first]`.
    inbound: [Vec<Option<Mapping>>; 3],
    cursor: [usize; 3],
}

/// What translating a packet came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Translation {
    Done,
    /// Not NAT's business (not to a mapped port, or already from the outside address).
    Untouched,
    /// It cannot be translated: another protocol, a fragment, or no port free.
    Refused,
}

impl NatTable {
    pub fn new(config: NatConfig, port: u16) -> NatTable {
        let size = usize::from(config.last - config.first) + 1;
        NatTable {
            config,
            port,
            // Room for every port up front: inserting never reallocates on the packet path.
            out: HashMap::with_capacity(2 * size),
            inbound: [vec![None; size], vec![None; size], vec![None; size]],
            cursor: [0; 3],
        }
    }

    pub fn address(&self) -> u32 {
        u32::from(self.config.address)
    }

    /// Rewrites the source of an IPv4 packet leaving by the outside interface (`l3`: its IP
    /// header onwards; `partial`: its L4 checksum is left for the device to finish).
    pub fn outbound(&mut self, l3: &mut [u8], l4: Option<usize>, fragment: bool, partial: bool, now_s: u32) -> Translation {
        let src = be32(l3, 12);
        if src == self.address() {
            return Translation::Untouched;
        }
        let proto = l3[9];
        let (Some(l4), false, Some(k)) = (l4, fragment, kind(proto)) else { return Translation::Refused };
        if l3.len() < l4 + if proto == TCP { 20 } else { 8 } || (proto == ICMP && l3[l4] != ECHO_REQUEST) {
            return Translation::Refused;
        }
        let sport = be16(l3, l4 + id_at(proto, 0));
        let closing = proto == TCP && l3[l4 + 13] & 0x05 != 0;
        let ext = match self.out.get(&(proto, src, sport)).copied().filter(|&e| self.live(k, e, src, sport, now_s)) {
            Some(e) => e,
            None => match self.allocate(k, proto, src, sport, now_s) {
                Some(e) => e,
                None => return Translation::Refused,
            },
        };
        let slot = self.inbound[k][usize::from(ext - self.config.first)].as_mut().expect("a mapping for each outside port in use");
        slot.seen_s = now_s;
        slot.closing |= closing;
        rewrite(l3, l4, proto, 12, id_at(proto, 0), self.address(), ext, partial);
        Translation::Done
    }

    /// Rewrites the destination of an IPv4 packet arriving for the outside address back to the
    /// private host its port is mapped to.
    pub fn inbound(&mut self, l3: &mut [u8], l4: Option<usize>, fragment: bool, partial: bool, now_s: u32) -> Translation {
        let Some((k, slot, m)) = self.mapping_of(l3, l4, fragment, now_s) else { return Translation::Untouched };
        let (proto, l4) = (l3[9], l4.expect("a mapped packet has a transport header"));
        let closing = proto == TCP && l3.len() >= l4 + 14 && l3[l4 + 13] & 0x05 != 0;
        if let Some(live) = self.inbound[k][slot].as_mut() {
            live.seen_s = now_s;
            live.closing |= closing;
        }
        rewrite(l3, l4, proto, 16, id_at(proto, 2), m.ip, m.port, partial);
        Translation::Done
    }

    /// Whether an IPv4 packet arriving for the outside address answers a live mapping of this
    /// table: VRs sharing an address share its MAC-less traffic, and the mapping says whose it is.
    pub fn claims(&self, l3: &[u8], l4: Option<usize>, fragment: bool, now_s: u32) -> bool {
        self.mapping_of(l3, l4, fragment, now_s).is_some()
    }

    /// The live mapping an arriving packet answers: (kind, slot, mapping).
    fn mapping_of(&self, l3: &[u8], l4: Option<usize>, fragment: bool, now_s: u32) -> Option<(usize, usize, Mapping)> {
        let proto = l3[9];
        let (Some(l4), false, Some(k)) = (l4, fragment, kind(proto)) else { return None };
        if be32(l3, 16) != self.address() || l3.len() < l4 + 8 || (proto == ICMP && l3[l4] != ECHO_REPLY) {
            return None;
        }
        let dport = be16(l3, l4 + id_at(proto, 2));
        if !(self.config.first..=self.config.last).contains(&dport) {
            return None;
        }
        let slot = usize::from(dport - self.config.first);
        let m = self.inbound[k][slot].filter(|m| !expired(proto, m, now_s))?;
        Some((k, slot, m))
    }

    /// Mappings in use now.
    #[cfg(test)]
    fn active(&self, now_s: u32) -> usize {
        PROTOCOLS.iter().enumerate().map(|(k, &p)| self.inbound[k].iter().flatten().filter(|m| !expired(p, m, now_s)).count()).sum()
    }

    fn live(&self, k: usize, ext: u16, ip: u32, port: u16, now_s: u32) -> bool {
        let proto = PROTOCOLS[k];
        self.inbound[k][usize::from(ext - self.config.first)].is_some_and(|m| m.ip == ip && m.port == port && !expired(proto, &m, now_s))
    }

    /// The next outside port whose mapping is free or expired, taken for (ip, port).
    fn allocate(&mut self, k: usize, proto: u8, ip: u32, port: u16, now_s: u32) -> Option<u16> {
        let size = self.inbound[k].len();
        for step in 0..size {
            let i = (self.cursor[k] + step) % size;
            let free = match self.inbound[k][i] {
                None => true,
                Some(old) if expired(proto, &old, now_s) => {
                    self.out.remove(&(proto, old.ip, old.port));
                    true
                }
                Some(_) => false,
            };
            if free {
                self.inbound[k][i] = Some(Mapping { ip, port, seen_s: now_s, closing: false });
                self.cursor[k] = (i + 1) % size;
                let ext = self.config.first + i as u16;
                self.out.insert((proto, ip, port), ext);
                return Some(ext);
            }
        }
        None
    }
}

/// The protocols translated, in the order of `NatTable::inbound`.
const PROTOCOLS: [u8; 3] = [TCP, UDP, ICMP];

fn kind(proto: u8) -> Option<usize> {
    PROTOCOLS.iter().position(|&p| p == proto)
}

/// Where the port (`port_at`: 0 source, 2 destination) is in the transport header; for ICMP
/// echo, the identifier, at 4 both ways.
fn id_at(proto: u8, port_at: usize) -> usize {
    if proto == ICMP {
        4
    } else {
        port_at
    }
}

fn expired(proto: u8, m: &Mapping, now_s: u32) -> bool {
    let timeout = match (proto, m.closing) {
        (TCP, false) => TCP_TIMEOUT_S,
        (TCP, true) => TCP_CLOSING_TIMEOUT_S,
        (ICMP, _) => ICMP_TIMEOUT_S,
        _ => UDP_TIMEOUT_S,
    };
    now_s.saturating_sub(m.seen_s) > timeout
}

/// Puts `ip` at IP header offset `ip_at` (12 source, 16 destination) and `port` at L4 offset
/// `port_at`, with the IP header checksum and the L4 checksum adjusted (RFC 1624). A partial
/// L4 checksum holds the pseudo-header's sum only: the address changes it, the port (summed by
/// the device later) does not. A UDP checksum of 0 means none and stays. ICMP's checksum covers
/// no pseudo-header: only the identifier changes it.
#[expect(clippy::too_many_arguments, reason = "one rewrite of a frame: each argument a place in it or the value that goes there")]
fn rewrite(l3: &mut [u8], l4: usize, proto: u8, ip_at: usize, port_at: usize, ip: u32, port: u16, partial: bool) {
    let old_ip = be32(l3, ip_at);
    let old_port = be16(l3, l4 + port_at);
    let ip_words = [(old_ip >> 16) as u16, old_ip as u16, (ip >> 16) as u16, ip as u16];
    let header = adjust(be16(l3, 10), &ip_words[..2], &ip_words[2..]);
    put16(l3, 10, header);
    let csum_at = l4
        + match proto {
            TCP => 16,
            UDP => 6,
            _ => 2,
        };
    let field = be16(l3, csum_at);
    if !(proto == UDP && field == 0 && !partial) {
        let new = if partial {
            !adjust(!field, &ip_words[..2], &ip_words[2..])
        } else {
            let with_ip = if proto == ICMP { field } else { adjust(field, &ip_words[..2], &ip_words[2..]) };
            let v = adjust(with_ip, &[old_port], &[port]);
            if proto == UDP && v == 0 {
                0xffff
            } else {
                v
            }
        };
        put16(l3, csum_at, new);
    }
    l3[ip_at..ip_at + 4].copy_from_slice(&ip.to_be_bytes());
    put16(l3, l4 + port_at, port);
}

/// `pearl_wire::checksum::update` (RFC 1624 eqn. 3) for each 16-bit word of `old` replaced by
/// the word of `new` at the same place.
fn adjust(checksum: u16, old: &[u16], new: &[u16]) -> u16 {
    old.iter().zip(new).fold(checksum, |c, (&o, &n)| pearl_wire::checksum::update(c, o, n))
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::Ipv4Addr;

    const OUTSIDE: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);

    fn table() -> NatTable {
        NatTable::new(NatConfig { address: OUTSIDE, first: 20000, last: 20002, interface: 1 }, 1)
    }

    /// An IPv4 UDP or TCP packet with valid checksums.
    fn packet(proto: u8, src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Vec<u8> {
        let l4_len = if proto == TCP { 20 } else { 8 } + 4;
        let mut p = vec![0u8; 20 + l4_len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&((20 + l4_len) as u16).to_be_bytes());
        p[8] = 64;
        p[9] = proto;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        let h = pearl_wire::checksum::checksum(&p[..20]);
        put16(&mut p, 10, h);
        put16(&mut p, 20, sport);
        put16(&mut p, 22, dport);
        if proto == TCP {
            p[32] = 5 << 4;
        } else {
            put16(&mut p, 24, 12);
        }
        p[l4_len + 16..].copy_from_slice(b"data");
        let c = l4_checksum(&p);
        put16(&mut p, 20 + if proto == TCP { 16 } else { 6 }, c);
        p
    }

    fn l4_checksum(p: &[u8]) -> u16 {
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&p[12..20]);
        pseudo.extend_from_slice(&[0, p[9]]);
        pseudo.extend_from_slice(&((p.len() - 20) as u16).to_be_bytes());
        let csum_at = 20 + if p[9] == TCP { 16 } else { 6 };
        let mut l4 = p[20..].to_vec();
        l4[csum_at - 20..csum_at - 18].fill(0);
        pseudo.extend_from_slice(&l4);
        pearl_wire::checksum::checksum(&pseudo)
    }

    fn checksums_hold(p: &[u8]) {
        assert_eq!(pearl_wire::checksum::checksum(&p[..20]), 0, "IP header checksum");
        let csum_at = 20 + if p[9] == TCP { 16 } else { 6 };
        assert_eq!(be16(p, csum_at), l4_checksum(p), "L4 checksum against a full recomputation");
    }

    #[test]
    fn a_mapping_is_endpoint_independent_and_translates_back() {
        let mut t = table();
        for proto in [UDP, TCP] {
            let mut a = packet(proto, [10, 0, 0, 2], 5000, [198, 51, 100, 9], 53);
            assert_eq!(t.outbound(&mut a, Some(20), false, false, 0), Translation::Done);
            checksums_hold(&a);
            assert_eq!(&a[12..16], &OUTSIDE.octets());
            let ext = be16(&a, 20);
            assert!((20000..=20002).contains(&ext));
            // Another destination, the same private endpoint: the same outside port (EIM).
            let mut b = packet(proto, [10, 0, 0, 2], 5000, [192, 0, 2, 7], 80);
            assert_eq!(t.outbound(&mut b, Some(20), false, false, 1), Translation::Done);
            assert_eq!(be16(&b, 20), ext);
            // An answer from anyone to that port goes back to the private endpoint.
            let mut back = packet(proto, [192, 0, 2, 99], 4444, OUTSIDE.octets(), ext);
            assert_eq!(t.inbound(&mut back, Some(20), false, false, 2), Translation::Done);
            checksums_hold(&back);
            assert_eq!((&back[16..20], be16(&back, 22)), (&[10u8, 0, 0, 2][..], 5000));
        }
    }

    #[test]
    fn ports_run_out_then_come_back_when_mappings_expire() {
        let mut t = table();
        for (i, sport) in [1000u16, 1001, 1002].iter().enumerate() {
            let mut p = packet(UDP, [10, 0, 0, 2], *sport, [198, 51, 100, 9], 53);
            assert_eq!(t.outbound(&mut p, Some(20), false, false, i as u32), Translation::Done);
        }
        let mut p = packet(UDP, [10, 0, 0, 3], 1000, [198, 51, 100, 9], 53);
        assert_eq!(t.outbound(&mut p, Some(20), false, false, 10), Translation::Refused, "three ports, three mappings");
        assert_eq!(t.active(10), 3);
        assert_eq!(t.outbound(&mut p, Some(20), false, false, 10 + UDP_TIMEOUT_S + 3), Translation::Done);
        assert_eq!(t.active(10 + UDP_TIMEOUT_S + 3), 1);
        // The expired mapping's answers no longer reach its old owner.
        let mut stale = packet(UDP, [198, 51, 100, 9], 53, OUTSIDE.octets(), 20001);
        assert_eq!(t.inbound(&mut stale, Some(20), false, false, 10 + UDP_TIMEOUT_S + 3), Translation::Untouched);
    }

    #[test]
    fn a_closed_tcp_mapping_expires_sooner_and_others_are_refused_or_left() {
        let mut t = table();
        let mut fin = packet(TCP, [10, 0, 0, 2], 5000, [198, 51, 100, 9], 80);
        fin[33] = 0x11;
        assert_eq!(t.outbound(&mut fin, Some(20), false, false, 0), Translation::Done);
        assert_eq!(t.active(TCP_CLOSING_TIMEOUT_S), 1);
        assert_eq!(t.active(TCP_CLOSING_TIMEOUT_S + 1), 0);
        let mut gre = packet(UDP, [10, 0, 0, 2], 5000, [198, 51, 100, 9], 80);
        gre[9] = 47;
        assert_eq!(t.outbound(&mut gre, Some(20), false, false, 0), Translation::Refused);
        let mut unreachable = icmp_echo(3, [10, 0, 0, 2], [198, 51, 100, 9], 7);
        assert_eq!(t.outbound(&mut unreachable, Some(20), false, false, 0), Translation::Refused, "only echo is mapped");
        let mut frag = packet(UDP, [10, 0, 0, 2], 5000, [198, 51, 100, 9], 80);
        assert_eq!(t.outbound(&mut frag, Some(20), true, false, 0), Translation::Refused);
        let mut own = packet(UDP, OUTSIDE.octets(), 179, [198, 51, 100, 9], 179);
        assert_eq!(t.outbound(&mut own, Some(20), false, false, 0), Translation::Untouched, "the VR's own traffic");
        let mut elsewhere = packet(UDP, [198, 51, 100, 9], 53, OUTSIDE.octets(), 30000);
        assert_eq!(t.inbound(&mut elsewhere, Some(20), false, false, 0), Translation::Untouched);
    }

    /// An ICMP echo request (type 8) or reply (0), or another type, with valid checksums.
    fn icmp_echo(kind: u8, src: [u8; 4], dst: [u8; 4], id: u16) -> Vec<u8> {
        let mut p = vec![0u8; 20 + 8 + 4];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&32u16.to_be_bytes());
        p[8] = 64;
        p[9] = ICMP;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        let h = pearl_wire::checksum::checksum(&p[..20]);
        put16(&mut p, 10, h);
        p[20] = kind;
        put16(&mut p, 24, id);
        put16(&mut p, 26, 1);
        p[28..].copy_from_slice(b"ping");
        let c = pearl_wire::checksum::checksum(&p[20..]);
        put16(&mut p, 22, c);
        p
    }

    #[test]
    fn an_echo_identifier_is_mapped_like_a_port() {
        let mut t = table();
        let mut request = icmp_echo(ECHO_REQUEST, [10, 0, 0, 2], [198, 51, 100, 9], 7);
        assert_eq!(t.outbound(&mut request, Some(20), false, false, 0), Translation::Done);
        assert_eq!(pearl_wire::checksum::checksum(&request[..20]), 0);
        assert_eq!(pearl_wire::checksum::checksum(&request[20..]), 0, "ICMP checksum");
        let id = be16(&request, 24);
        assert!((20000..=20002).contains(&id) && request[12..16] == OUTSIDE.octets());
        let mut reply = icmp_echo(ECHO_REPLY, [198, 51, 100, 9], OUTSIDE.octets(), id);
        assert!(t.claims(&reply, Some(20), false, 1));
        assert_eq!(t.inbound(&mut reply, Some(20), false, false, 1), Translation::Done);
        assert_eq!((&reply[16..20], be16(&reply, 24)), (&[10u8, 0, 0, 2][..], 7));
        assert_eq!(pearl_wire::checksum::checksum(&reply[20..]), 0);
        let late = icmp_echo(ECHO_REPLY, [198, 51, 100, 9], OUTSIDE.octets(), id);
        assert!(!t.claims(&late, Some(20), false, 2 + ICMP_TIMEOUT_S), "60 s after, the mapping is gone");
    }

    #[test]
    fn a_partial_checksum_changes_with_the_address_only() {
        let mut t = table();
        let mut p = packet(UDP, [10, 0, 0, 2], 5000, [198, 51, 100, 9], 53);
        // As a sender with checksum offload leaves it: the pseudo-header's sum, not complemented.
        let pseudo = |p: &[u8]| {
            let mut s = 0u32;
            for at in [12, 14, 16, 18] {
                s += u32::from(be16(p, at));
            }
            s += u32::from(p[9]) + (p.len() as u32 - 20);
            while s > 0xffff {
                s = (s & 0xffff) + (s >> 16);
            }
            s as u16
        };
        let before = pseudo(&p);
        put16(&mut p, 26, before);
        assert_eq!(t.outbound(&mut p, Some(20), false, true, 0), Translation::Done);
        assert_eq!(be16(&p, 26), pseudo(&p), "still the pseudo-header's sum, of the new address");
    }
}
