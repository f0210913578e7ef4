//! A single-producer, single-consumer ring between a worker and a VR's slow-path thread
//! (PEARL's per-VR DMA stream). Frames are copied in, so packet buffers never leave the worker
//! that owns them; the producer publishes once per batch (`flush`), and wakes the consumer
//! through its doorbell only if it went to sleep.
//!
//! The ring is bytes, not slots: each frame is a record of a 64-byte header (its meta and
//! length) and its bytes rounded up to a cache line, so a 64-byte exception takes 128 bytes
//! and a 64 KiB super-packet or a jumbo frame fits too. A record never wraps: when the end of
//! the buffer is too short for the next one, a skip record fills it and the frame starts over
//! at the beginning.
//!
//! The buffer is an anonymous mapping, so its pages cost memory only once written; and a
//! producer starting a batch near the furthest point it ever wrote starts over at the
//! beginning instead whenever the consumer has taken everything. A quiet VR's ring thus keeps
//! to its first pages (about 64 KiB), while a busy one has the whole buffer for bursts of
//! super-packets.

use super::doorbell::Doorbell;
use crate::counters::Exception;
use crate::packet::LARGE_BUF_SIZE;
use pearl_wire::Offload;
use std::ptr::NonNull;
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

/// A record's header; `len == SKIP` marks the unused end of the buffer (a record never wraps).
#[derive(Clone, Copy)]
struct Header {
    meta: FrameMeta,
    len: u32,
}

const SKIP: u32 = u32::MAX;
const LINE: usize = 64;
const _: () = assert!(std::mem::size_of::<Header>() <= LINE);

/// The largest frame a ring takes: a super-packet or jumbo frame in a large packet buffer.
pub const MAX_FRAME: usize = LARGE_BUF_SIZE;

/// A batch starting this close to the furthest point ever written checks whether the ring is
/// empty, to start over at the beginning: a quiet ring keeps to about this much memory plus a
/// batch, a busy one checks in this share of its buffer only.
const RESTART_LOOKAHEAD: usize = 64 * 1024;

/// Keeps the producer's and consumer's positions on separate cache lines.
#[repr(align(128))]
struct Padded(AtomicUsize);

struct Shared {
    /// `size` bytes of an anonymous mapping, page-aligned.
    base: NonNull<u8>,
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
// accesses between the two threads. The mapping is owned by `Shared` alone.
unsafe impl Sync for Shared {}
// SAFETY: as for the impl above.
unsafe impl Send for Shared {}

impl Shared {
    fn base(&self) -> *mut u8 {
        self.base.as_ptr()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `frame_ring`, of `size` bytes; both ends are gone.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.size) };
    }
}

pub struct FrameProducer {
    shared: Arc<Shared>,
    /// Tail as filled locally, not yet published.
    tail: usize,
    /// Tail as last published.
    published: usize,
    /// Head as last seen (refreshed only when the ring looks full, or when a batch starts
    /// near memory not used yet).
    head: usize,
    /// Offset in the buffer up to which records have ever been written.
    touched: usize,
    /// Times the ring started over at the beginning (tests see that restarts happened).
    #[cfg(test)]
    restarts: usize,
}

pub struct FrameConsumer {
    shared: Arc<Shared>,
}

