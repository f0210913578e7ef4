//! `pearl-bench pipeline --code i3`: every VR an I3 node owning half of the ring, with 16
//! fingers and `--triggers N` triggers whose targets, like the fingers' addresses, are
//! destinations of the route table. Half the frames carry the identifier of one of its triggers
//! (delivered by trigger), half an identifier it does not own (forwarded by Chord): the fast
//! path's two jobs, alternating.

use pearl_plugin::{PluginTables, I3_PORT};
use pearl_wire::{Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr};
use rand::rngs::SmallRng;
use rand::Rng;
use std::net::Ipv4Addr;

/// This node's ring position: it owns (0, 2^127].
const ME: u128 = 1 << 127;
const FINGERS: u32 = 16;

pub(crate) struct Overlay {
    triggers: Vec<([u8; 32], u32)>,
    fingers: Vec<(u128, u32)>,
}

impl Overlay {
    /// `triggers` triggers and the fingers, their addresses drawn from `destinations`.
    pub(crate) fn new(destinations: &[u32], triggers: usize, rng: &mut SmallRng) -> Overlay {
        let pick = |rng: &mut SmallRng| destinations[rng.gen_range(0..destinations.len())];
        let fingers = (0..FINGERS).map(|k| (ME.wrapping_add(1u128 << (126 - k)), pick(rng))).collect();
        let triggers = (0..triggers.max(1))
            .map(|_| {
                let mut id = [0u8; 32];
                rng.fill(&mut id[..]);
                // In (0, 2^127]: this node's.
                id[0] &= 0x7f;
                (id, pick(rng))
            })
            .collect();
        Overlay { triggers, fingers }
    }

    /// Writes the ring, the fingers and the triggers into an i3 VR's tables, as its control
    /// process would.
    pub(crate) fn fill(&self, tables: &PluginTables) -> Result<(), String> {
        let err = |e: pearl_plugin::TableError| e.to_string();
        tables.set("ring", b"self", &[ME.to_be_bytes(), 0u128.to_be_bytes()].concat()).map_err(err)?;
        for (position, addr) in &self.fingers {
            tables.set("fingers", &position.to_be_bytes(), &addr.to_be_bytes()).map_err(err)?;
        }
        for (id, addr) in &self.triggers {
            tables.set("triggers", id, &[&addr.to_be_bytes()[..], &7000u16.to_be_bytes()].concat()).map_err(err)?;
        }
        Ok(())
    }

    /// `n` frames of `size` bytes (at least 78) from `src` to the node at `node`, alternately
    /// to a trigger's identifier and to one in the other half of the ring.
    pub(crate) fn frames(
        &self,
        dst_mac: [u8; 6],
        src: Ipv4Addr,
        node: Ipv4Addr,
        n: usize,
        size: usize,
        rng: &mut SmallRng,
    ) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut id = [0u8; 32];
                if i % 2 == 0 {
                    id = self.triggers[rng.gen_range(0..self.triggers.len())].0;
                } else {
                    rng.fill(&mut id[..]);
                    id[0] |= 0x80;
                }
                let mut payload = vec![1u8, 0, 1, 0];
                payload.extend(id);
                payload.resize(size.max(78) - 14 - 20 - 8, 0);
                let mut f = vec![0u8; 14 + 20 + 8 + payload.len()];
                f[..6].copy_from_slice(&dst_mac);
                f[6..12].copy_from_slice(&[2, 0xee, 0, 0, 0, 1]);
                f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
                let udp = UdpRepr { src_port: 1024, dst_port: I3_PORT, payload: &payload };
                Ipv4Repr::new(src, node, 17, udp.buffer_len()).emit(&mut Ipv4Packet::new_unchecked(&mut f[14..]));
                udp.emit(&mut UdpPacket::new_unchecked(&mut f[34..]), &pearl_wire::PseudoHeader::V4 { src, dst: node });
                f
            })
            .collect()
    }
}
