//! A single-producer, single-consumer ring of frame slots between a worker and a VR's slow-path
//! thread (PEARL's per-VR DMA stream). Frames are copied into a slot, so packet buffers never
//! leave the worker that owns them; the producer publishes once per batch (`flush`), and wakes
//! the consumer through its doorbell only if it went to sleep.

use super::doorbell::Doorbell;
use crate::counters::Exception;
use crate::packet::BUF_SIZE;
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

struct Slot {
    meta: FrameMeta,
    len: usize,
    data: [u8; BUF_SIZE],
}

/// Keeps the producer's and consumer's indices on separate cache lines.
#[repr(align(128))]
struct Padded(AtomicUsize);

struct Shared {
    slots: Box<[UnsafeCell<Slot>]>,
    mask: usize,
    /// Next slot the consumer reads; written by the consumer only.
    head: Padded,
    /// Next slot the producer fills; written by the producer only.
    tail: Padded,
    doorbell: Doorbell,
}

// SAFETY: a slot is written only by the producer while it lies outside [head, tail) and read
// only by the consumer while inside; the Release/Acquire pairs on head and tail order the
// slot accesses between the two threads.
unsafe impl Sync for Shared {}

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

/// A ring of at least `capacity` slots (rounded up to a power of two).
pub fn frame_ring(capacity: usize) -> std::io::Result<(FrameProducer, FrameConsumer)> {
    let n = capacity.max(2).next_power_of_two();
    let empty = FrameMeta { vr: 0, port: 0, reason: None, offload: Offload::default() };
    let slots = (0..n).map(|_| UnsafeCell::new(Slot { meta: empty, len: 0, data: [0; BUF_SIZE] })).collect();
    let shared = Arc::new(Shared {
        slots,
        mask: n - 1,
        head: Padded(AtomicUsize::new(0)),
        tail: Padded(AtomicUsize::new(0)),
        doorbell: Doorbell::new()?,
    });
    Ok((FrameProducer { shared: Arc::clone(&shared), tail: 0, head: 0 }, FrameConsumer { shared }))
}

impl FrameProducer {
    /// Copies `frame` into the next slot; false if the ring is full. Not visible to the
    /// consumer until `flush`.
    #[inline]
    pub fn push(&mut self, meta: FrameMeta, frame: &[u8]) -> bool {
        self.push_with(|data| {
            let n = frame.len().min(BUF_SIZE);
            data[..n].copy_from_slice(&frame[..n]);
            Some((meta, n))
        })
    }

    /// Lets `fill` write a frame straight into the next slot (e.g. a `read(2)`); it returns the
    /// frame's meta and length, or `None` to leave the slot unused. False if the ring is full.
    #[inline]
    pub fn push_with(&mut self, fill: impl FnOnce(&mut [u8; BUF_SIZE]) -> Option<(FrameMeta, usize)>) -> bool {
        if self.tail - self.head > self.shared.mask {
            self.head = self.shared.head.0.load(Ordering::Acquire);
            if self.tail - self.head > self.shared.mask {
                return false;
            }
        }
        // SAFETY: slot `tail` is outside [head, tail), so the consumer does not touch it.
        let slot = unsafe { &mut *self.shared.slots[self.tail & self.shared.mask].get() };
        match fill(&mut slot.data) {
            Some((meta, len)) => {
                slot.meta = meta;
                slot.len = len.min(BUF_SIZE);
                self.tail += 1;
            }
            None => return true,
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

    /// True if the ring has no free slot.
    pub fn is_full(&mut self) -> bool {
        self.head = self.shared.head.0.load(Ordering::Acquire);
        self.tail - self.head > self.shared.mask
    }
}

impl FrameConsumer {
    /// Hands up to `max` published frames to `f`, oldest first; returns how many.
    pub fn drain(&mut self, max: usize, mut f: impl FnMut(FrameMeta, &[u8])) -> usize {
        let head = self.shared.head.0.load(Ordering::Relaxed);
        let tail = self.shared.tail.0.load(Ordering::Acquire);
        let n = (tail - head).min(max);
        for i in head..head + n {
            // SAFETY: slot `i` is inside [head, tail): published and not reused until head
            // moves past it below.
            let slot = unsafe { &*self.shared.slots[i & self.shared.mask].get() };
            f(slot.meta, &slot.data[..slot.len]);
        }
        if n > 0 {
            self.shared.head.0.store(head + n, Ordering::Release);
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
    fn a_full_ring_refuses_until_the_consumer_catches_up() {
        let (mut tx, mut rx) = frame_ring(2).unwrap();
        assert!(tx.push(meta(0), &[0]));
        assert!(tx.push(meta(1), &[1]));
        assert!(!tx.push(meta(2), &[2]), "third frame in a two-slot ring");
        tx.flush();
        assert_eq!(rx.drain(1, |m, _| assert_eq!(m.vr, 0)), 1);
        assert!(tx.push(meta(2), &[2]));
        tx.flush();
        let mut order = Vec::new();
        rx.drain(10, |m, _| order.push(m.vr));
        assert_eq!(order, vec![1, 2]);
    }

    #[test]
    fn frames_cross_threads_intact() {
        let (mut tx, mut rx) = frame_ring(64).unwrap();
        const N: u32 = 100_000;
        let producer = std::thread::spawn(move || {
            let mut i = 0u32;
            while i < N {
                while i < N && tx.push(meta(0), &i.to_le_bytes()) {
                    i += 1;
                }
                tx.flush();
            }
        });
        let mut next = 0u32;
        while next < N {
            rx.drain(usize::MAX, |_, d| {
                assert_eq!(u32::from_le_bytes(d.try_into().unwrap()), next);
                next += 1;
            });
        }
        producer.join().unwrap();
    }
}