/// A ring with room for at least `frames` full-size (1518-byte) frames: 2 KiB of buffer each,
/// rounded up to a power of two, and never less than four of the largest frames. Memory is
/// taken as the ring is used (see the module's comment).
pub fn frame_ring(frames: usize) -> std::io::Result<(FrameProducer, FrameConsumer)> {
    let size = (frames.max(1) * 2048).max(4 * (MAX_FRAME + LINE)).next_power_of_two();
    // SAFETY: a fresh private anonymous mapping; checked below.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), size, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    if p == libc::MAP_FAILED {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(e.kind(), format!("frame ring: mmap of {size} bytes: {e}")));
    }
    let shared = Arc::new(Shared {
        base: NonNull::new(p.cast()).expect("mmap returned a mapping"),
        size,
        head: Padded(AtomicUsize::new(0)),
        tail: Padded(AtomicUsize::new(0)),
        doorbell: Doorbell::new()?,
    });
    let producer = FrameProducer {
        shared: Arc::clone(&shared),
        tail: 0,
        published: 0,
        head: 0,
        touched: 0,
        #[cfg(test)]
        restarts: 0,
    };
    Ok((producer, FrameConsumer { shared }))
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
        self.push_leaving(0, meta, frame)
    }

    /// Like `push`, but only if `reserve` bytes of the ring stay free after it (room kept
    /// for frames that must go ahead).
    #[inline]
    pub fn push_leaving(&mut self, reserve: usize, meta: FrameMeta, frame: &[u8]) -> bool {
        self.push_reserving(frame.len(), reserve, |data| {
            data.copy_from_slice(frame);
            Some((meta, frame.len()))
        })
    }

    /// Lets `fill` write a frame of at most `max` bytes straight into the ring (e.g. a
    /// `read(2)`); it returns the frame's meta and length, or `None` to leave the room unused.
    /// False if there is no room for `max` bytes.
    #[inline]
    pub fn push_with(&mut self, max: usize, fill: impl FnOnce(&mut [u8]) -> Option<(FrameMeta, usize)>) -> bool {
        self.push_reserving(max, 0, fill)
    }

    #[inline]
    fn push_reserving(&mut self, max: usize, reserve: usize, fill: impl FnOnce(&mut [u8]) -> Option<(FrameMeta, usize)>) -> bool {
        let size = self.shared.size;
        if max > MAX_FRAME {
            return false;
        }
        let need = record_len(max);
        let base = self.shared.base();
        let mut at = self.tail & (size - 1);
        if self.tail == self.published && at != 0 && at + RESTART_LOOKAHEAD > self.touched {
            // A batch starting near memory never used yet: if the consumer has taken
            // everything, start over at the beginning instead.
            self.head = self.shared.head.0.load(Ordering::Acquire);
            if self.head == self.tail && self.restart(at) {
                at = 0;
            }
        }
        // A record does not wrap: what is left at the end is skipped if it is too short.
        let skip = if size - at < need { size - at } else { 0 };
        if self.tail + skip + need + reserve - self.head > size {
            self.head = self.shared.head.0.load(Ordering::Acquire);
            if self.tail + skip + need + reserve - self.head > size {
                return false;
            }
        }
        if skip > 0 {
            // SAFETY: [tail, tail + skip) is outside [head, tail): the consumer does not read
            // it until the tail is published; `at` is line-aligned and inside the buffer.
            unsafe { base.add(at).cast::<Header>().write(Header { meta: EMPTY, len: SKIP }) };
            self.tail += skip;
            at = 0;
        }
        // SAFETY: as above; the record fits between `at` and the end of the buffer.
        let data = unsafe { std::slice::from_raw_parts_mut(base.add(at + LINE), max) };
        if let Some((meta, len)) = fill(data) {
            let len = len.min(max);
            // SAFETY: as above.
            unsafe { base.add(at).cast::<Header>().write(Header { meta, len: len as u32 }) };
            self.tail += record_len(len);
            self.touched = self.touched.max(at + record_len(len));
        }
        true
    }

    /// Moves an empty ring's positions, the consumer's too, to the start of the next lap, so
    /// that the next record is written at the beginning of the buffer; false if the consumer
    /// moved meanwhile (it cannot: it stores its position only after reading published records,
    /// and there are none).
    ///
    /// No record marks the move: a consumer reads the tail before the head, so one that sees a
    /// tail published after the move sees the moved head too (the head was stored before that
    /// tail); one that sees an older tail sees no record after either head.
    #[cold]
    fn restart(&mut self, at: usize) -> bool {
        let next = self.tail + (self.shared.size - at);
        if self.shared.head.0.compare_exchange(self.tail, next, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return false;
        }
        self.head = next;
        self.tail = next;
        #[cfg(test)]
        {
            self.restarts += 1;
        }
        true
    }

    /// Whether frames were pushed since the last flush.
    #[inline]
    pub fn unpublished(&self) -> bool {
        self.published != self.tail
    }

    /// Publishes the frames pushed since the last flush and wakes the consumer if it sleeps.
    #[inline]
    pub fn flush(&mut self) {
        if self.published != self.tail {
            self.shared.tail.0.store(self.tail, Ordering::Release);
            self.published = self.tail;
            self.shared.doorbell.ring_if_armed();
        }
    }
}

const EMPTY: FrameMeta = FrameMeta {
    vr: 0,
    port: 0,
    reason: None,
    offload: Offload {
        flags: 0,
        gso: pearl_wire::Gso::None,
        gso_ecn: false,
        hdr_len: 0,
        gso_size: 0,
        csum_start: 0,
        csum_offset: 0,
        encapsulated: 0,
    },
};

impl FrameConsumer {
    /// Hands up to `max` published frames to `f`, oldest first; returns how many.
    pub fn drain(&mut self, max: usize, mut f: impl FnMut(FrameMeta, &[u8])) -> usize {
        let size = self.shared.size;
        let base = self.shared.base();
        // The tail first: see `FrameProducer::restart`.
        let tail = self.shared.tail.0.load(Ordering::Acquire);
        let start = self.shared.head.0.load(Ordering::Acquire);
        let mut head = start;
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
        // Stored only when moved: a producer restarting an empty ring may have moved it.
        if head != start {
            self.shared.head.0.store(head, Ordering::Release);
        }
        n
    }

