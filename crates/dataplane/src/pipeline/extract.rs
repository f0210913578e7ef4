//! The first stage: each frame parsed into its flow key and header facts.

use super::Pipeline;
use crate::opaque;
use crate::packet::{Packet, PacketPool};
use pearl_wire::{detect_partial_checksum, extract_into, Field, FlowKey, L3Info};

impl Pipeline {
    /// Parses every frame; malformed ones are counted by reason and dropped.
    pub(super) fn extract_stage(&mut self, in_port: u16, batch: &mut Vec<Packet>, pool: &mut PacketPool) {
        let s = &mut self.scratch;
        if s.keys.len() < batch.len() {
            s.keys.resize(batch.len(), FlowKey::default());
            s.info.resize(batch.len(), L3Info::default());
        }
        // Compacts in place: good frames move down over the malformed ones, which go back
        // to the pool; a batch without malformed frames moves nothing.
        s.count = 0;
        let unmarked = self.unmarked_partial.get(in_port as usize).copied().unwrap_or(false);
        let opaque_key = self.opaque_keys.get(in_port as usize).copied().flatten();
        for i in 0..batch.len() {
            let p = &mut batch[i];
            p.in_port = in_port;
            match extract_into(p.data(), in_port, &mut s.keys[s.count], &mut s.info[s.count]) {
                Ok(()) => {
                    if let Some(k) = opaque_key {
                        s.keys[s.count].set(Field::Opaque, opaque::read(p.data(), k));
                    }
                    if unmarked && p.offload.is_plain() {
                        if let Some(o) = detect_partial_checksum(p.data(), &s.info[s.count], s.keys[s.count].ip_proto()) {
                            p.offload = o;
                        }
                    }
                    batch.swap(s.count, i);
                    s.count += 1;
                }
                Err(e) => self.counters.ports[in_port as usize].malformed[e.reason_index()].add(1),
            }
        }
        for p in batch.drain(s.count..) {
            pool.give(p);
        }
    }
}
