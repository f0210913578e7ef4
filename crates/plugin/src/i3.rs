//! SPP's I3 code option (`code: i3`): the VR is a node of an I3 overlay (the Internet
//! Indirection Infrastructure), a member of a Chord ring over the first 128 bits of I3's 256-bit
//! identifiers. UDP datagrams to one of the VR's addresses on port `I3_PORT` carry an I3
//! header (version 1, flags, the depth of the identifier stack, a reserved byte, then 32 bytes per
//! identifier, then the payload); the fast path
//! - forwards a packet whose identifier the node does not own to the closest preceding finger
//!   of its Chord finger table (or its successor), re-addressed to that node;
//! - delivers one whose identifier it owns to the target of the one trigger that matches it
//!   best: the longest common prefix, of at least 128 bits (I3's rule);
//! - hands the rest to the VR's kernel, where its control process is the slow path: trigger
//!   insertions (flag `CONTROL`), identifier stacks, a trigger whose target is an identifier,
//!   several triggers matching equally (multicast), a node not yet in a ring.
//!
//! Everything else the VR receives is routed by the IP router. The ring, the fingers and the
//! triggers are the VR's tables (`/v1/vrs/{name}/tables`), written by its control process:
//! `ring` (key `self`: the node's ring position and its predecessor's, 16 bytes each),
//! `fingers` (a ring position → the IPv4 address of that node), `triggers` (an identifier →
//! the targets: one or more IPv4 address and UDP port pairs of 6 bytes, or another identifier).

use crate::PluginTables;
use pearl_control::VrConfig;
use pearl_program::reasons::{Exception, VrDrop};
use pearl_program::{Decision, IpRouter, Run, VrProgram};
use pearl_tables::nexthop::Adjacency;
use pearl_wire::{EthernetFrame, Field, Ipv4Packet, L3Kind, Offload, UdpPacket};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;

/// The UDP port I3 nodes listen on.
pub const I3_PORT: u16 = 5610;
pub const I3_VERSION: u8 = 1;
/// A control message: a trigger to insert (its identifier, then the target, in the payload).
pub const CONTROL: u8 = 1;
const HEADER_LEN: usize = 4;
const ID_LEN: usize = 32;
/// The least prefix a trigger must share with a packet's identifier, in bits.
pub const MIN_MATCH_BITS: u32 = 128;

/// The tables and their most entries.
pub const TABLES: [(&str, usize); 3] = [("fingers", 256), ("ring", 1), ("triggers", 65536)];

pub struct I3Program {
    ip: IpRouter,
    tables: PluginTables,
    /// The VR's IPv4 addresses.
    addresses: Vec<u32>,
    /// `[port]`: the VR's IPv4 address there (what it sends from), 0 where it has none.
    source_by_port: Vec<u32>,
    overlay: Mutex<Overlay>,
}

/// The tables as the fast path reads them, rebuilt when they change.
#[derive(Default)]
struct Overlay {
    /// A run's I3 packets going on: (index, address, UDP port); their addresses; the
    /// lookups' answers. Kept to allocate nothing per batch.
    going: Vec<(usize, u32, u16)>,
    addrs: Vec<u32>,
    hops: Vec<u32>,
    adjacencies: Vec<Option<Adjacency>>,
    generation: Option<u64>,
    /// (this node's ring position, its predecessor's).
    ring: Option<(u128, u128)>,
    fingers: Vec<(u128, u32)>,
    /// By the first 128 bits of their identifier.
    triggers: HashMap<u128, Vec<([u8; ID_LEN], Target)>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Host {
        addr: u32,
        port: u16,
    },
    /// Several hosts, or another identifier: the slow path's.
    Slow,
}