    pub fn is_empty(&self) -> bool {
        // The head runs ahead of the published tail between a restart and its flush.
        let tail = self.shared.tail.0.load(Ordering::Acquire);
        tail <= self.shared.head.0.load(Ordering::Acquire)
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
    fn frames_that_leave_a_reserve_stop_short_of_it_and_the_reserve_takes_frames_that_go_ahead() {
        let (mut tx, mut rx) = frame_ring(64).unwrap();
        let frame = [5u8; 1500];
        let reserve = 32 * 1024;
        let mut ordinary = 0;
        while tx.push_leaving(reserve, meta(1), &frame) {
            ordinary += 1;
        }
        let mut ahead = 0;
        while tx.push(meta(2), &frame) {
            ahead += 1;
        }
        assert!(ordinary > 0 && ahead >= reserve / record_len(frame.len()) - 1, "{ordinary} then {ahead}");
        assert!(ahead <= reserve / record_len(frame.len()) + 1, "the reserve is all the second kind got: {ahead}");
        tx.flush();
        assert_eq!(rx.drain(usize::MAX, |_, _| ()), ordinary + ahead);
    }

    /// A frame's length in the cross-thread test: mostly up to 3000 bytes, now and then a
    /// super-packet, so records wrap and rings restart at every length.
    fn cross_len(i: u32) -> usize {
        if i.is_multiple_of(97) {
            60_000 + i as usize % 5000
        } else {
            4 + (i as usize * 37) % 3000
        }
    }

    fn cross_frame(i: u32) -> Vec<u8> {
        let mut frame = vec![(i % 251) as u8; cross_len(i)];
        frame[..4].copy_from_slice(&i.to_le_bytes());
        frame
    }

    #[test]
    fn frames_cross_threads_intact() {
        let (mut tx, mut rx) = frame_ring(64).unwrap();
        const N: u32 = 100_000;
        let producer = std::thread::spawn(move || {
            let mut i = 0u32;
            let mut frame = cross_frame(0);
            while i < N {
                // Batches of 1 to 8, so the consumer often catches up and the ring restarts.
                for _ in 0..1 + i % 8 {
                    if i == N || !tx.push(meta(0), &frame) {
                        break;
                    }
                    i += 1;
                    frame = cross_frame(i);
                }
                tx.flush();
            }
        });
        let mut next = 0u32;
        while next < N {
            rx.drain(usize::MAX, |_, d| {
                assert_eq!(u32::from_le_bytes(d[..4].try_into().unwrap()), next);
                assert_eq!(d.len(), cross_len(next));
                assert!(d[4..].iter().all(|&b| b == (next % 251) as u8));
                next += 1;
            });
        }
        producer.join().unwrap();
    }

    #[test]
    fn restarts_race_with_the_consumer_and_frames_stay_intact() {
        // A producer a little slower than its consumer: the ring is often empty when a batch
        // starts, so it restarts at the beginning, racing with a consumer reading its position.
        let (mut tx, mut rx) = frame_ring(64).unwrap();
        const N: u32 = 200_000;
        let size = tx.shared.size;
        let producer = std::thread::spawn(move || {
            let len = |i: u32| if i.is_multiple_of(1009) { 60_000 } else { 4 + (i as usize * 13) % 200 };
            let mut i = 0u32;
            while i < N {
                for _ in 0..1 + i % 3 {
                    let mut frame = vec![(i % 251) as u8; len(i)];
                    frame[..4].copy_from_slice(&i.to_le_bytes());
                    if i == N || !tx.push(meta(0), &frame) {
                        break;
                    }
                    i += 1;
                }
                tx.flush();
                for _ in 0..i % 200 {
                    std::hint::spin_loop();
                }
            }
            tx
        });
        let mut next = 0u32;
        while next < N {
            rx.drain(usize::MAX, |_, d| {
                assert_eq!(u32::from_le_bytes(d[..4].try_into().unwrap()), next);
                assert!(d[4..].iter().all(|&b| b == (next % 251) as u8));
                next += 1;
            });
        }
        let tx = producer.join().unwrap();
        // How much memory the ring kept to depends on how the threads were scheduled; that
        // it restarted while the consumer raced it does not.
        assert!(tx.restarts > 0, "the ring never restarted (used {} bytes of {size})", tx.touched);
    }

    #[test]
    fn a_quiet_ring_keeps_to_its_first_pages() {
        let (mut tx, mut rx) = frame_ring(CHANNEL_DEPTH_FOR_TEST).unwrap();
        let mut seen = 0;
        for i in 0..100_000usize {
            // A worker's exceptions: a few frames a batch, taken by the slow path in between.
            for j in 0..1 + i % 3 {
                assert!(tx.push(meta(1), &vec![7; 60 + (i * 31 + j) % 1500]));
            }
            // The TAP read path: room for the largest frame, mostly nothing read.
            assert!(tx.push_with(MAX_FRAME, |_| None));
            assert!(tx.push_with(MAX_FRAME, |buf| (i % 5 == 0).then(|| {
                buf[..100].fill(7);
                (meta(2), 100)
            })));
            tx.flush();
            rx.drain(usize::MAX, |_, d| {
                assert!(d.iter().all(|&b| b == 7));
                seen += 1;
            });
        }
        assert_eq!(seen, (0..100_000).map(|i| 1 + i % 3 + usize::from(i % 5 == 0)).sum::<usize>());
        assert!(tx.touched <= RESTART_LOOKAHEAD + 16 * 1024, "used {} bytes of {}", tx.touched, tx.shared.size);
    }

    #[test]
    fn a_busy_ring_uses_all_of_its_buffer() {
        let (mut tx, mut rx) = frame_ring(CHANNEL_DEPTH_FOR_TEST).unwrap();
        let mut n = 0;
        while tx.push(meta(0), &[1; 1500]) {
            n += 1;
        }
        let size = tx.shared.size;
        assert!(n * record_len(1500) > size - record_len(1500), "{n} frames in {size} bytes");
        tx.flush();
        assert_eq!(rx.drain(usize::MAX, |_, _| {}), n);
        assert!(rx.is_empty());
    }

    const CHANNEL_DEPTH_FOR_TEST: usize = crate::slowpath::CHANNEL_DEPTH;

    #[derive(Clone, Debug)]
    enum Op {
        /// A frame of this length, copied in.
        Push(usize),
        /// A frame of this length read in place with room for the largest (the TAP path), or
        /// nothing read (`0`).
        Read(usize),
        Flush,
        Drain(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (1usize..=66_000).prop_map(Op::Push),
            2 => (1usize..=1600).prop_map(Op::Push),
            1 => (0usize..=66_000).prop_map(Op::Read),
            2 => Just(Op::Flush),
            3 => (1usize..6).prop_map(Op::Drain),
        ]
    }

    proptest! {
        /// Against a queue: whatever the pushes, flushes and drains, frames come out whole, in
        /// order, only once published, and the ring refuses only when its bytes are taken:
        /// by the frames it holds, at most one skipped end of the buffer, and the room asked for.
        #[test]
        fn the_ring_behaves_as_a_bounded_queue(ops in proptest::collection::vec(op(), 1..300)) {
            let (mut tx, mut rx) = frame_ring(8).unwrap();
            let size = tx.shared.size;
            let mut published: VecDeque<(u16, usize)> = VecDeque::new();
            let mut pending: Vec<(u16, usize)> = Vec::new();
            let held = |p: &VecDeque<(u16, usize)>, q: &Vec<(u16, usize)>| {
                p.iter().chain(q.iter()).map(|&(_, len)| record_len(len)).sum::<usize>()
            };
            let mut id = 0u16;
            for op in ops {
                match op {
                    Op::Push(len) | Op::Read(len) => {
                        let read = matches!(op, Op::Read(_));
                        let room = if read { MAX_FRAME } else { len };
                        let ok = if read {
                            tx.push_with(MAX_FRAME, |buf| (len > 0).then(|| { buf[..len].fill(id as u8); (meta(id), len) }))
                        } else {
                            tx.push(meta(id), &vec![id as u8; len])
                        };
                        if ok {
                            if len > 0 {
                                pending.push((id, len));
                            }
                        } else {
                            let taken = held(&published, &pending);
                            prop_assert!(taken + record_len(MAX_FRAME) + 2 * record_len(room) > size,
                                "refused {} bytes with {} of {} taken", room, taken, size);
                        }
                        id = id.wrapping_add(1);
                    }
                    Op::Flush => {
                        tx.flush();
                        published.extend(pending.drain(..));
                    }
                    Op::Drain(count) => {
                        let mut got = Vec::new();
                        rx.drain(count, |m, d| got.push((m.vr, d.len(), d.iter().all(|&b| b == m.vr as u8))));
                        prop_assert!(got.len() == count.min(published.len()));
                        for (vr, len, intact) in got {
                            prop_assert_eq!(Some((vr, len)), published.pop_front());
                            prop_assert!(intact);
                        }
                        prop_assert_eq!(rx.is_empty(), published.is_empty());
                    }
                }
            }
        }
    }
}
