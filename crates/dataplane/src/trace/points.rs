//! The trace's entry points, one per stage, each called once per batch while a trace is armed
//! (with `note`, the per-packet one, from the action stage's exits). None is inlined: the
//! pipeline's functions stay the size they are without a trace.

use super::record::{Outcome, Record, Traced, Verdict};
use super::{Mark, Trace};
use crate::packet::Packet;
use crate::program::Decision;
use pearl_wire::{extract_into, FlowKey, L3Info};
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

impl Trace {
    /// A batch received on `in_port`, before extraction: each frame's bytes and, if malformed,
    /// why (the extract stage drops those without a word).
    #[inline(never)]
    pub fn rx(&mut self, in_port: u16, batch: &[Packet]) {
        self.marks.clear();
        if self.left.load(Ordering::Relaxed) == 0 || self.spec.port.is_some_and(|p| p != in_port) {
            return;
        }
        self.batch_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let (mut key, mut info) = (FlowKey::default(), L3Info::default());
        for p in batch.iter().take(self.marks.capacity()) {
            let malformed = extract_into(p.data(), in_port, &mut key, &mut info).err().map(|e| e.reason());
            let record = Record {
                time_ns: self.batch_ns,
                worker: self.worker,
                in_port,
                len: p.len() as u32,
                malformed,
                key: None,
                verdict: None,
                program: None,
                routed: None,
                offloaded: false,
                outcome: malformed.map(|_| Outcome::Malformed),
                tx: None,
            };
            self.marks.push(Mark { buffer: p.buffer_id(), traced: Traced::new(record, p.data()), taken: false });
        }
    }

    /// After classification (`batch[i]`'s key and verdict at `i`): the packets the trace takes —
    /// the VR's, matching the filter, while tickets last; frames no VR claimed or that were
    /// malformed count as the VR's when it has an interface on the port (`vr_on_port`).
    #[inline(never)]
    pub fn classified(&mut self, batch: &[Packet], keys: &[FlowKey], verdicts: &[Option<pearl_classifier::Verdict>], vr_on_port: bool) {
        let spec = self.spec;
        let matches = |k: &FlowKey| spec.filter.is_none_or(|(value, mask)| k.matches(&value, &mask));
        for m in self.marks.iter_mut() {
            let r = &mut m.traced.record;
            let wanted = match batch.iter().position(|p| p.buffer_id() == m.buffer) {
                Some(i) => {
                    let key = r.key.insert(keys[i]);
                    match verdicts[i] {
                        Some(v) => {
                            r.verdict = Some(Verdict { vr: v.vr.0, rule: v.rule.map(|x| x.index()), queue: v.action });
                            v.vr.0 == spec.vr && matches(key)
                        }
                        None => {
                            r.outcome = Some(Outcome::Unclaimed { multicast: key.eth_dst()[0] & 1 == 1 });
                            vr_on_port && matches(key)
                        }
                    }
                }
                None => vr_on_port && spec.filter.is_none(),
            };
            m.taken = wanted && self.left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok();
        }
        self.marks.retain(|m| m.taken);
    }

    /// After the program stage: what each packet's VR program decided.
    #[inline(never)]
    pub fn decided(&mut self, batch: &[Packet], decisions: &[Decision]) {
        for m in self.marks.iter_mut() {
            if let Some(i) = batch.iter().position(|p| p.buffer_id() == m.buffer) {
                m.traced.record.program = Some(decisions[i]);
            }
        }
    }

    /// After the lookup and source stages: each decision as the action stage will carry it
    /// out, and the VR whose tables routed it.
    #[inline(never)]
    pub fn routed(&mut self, batch: &[Packet], decisions: &[Decision], tables: &[u16]) {
        for m in self.marks.iter_mut() {
            if let Some(i) = batch.iter().position(|p| p.buffer_id() == m.buffer) {
                m.traced.record.routed = Some((decisions[i], tables[i]));
            }
        }
    }

    /// Where the packet in `buffer` ended (the last word wins: a queue refusing a packet comes
    /// after its handing to the queue).
    #[inline]
    pub fn note(&mut self, buffer: usize, outcome: Outcome) {
        if let Some(m) = self.marks.iter_mut().find(|m| m.buffer == buffer) {
            m.traced.record.outcome = Some(outcome);
        }
    }

    /// The packet in `buffer` was offered to the kernel's flow offload.
    pub fn offloaded(&mut self, buffer: usize) {
        if let Some(m) = self.marks.iter_mut().find(|m| m.buffer == buffer) {
            m.traced.record.offloaded = true;
        }
    }

    /// Hands the batch's records to the reader, but for those queued out of a port, which
    /// wait for their transmit while there is room. The channel holds the whole trace, so a
    /// send fails only once the reader has gone.
    #[inline(never)]
    pub fn flush(&mut self) {
        self.give_up_waiting();
        for m in self.marks.drain(..) {
            if matches!(m.traced.record.outcome, Some(Outcome::Out { .. })) && self.awaiting.len() < self.awaiting.capacity() {
                self.awaiting.push(m);
            } else {
                let _ = self.out.try_send(m.traced);
            }
        }
    }
}