impl I3Program {
    pub fn new(vr: &VrConfig, previous: Option<&PluginTables>) -> I3Program {
        let declared: Vec<(String, usize)> = TABLES.iter().map(|&(n, m)| (n.to_string(), m)).collect();
        let v4 = |a: &IpAddr| match a {
            IpAddr::V4(a) => Some(u32::from(*a)),
            IpAddr::V6(_) => None,
        };
        let addresses = vr.interfaces.iter().flat_map(|i| i.addresses.iter().filter_map(|p| v4(&p.addr))).collect();
        let mut source_by_port = Vec::new();
        for i in &vr.interfaces {
            if source_by_port.len() <= i.port {
                source_by_port.resize(i.port + 1, 0);
            }
            source_by_port[i.port] = i.addresses.iter().find_map(|p| v4(&p.addr)).unwrap_or(0);
        }
        I3Program {
            ip: IpRouter { v4: true, v6: true, leaks: None },
            tables: PluginTables::new(&declared, previous),
            addresses,
            source_by_port,
            overlay: Mutex::new(Overlay::default()),
        }
    }

    pub fn tables(&self) -> PluginTables {
        self.tables.clone()
    }

    /// Whether packet `i` is an I3 packet for this node.
    fn is_i3(&self, run: &Run<'_>, i: usize) -> bool {
        let (key, x) = (&run.keys[i], &run.info[i]);
        x.kind == L3Kind::Ipv4
            && !x.fragment
            && !x.ipv4_options
            && x.l4_offset.is_some()
            && key.get(Field::IpProto) == 17
            && key.get(Field::L4Dst) == u128::from(I3_PORT)
            && !run.packets[i].offload.is_gso()
            && self.addresses.contains(&(key.get(Field::IpDst) as u32))
    }

    /// Where I3 packet `i` goes next (an address and UDP port), or what becomes of it here.
    fn next(&self, run: &Run<'_>, i: usize, overlay: &Overlay) -> Result<(u32, u16), Decision> {
        let l4 = run.info[i].l4_offset.expect("is_i3");
        let data = run.packets[i].data();
        let Some(header) = data.get(l4 + 8..l4 + 8 + HEADER_LEN + ID_LEN) else { return Err(Decision::Drop(VrDrop::Program)) };
        if header[0] != I3_VERSION || header[2] == 0 {
            return Err(Decision::Drop(VrDrop::Program));
        }
        if header[2] != 1 {
            return Err(Decision::Slow(Exception::Program));
        }
        let id: [u8; ID_LEN] = header[HEADER_LEN..].try_into().expect("32 bytes");
        let position = u128::from_be_bytes(id[..16].try_into().expect("16 bytes"));
        let Some((me, predecessor)) = overlay.ring else { return Err(Decision::Slow(Exception::Program)) };
        if !owns(predecessor, me, position) {
            return overlay.next_node(me, position).map(|addr| (addr, I3_PORT)).ok_or(Decision::Slow(Exception::Program));
        }
        if header[1] & CONTROL != 0 {
            return Err(Decision::Slow(Exception::Program));
        }
        match overlay.trigger_for(&id) {
            Some(Target::Host { addr, port }) => Ok((addr, port)),
            Some(Target::Slow) => Err(Decision::Slow(Exception::Program)),
            None => Err(Decision::Drop(VrDrop::Program)),
        }
    }

    /// Sends packet `i` on to `addr:port` by `hop`.
    fn send(&self, run: &mut Run<'_>, i: usize, (addr, port): (u32, u16), hop: Option<Adjacency>) -> Decision {
        match hop {
            Some(Adjacency::Forward { port: out, src, dst }) => {
                let from = self.source_by_port.get(usize::from(out)).copied().filter(|&a| a != 0);
                let (l3, l4) = (run.info[i].l3_offset, run.info[i].l4_offset.expect("is_i3"));
                let p = &mut run.packets[i];
                readdress(p.data_mut(), l3, l4, from, addr, port, (src, dst));
                p.offload = Offload::default();
                Decision::Send { port: out }
            }
            // Not resolved yet, or no route: the VR's kernel (and its control process) sees it.
            _ => Decision::Slow(Exception::Program),
        }
    }
}

