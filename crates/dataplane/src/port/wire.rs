//! A wire: two ports of one worker joined in memory, so that a frame one VR sends out of its
//! end enters the other VR's end on the worker's next poll, its buffer moved, not copied, and
//! no system call made. Both ends of a wire belong to the worker that opened them (each worker
//! opens a wire of its own for every link), so a buffer never leaves its pool; a GSO
//! super-packet crosses whole, its offload state with it; the rings
//! between them are single-producer, single-consumer all the same, for the worker that polls
//! one end while the other is being dropped. A wire whose carrier is off (`pearlctl link set
//! ... down`) drops what it is given, counted, as a cable pulled out would lose it.

use super::{Offloads, Port};
use crate::packet::{Packet, PacketPool};
use std::cell::UnsafeCell;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Frames a direction holds: a few tx batches, as a NIC's ring would.
const SLOTS: usize = 256;

struct Ring {
    slots: Box<[UnsafeCell<Option<Packet>>]>,
    /// Ever-growing positions: next to read, next to write.
    head: AtomicUsize,
    tail: AtomicUsize,
}

// SAFETY: a slot is written only by the producer while outside [head, tail) and taken only by
// the consumer while inside; Release/Acquire on head and tail order those accesses.
unsafe impl Sync for Ring {}

impl Ring {
    fn new() -> Ring {
        Ring { slots: (0..SLOTS).map(|_| UnsafeCell::new(None)).collect(), head: AtomicUsize::new(0), tail: AtomicUsize::new(0) }
    }

    fn push(&self, p: Packet) -> Result<(), Packet> {
        let tail = self.tail.load(Ordering::Relaxed);
        if tail - self.head.load(Ordering::Acquire) == SLOTS {
            return Err(p);
        }
        // SAFETY: the slot at tail is outside [head, tail): the consumer does not touch it.
        unsafe { *self.slots[tail % SLOTS].get() = Some(p) };
        self.tail.store(tail + 1, Ordering::Release);
        Ok(())
    }

    fn pop(&self) -> Option<Packet> {
        let head = self.head.load(Ordering::Relaxed);
        if head == self.tail.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: the slot at head is inside [head, tail): the producer does not touch it.
        let p = unsafe { (*self.slots[head % SLOTS].get()).take() };
        self.head.store(head + 1, Ordering::Release);
        p
    }
}

/// What a link's ends share across workers: its carrier and what it lost.
#[derive(Default)]
pub struct WireState {
    down: AtomicBool,
    /// Frames given to an end while the carrier was off, or while the other end's ring was full.
    dropped: AtomicU64,
}

impl WireState {
    pub fn set_up(&self, up: bool) {
        self.down.store(!up, Ordering::Relaxed);
    }

    pub fn is_up(&self) -> bool {
        !self.down.load(Ordering::Relaxed)
    }

    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// One end of a wire.
pub struct WireEnd {
    rx: Arc<Ring>,
    tx: Arc<Ring>,
    state: Arc<WireState>,
    in_port: u16,
}

/// A wire's two ends, stamping received frames with their own port indexes.
pub fn wire(ports: [u16; 2], state: Arc<WireState>) -> [WireEnd; 2] {
    let (ab, ba) = (Arc::new(Ring::new()), Arc::new(Ring::new()));
    [
        WireEnd { rx: Arc::clone(&ba), tx: Arc::clone(&ab), state: Arc::clone(&state), in_port: ports[0] },
        WireEnd { rx: ab, tx: ba, state, in_port: ports[1] },
    ]
}

impl Port for WireEnd {
    /// A super-packet or a partial checksum crosses as it is (the packet and its offload state
    /// move together): whichever device finally sends it finishes it, once, not at every hop.
    fn offloads(&self) -> Offloads {
        Offloads { rx_unmarked_partial: false, tx_csum: true, tx_gso: true }
    }

    /// Both ends are the worker's own: an idle worker sleeps until its other ports wake it.
    fn fed_by_its_worker(&self) -> bool {
        true
    }

    fn rx_batch(&mut self, _pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        let mut n = 0;
        while n < max {
            let Some(mut p) = self.rx.pop() else { break };
            p.in_port = self.in_port;
            out.push(p);
            n += 1;
        }
        Ok(n)
    }

    fn tx_batch(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> io::Result<usize> {
        let up = self.state.is_up();
        let (given, mut sent) = (batch.len(), 0);
        for p in batch.drain(..) {
            match if up { self.tx.push(p) } else { Err(p) } {
                Ok(()) => sent += 1,
                Err(p) => pool.give(p),
            }
        }
        if sent < given {
            self.state.dropped.fetch_add((given - sent) as u64, Ordering::Relaxed);
        }
        Ok(sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_sent_out_of_one_end_is_received_at_the_other_and_none_while_the_carrier_is_off() {
        let mut pool = PacketPool::new(64);
        let state = Arc::new(WireState::default());
        let [mut a, mut b] = wire([3, 7], Arc::clone(&state));
        let mut frame = pool.take().unwrap();
        frame.fill(&[0xab; 64]);
        let mut batch = vec![frame];
        assert_eq!(a.tx_batch(&mut batch, &mut pool).unwrap(), 1);
        let mut got = Vec::new();
        assert_eq!(b.rx_batch(&mut pool, &mut got, 32).unwrap(), 1);
        assert_eq!((got[0].in_port, got[0].data()), (7, &[0xab; 64][..]));
        state.set_up(false);
        let mut batch = got;
        assert_eq!(b.tx_batch(&mut batch, &mut pool).unwrap(), 0, "a pulled cable carries nothing");
        let mut got = Vec::new();
        assert_eq!(a.rx_batch(&mut pool, &mut got, 32).unwrap(), 0);
        assert_eq!(state.dropped(), 1);
    }
}
