//! A single-producer, single-consumer ring between a worker and a VR's slow-path thread
//! (PEARL's per-VR DMA stream). Frames are copied in, so packet buffers never leave the worker
//! that owns them; the producer publishes once per batch (`flush`), and wakes the consumer
//! through its doorbell only if it went to sleep.
//!
//! The ring is bytes, not slots: each frame is a record of a 64-byte header (its meta and
//! length) and its bytes rounded up to a cache line, so a 64-byte exception takes 128 bytes
//! and a 64 KiB super-packet or a jumbo frame fits too, in the memory that 512 slots of 2 KiB
//! took. A record never wraps: when the end of the buffer is too short for the next one, a
//! skip record fills it and the frame starts over at the beginning.

use super::doorbell::Doorbell;
use crate::counters::Exception;
use crate::packet::LARGE_BUF_SIZE;
use pearl_wire::Offload;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What travels with a frame besides its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameMeta {
    /// Exceptions: the VR that claimed the frame. Injected frames: the VR that sends it.
    pub vr: u16,
    /// Exceptions: the port it arrived on. Injected frames: the port to send it from.
    pub port: u16,
    /// Why the fast path gave it up (exceptions only).
    pub reason: Option<Exception>,
    /// A partial checksum or GSO super-packet, as the device that received the frame (or the
    /// VR's kernel, for injected frames) left it.
    pub offload: Offload,
}

/// A record's header; `len == SKIP` marks the unused end of the buffer.
#[derive(Clone, Copy)]
struct Header {
    meta: FrameMeta,
    len: u32,
}

const SKIP: u32 = u32::MAX;
const LINE: usize = 64;
const _: () = assert!(std::mem::size_of::<Header>() <= LINE);

#[repr(C, align(64))]
struct Line([u8; LINE]);

/// The largest frame a ring takes: a super-packet or jumbo frame in a large packet buffer.
pub const MAX_FRAME: usize = LARGE_BUF_SIZE;

/// Keeps the producer's and consumer's positions on separate cache lines.
#[repr(align(128))]
struct Padded(AtomicUsize);

struct Shared {
    lines: Box<[UnsafeCell<Line>]>,
    /// The buffer's length in bytes, a power of two.
    size: usize,
    /// Byte position (ever growing) of the next record the consumer reads.
    head: Padded,
    /// Byte position of the next record the producer writes.
    tail: Padded,
    doorbell: Doorbell,
}

// SAFETY: bytes are written only by the producer while they lie outside [head, tail) and read
// only by the consumer while inside; the Release/Acquire pairs on head and tail order the
// accesses between the two threads.
unsafe impl Sync for Shared {}

impl Shared {
    fn base(&self) -> *mut u8 {
        UnsafeCell::raw_get(self.lines.as_ptr()).cast()
    }
}

pub struct FrameProducer {
    shared: Arc<Shared>,
    /// Tail as filled locally, not yet published.
    tail: usize,
    /// Head as last seen (refreshed only when the ring looks full).
    head: usize,
}

pub struct FrameConsumer {
    shared: Arc<Shared>,
}

/// A ring with room for at least `frames` full-size (1518-byte) frames: 2 KiB of buffer each,
/// rounded up to a power of two, and never less than four of the largest frames.
pub fn frame_ring(frames: usize) -> std::io::Result<(FrameProducer, FrameConsumer)> {
    let size = (frames.max(1) * 2048).max(4 * (MAX_FRAME + LINE)).next_power_of_two();
    let lines = (0..size / LINE).map(|_| UnsafeCell::new(Line([0; LINE]))).collect();
    let shared = Arc::new(Shared {
        lines,
        size,
        head: Padded(AtomicUsize::new(0)),
        tail: Padded(AtomicUsize::new(0)),
        doorbell: Doorbell::new()?,
    });
    Ok((FrameProducer { shared: Arc::clone(&shared), tail: 0, head: 0 }, FrameConsumer { shared }))
}

/// Bytes a record of a `len`-byte frame takes.
#[inline]
fn record_len(len: usize) -> usize {
    LINE + len.next_multiple_of(LINE)
}