/// Sends the datagram anew: from `from` (or as it was addressed) to `addr:port`, TTL 64, the
/// header checksum recomputed, no UDP checksum (IPv4 allows it), the next hop's MACs.
fn readdress(f: &mut [u8], l3: usize, l4: usize, from: Option<u32>, addr: u32, port: u16, (src, dst): ([u8; 6], [u8; 6])) {
    let mut eth = EthernetFrame::new_unchecked(&mut *f);
    eth.set_dst_addr(dst);
    eth.set_src_addr(src);
    let mut ip = Ipv4Packet::new_unchecked(&mut f[l3..l4]);
    if let Some(from) = from {
        ip.set_src_addr(Ipv4Addr::from(from));
    } else {
        // Answered from the address it was sent to.
        ip.set_src_addr(ip.dst_addr());
    }
    ip.set_dst_addr(Ipv4Addr::from(addr));
    ip.set_ttl(64);
    ip.fill_checksum();
    let mut udp = UdpPacket::new_unchecked(&mut f[l4..]);
    udp.set_dst_port(port);
    udp.set_checksum(0);
}

/// Whether a node at `me` whose predecessor is at `predecessor` owns `position`: Chord's
/// `(predecessor, me]`, all of the ring for a node alone.
fn owns(predecessor: u128, me: u128, position: u128) -> bool {
    predecessor == me || (position.wrapping_sub(predecessor) != 0 && position.wrapping_sub(predecessor) <= me.wrapping_sub(predecessor))
}

impl Overlay {
    /// The finger closest before `position` going round the ring from `me` (Chord's
    /// `closest_preceding_finger`), or else the successor: the first finger after `me`.
    fn next_node(&self, me: u128, position: u128) -> Option<u32> {
        let from_me = |x: u128| x.wrapping_sub(me);
        let target = from_me(position);
        let preceding = self.fingers.iter().filter(|f| from_me(f.0) != 0 && from_me(f.0) < target).max_by_key(|f| from_me(f.0));
        preceding.or_else(|| self.fingers.iter().filter(|f| from_me(f.0) != 0).min_by_key(|f| from_me(f.0))).map(|f| f.1)
    }

    /// The target of the trigger sharing the longest prefix (at least 128 bits) with `id`;
    /// `Slow` when several share it equally.
    fn trigger_for(&self, id: &[u8; ID_LEN]) -> Option<Target> {
        let bucket = self.triggers.get(&u128::from_be_bytes(id[..16].try_into().expect("16 bytes")))?;
        let common = |t: &[u8; ID_LEN]| {
            let (a, b) = (u128::from_be_bytes(t[16..].try_into().expect("16")), u128::from_be_bytes(id[16..].try_into().expect("16")));
            MIN_MATCH_BITS + (a ^ b).leading_zeros()
        };
        let best = bucket.iter().map(|(t, _)| common(t)).max()?;
        let mut matching = bucket.iter().filter(|(t, _)| common(t) == best);
        let first = matching.next()?.1;
        Some(if matching.next().is_some() { Target::Slow } else { first })
    }

    fn refresh(&mut self, tables: &PluginTables) {
        let generation = tables.generation();
        if self.generation == Some(generation) {
            return;
        }
        self.generation = Some(generation);
        self.ring = tables.entries("ring").ok().and_then(|e| {
            let v = &e.iter().find(|(k, _)| k == b"self")?.1;
            Some((u128::from_be_bytes(v.get(..16)?.try_into().ok()?), u128::from_be_bytes(v.get(16..32)?.try_into().ok()?)))
        });
        self.fingers = tables
            .entries("fingers")
            .unwrap_or_default()
            .iter()
            .filter_map(|(k, v)| Some((u128::from_be_bytes(k[..].try_into().ok()?), u32::from_be_bytes(v[..].try_into().ok()?))))
            .collect();
        self.triggers.clear();
        for (k, v) in tables.entries("triggers").unwrap_or_default() {
            let Ok(id) = <[u8; ID_LEN]>::try_from(&k[..]) else { continue };
            let target = match v.len() {
                6 => Target::Host { addr: u32::from_be_bytes(v[..4].try_into().expect("4")), port: u16::from_be_bytes([v[4], v[5]]) },
                _ => Target::Slow,
            };
            self.triggers.entry(u128::from_be_bytes(id[..16].try_into().expect("16"))).or_default().push((id, target));
        }
    }
}

