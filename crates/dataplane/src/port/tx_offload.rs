//! The last stage before a port: frames leave with what their device can take. A frame whose
//! sender left its checksum partial, or a GSO super-packet, goes out as it is where the device
//! takes such frames (PACKET sockets and TAPs with virtio-net headers: the kernel finishes and
//! cuts them, as it does when it forwards them itself); elsewhere (AF_XDP, pcap, memory) the
//! checksum is finished and the super-packet cut here, in software, as a NIC without these
//! offloads would need. Nothing leaves with a wrong checksum.
//!
//! Segments are sent as they are made, a port batch at a time, so a batch of super-packets
//! needs no more buffers or batch room than a batch of ordinary frames.

use crate::batch::TX_BATCH;
use crate::packet::{Packet, PacketPool};
use crate::port::{Offloads, Port};
use pearl_wire::{finish_checksum, GsoSegments};

/// What one `transmit` did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Transmitted {
    /// Frames handed to the port (segments counted one by one).
    pub handed: usize,
    /// Of those, the frames the port took.
    pub sent: usize,
    /// Bytes of the frames handed to the port.
    pub bytes: u64,
    /// Frames dropped here: a super-packet or checksum this stage could not make sense of, or
    /// no buffer left for a segment.
    pub dropped: usize,
}

/// A worker's transmit stage: one per worker, reused for every port.
pub struct TxOffload {
    /// The port batch being filled with finished frames and segments.
    chunk: Vec<Packet>,
}

impl Default for TxOffload {
    fn default() -> TxOffload {
        TxOffload { chunk: Vec::with_capacity(TX_BATCH) }
    }
}

impl TxOffload {
    /// Sends `batch` (drained) out of `port`, whose device takes `caps`; buffers go back to
    /// `pool`.
    pub fn transmit(&mut self, port: &mut dyn Port, caps: Offloads, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> Transmitted {
        // A super-packet's checksum is finished as part of cutting it: a device that cuts
        // takes it as it is, whatever it does with partial checksums of single frames; an
        // encapsulated one no device can cut.
        let takes = |p: &Packet| {
            if p.offload.is_gso() {
                caps.tx_gso && !p.offload.is_encapsulated()
            } else {
                caps.tx_csum || !p.offload.needs_csum()
            }
        };
        if batch.len() <= TX_BATCH && batch.iter().all(takes) {
            let handed = batch.len();
            let bytes = batch.iter().map(|p| p.len() as u64).sum();
            let sent = send(port, batch, pool);
            return Transmitted { handed, sent, bytes, dropped: 0 };
        }
        let mut done = Transmitted::default();
        for mut p in batch.drain(..) {
            if takes(&p) {
                self.push(port, p, pool, &mut done);
                continue;
            }
            if p.offload.is_gso() {
                self.segment(port, &p, pool, &mut done);
                pool.give(p);
                continue;
            }
            let offload = p.offload;
            if finish_checksum(p.data_mut(), &offload).is_err() {
                done.dropped += 1;
                pool.give(p);
                continue;
            }
            p.offload = Default::default();
            self.push(port, p, pool, &mut done);
        }
        self.flush(port, pool, &mut done);
        done
    }

    /// Cuts super-packet `p` into complete frames and sends them.
    fn segment(&mut self, port: &mut dyn Port, p: &Packet, pool: &mut PacketPool, done: &mut Transmitted) {
        let Ok(mut segments) = GsoSegments::of_frame(p.data(), &p.offload) else {
            done.dropped += 1;
            return;
        };
        let room = segments.max_segment_len();
        while segments.remaining() > 0 {
            // Sending what is queued brings buffers back (AF_XDP copy mode completes at once).
            let Some(mut s) = pool.take_for(room).or_else(|| {
                self.flush(port, pool, done);
                pool.take_for(room)
            }) else {
                done.dropped += segments.remaining();
                return;
            };
            let Some(len) = segments.next_into(s.buffer_mut()) else {
                pool.give(s);
                return;
            };
            s.set_len(len);
            s.in_port = p.in_port;
            self.push(port, s, pool, done);
        }
    }

    fn push(&mut self, port: &mut dyn Port, p: Packet, pool: &mut PacketPool, done: &mut Transmitted) {
        self.chunk.push(p);
        if self.chunk.len() == TX_BATCH {
            self.flush(port, pool, done);
        }
    }

    fn flush(&mut self, port: &mut dyn Port, pool: &mut PacketPool, done: &mut Transmitted) {
        if self.chunk.is_empty() {
            return;
        }
        done.handed += self.chunk.len();
        done.bytes += self.chunk.iter().map(|p| p.len() as u64).sum::<u64>();
        done.sent += send(port, &mut self.chunk, pool);
    }
}

/// One port batch: what the port took; the rest (an error included) is dropped.
fn send(port: &mut dyn Port, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> usize {
    let sent = port.tx_batch(batch, pool).unwrap_or(0);
    pool.give_all(batch);
    sent
}