impl FrameProducer {
    /// Copies `frame` into the ring; false if there is no room (or the frame is larger than
    /// any ring takes). Not visible to the consumer until `flush`.
    #[inline]
    pub fn push(&mut self, meta: FrameMeta, frame: &[u8]) -> bool {
        self.push_with(frame.len(), |data| {
            data.copy_from_slice(frame);
            Some((meta, frame.len()))
        })
    }

    /// Lets `fill` write a frame of at most `max` bytes straight into the ring (e.g. a
    /// `read(2)`); it returns the frame's meta and length, or `None` to leave the room unused.
    /// False if there is no room for `max` bytes.
    #[inline]
    pub fn push_with(&mut self, max: usize, fill: impl FnOnce(&mut [u8]) -> Option<(FrameMeta, usize)>) -> bool {
        let size = self.shared.size;
        if max > MAX_FRAME {
            return false;
        }
        let need = record_len(max);
        let at = self.tail & (size - 1);
        // A record does not wrap: what is left at the end is skipped if it is too short.
        let skip = if size - at < need { size - at } else { 0 };
        if self.tail + skip + need - self.head > size {
            self.head = self.shared.head.0.load(Ordering::Acquire);
            if self.tail + skip + need - self.head > size {
                return false;
            }
        }
        let base = self.shared.base();
        if skip > 0 {
            // SAFETY: [tail, tail + skip) is outside [head, tail): the consumer does not read
            // it until the tail is published; `at` is line-aligned and inside the buffer.
            unsafe { base.add(at).cast::<Header>().write(Header { meta: EMPTY, len: SKIP }) };
            self.tail += skip;
        }
        let at = self.tail & (size - 1);
        // SAFETY: as above; the record fits between `at` and the end of the buffer.
        let data = unsafe { std::slice::from_raw_parts_mut(base.add(at + LINE), max) };
        if let Some((meta, len)) = fill(data) {
            let len = len.min(max);
            // SAFETY: as above.
            unsafe { base.add(at).cast::<Header>().write(Header { meta, len: len as u32 }) };
            self.tail += record_len(len);
        }
        true
    }

    /// Publishes the frames pushed since the last flush and wakes the consumer if it sleeps.
    #[inline]
    pub fn flush(&mut self) {
        if self.shared.tail.0.load(Ordering::Relaxed) != self.tail {
            self.shared.tail.0.store(self.tail, Ordering::Release);
            self.shared.doorbell.ring_if_armed();
        }
    }
}

const EMPTY: FrameMeta = FrameMeta { vr: 0, port: 0, reason: None, offload: Offload {
    flags: 0,
    gso: pearl_wire::Gso::None,
    gso_ecn: false,
    hdr_len: 0,
    gso_size: 0,
    csum_start: 0,
    csum_offset: 0,
} };

impl FrameConsumer {
    /// Hands up to `max` published frames to `f`, oldest first; returns how many.
    pub fn drain(&mut self, max: usize, mut f: impl FnMut(FrameMeta, &[u8])) -> usize {
        let size = self.shared.size;
        let base = self.shared.base();
        let mut head = self.shared.head.0.load(Ordering::Relaxed);
        let tail = self.shared.tail.0.load(Ordering::Acquire);
        let mut n = 0;
        while head < tail && n < max {
            let at = head & (size - 1);
            // SAFETY: `head` is inside [head, tail): a published record, not reused until
            // head moves past it below.
            let h = unsafe { base.add(at).cast::<Header>().read() };
            if h.len == SKIP {
                head += size - at;
                continue;
            }
            let len = h.len as usize;
            // SAFETY: as above; the record's bytes follow its header, inside the buffer.
            let frame = unsafe { std::slice::from_raw_parts(base.add(at + LINE), len) };
            f(h.meta, frame);
            head += record_len(len);
            n += 1;
        }
        if head != self.shared.head.0.load(Ordering::Relaxed) {
            self.shared.head.0.store(head, Ordering::Release);
        }
        n
    }

    pub fn is_empty(&self) -> bool {
        self.shared.head.0.load(Ordering::Relaxed) == self.shared.tail.0.load(Ordering::Acquire)
    }