impl VrProgram for I3Program {
    fn run(&self, run: &mut Run<'_>) {
        let mut guard = self.overlay.lock().unwrap_or_else(|p| p.into_inner());
        let overlay = &mut *guard;
        overlay.refresh(&self.tables);
        overlay.going.clear();
        // Runs of what is not I3 go to the IP router whole.
        let mut start = 0;
        for i in 0..run.len() {
            if self.is_i3(run, i) {
                if start < i {
                    self.ip.run(&mut run.part(start..i));
                }
                match self.next(run, i, overlay) {
                    Ok((addr, port)) => overlay.going.push((i, addr, port)),
                    Err(d) => run.decide(i, d),
                }
                start = i + 1;
            }
        }
        if start < run.len() {
            let end = run.len();
            self.ip.run(&mut run.part(start..end));
        }
        // The next hops of all that goes on, looked up together (their table accesses overlap).
        overlay.addrs.clear();
        overlay.addrs.extend(overlay.going.iter().map(|g| g.1));
        run.fib_v4_batch(&overlay.addrs, &mut overlay.hops, &mut overlay.adjacencies);
        for (k, &(i, addr, port)) in overlay.going.iter().enumerate() {
            let d = self.send(run, i, (addr, port), overlay.adjacencies[k]);
            run.decide(i, d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn id(prefix: u128, rest: u128) -> [u8; ID_LEN] {
        [prefix.to_be_bytes(), rest.to_be_bytes()].concat().try_into().unwrap()
    }

    #[test]
    fn a_node_owns_the_arc_from_its_predecessor_to_itself() {
        assert!(owns(10, 20, 15) && owns(10, 20, 20) && !owns(10, 20, 10) && !owns(10, 20, 25));
        assert!(owns(u128::MAX - 5, 3, 1) && owns(u128::MAX - 5, 3, u128::MAX), "across zero");
        assert!(owns(7, 7, 123), "alone in the ring");
    }

    #[test]
    fn triggers_match_by_the_longest_prefix_of_at_least_128_bits() {
        let mut o = Overlay::default();
        let host = |a: u32| Target::Host { addr: a, port: 7000 };
        o.triggers.insert(1, vec![(id(1, 0xff00 << 112), host(1)), (id(1, 0xf000 << 112), host(2))]);
        assert_eq!(o.trigger_for(&id(1, 0xff01 << 112)), Some(host(1)), "136 bits in common beat 132");
        assert_eq!(o.trigger_for(&id(1, 0xf100 << 112)), Some(host(2)));
        assert_eq!(o.trigger_for(&id(2, 0xff00 << 112)), None, "fewer than 128 bits in common");
        o.triggers.get_mut(&1).unwrap().push((id(1, 0xff00 << 112), host(3)));
        assert_eq!(o.trigger_for(&id(1, 0xff00 << 112)), Some(Target::Slow), "two triggers match equally: multicast");
    }

    proptest! {
        /// Greedy Chord routing reaches the owner: from any node, following `next_node` with
        /// full finger tables ends at the node that owns the position, in at most log2(N)+1 hops.
        #[test]
        fn chord_forwarding_reaches_the_owner(mut ring in proptest::collection::btree_set(any::<u128>(), 1..24), position in any::<u128>(), start in any::<usize>()) {
            let nodes: Vec<u128> = std::mem::take(&mut ring).into_iter().collect();
            let successor = |x: u128| *nodes.iter().find(|&&n| n >= x).unwrap_or(&nodes[0]);
            let overlay_of = |me: u128| Overlay {
                fingers: (0..128).map(|k| successor(me.wrapping_add(1u128 << k))).filter(|&f| f != me).map(|f| (f, f as u32)).collect(),
                ..Overlay::default()
            };
            let owner = successor(position);
            let mut at = nodes[start % nodes.len()];
            for _ in 0..=nodes.len() {
                let i = nodes.iter().position(|&n| n == at).unwrap();
                let predecessor = nodes[(i + nodes.len() - 1) % nodes.len()];
                if owns(predecessor, at, position) {
                    break;
                }
                let next = overlay_of(at).next_node(at, position).unwrap();
                at = *nodes.iter().find(|&&n| n as u32 == next).unwrap();
            }
            prop_assert_eq!(at, owner);
        }
    }
}