    /// The doorbell the producer rings; see [`Doorbell::sleep_unless`].
    pub fn doorbell(&self) -> &Doorbell {
        &self.shared.doorbell
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    fn meta(vr: u16) -> FrameMeta {
        FrameMeta { vr, port: 1, reason: Some(Exception::Local), offload: Offload::default() }
    }

    #[test]
    fn frames_arrive_in_order_only_after_flush() {
        let (mut tx, mut rx) = frame_ring(4).unwrap();
        assert!(tx.push(meta(7), &[1, 2, 3]));
        assert!(tx.push(meta(8), &[4]));
        assert_eq!(rx.drain(10, |_, _| panic!("unpublished frame seen")), 0);
        tx.flush();
        let mut seen = Vec::new();
        assert_eq!(rx.drain(10, |m, d| seen.push((m.vr, d.to_vec()))), 2);
        assert_eq!(seen, vec![(7, vec![1, 2, 3]), (8, vec![4])]);
    }

    #[test]
    fn a_full_ring_refuses_until_the_consumer_catches_up_and_large_frames_fit() {
        let (mut tx, mut rx) = frame_ring(1).unwrap();
        let big = vec![9u8; MAX_FRAME];
        let mut pushed = 0;
        while tx.push(meta(pushed), &big) {
            pushed += 1;
        }
        assert!(pushed >= 3, "a ring holds several of the largest frames ({pushed})");
        assert!(!tx.push(meta(99), &big));
        assert!(!tx.push(meta(99), &vec![0; MAX_FRAME + 1]), "larger than any ring takes");
        tx.flush();
        assert_eq!(rx.drain(1, |m, d| assert_eq!((m.vr, d.len()), (0, MAX_FRAME))), 1);
        assert!(tx.push(meta(pushed), &big), "room again once the consumer took one");
        tx.flush();
        let mut order = Vec::new();
        rx.drain(usize::MAX, |m, _| order.push(m.vr));
        assert_eq!(order, (1..=pushed).collect::<Vec<_>>());
    }

    #[test]
    fn frames_cross_threads_intact() {
        let (mut tx, mut rx) = frame_ring(64).unwrap();
        const N: u32 = 100_000;
        let producer = std::thread::spawn(move || {
            let mut i = 0u32;
            while i < N {
                let len = 4 + (i as usize * 37) % 3000;
                let mut frame = vec![(i % 251) as u8; len];
                frame[..4].copy_from_slice(&i.to_le_bytes());
                while i < N && tx.push(meta(0), &frame) {
                    i += 1;
                    let len = 4 + (i as usize * 37) % 3000;
                    frame = vec![(i % 251) as u8; len];
                    frame[..4].copy_from_slice(&i.to_le_bytes());
                }
                tx.flush();
            }
        });
        let mut next = 0u32;
        while next < N {
            rx.drain(usize::MAX, |_, d| {
                assert_eq!(u32::from_le_bytes(d[..4].try_into().unwrap()), next);
                assert_eq!(d.len(), 4 + (next as usize * 37) % 3000);
                assert!(d[4..].iter().all(|&b| b == (next % 251) as u8));
                next += 1;
            });
        }
        producer.join().unwrap();
    }

    proptest! {
        /// Against a queue: whatever the pushes and drains, frames come out whole, in order,
        /// and the ring refuses only when its bytes are taken.
        #[test]
        fn the_ring_behaves_as_a_bounded_queue(ops in proptest::collection::vec((any::<bool>(), 1usize..=MAX_FRAME, 1usize..5), 1..200)) {
            let (mut tx, mut rx) = frame_ring(8).unwrap();
            let mut model: VecDeque<(u16, usize)> = VecDeque::new();
            let mut id = 0u16;
            for (push, len, count) in ops {
                if push {
                    let frame = vec![id as u8; len];
                    if tx.push(meta(id), &frame) {
                        model.push_back((id, len));
                    } else {
                        prop_assert!(!model.is_empty(), "an empty ring refused a frame of {} bytes", len);
                    }
                    id = id.wrapping_add(1);
                    tx.flush();
                } else {
                    let mut got = Vec::new();
                    rx.drain(count, |m, d| got.push((m.vr, d.len(), d.iter().all(|&b| b == m.vr as u8))));
                    for (vr, len, intact) in got {
                        prop_assert_eq!(Some((vr, len)), model.pop_front());
                        prop_assert!(intact);
                    }
                }
            }
        }
    }
}
