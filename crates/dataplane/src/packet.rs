//! Packet buffers and the pool they cycle through.
//!
//! Buffers are allocated once, when the pool is made; rx takes them from the pool, tx and drops
//! give them back. Moving a `Packet` moves a pointer, so a batch passes through the pipeline
//! without copying or allocating.

/// Room for a 1518-byte frame plus VLAN tags, with headroom to spare.
pub const BUF_SIZE: usize = 2048;

/// One frame and where it came from.
pub struct Packet {
    buf: Box<[u8; BUF_SIZE]>,
    len: usize,
    /// The port the frame arrived on (index into the port table).
    pub in_port: u16,
}

impl Packet {
    pub fn data(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole buffer, for a driver filling it; follow with `set_len`.
    pub fn buffer_mut(&mut self) -> &mut [u8; BUF_SIZE] {
        &mut self.buf
    }

    /// Sets the frame length (clamped to the buffer).
    pub fn set_len(&mut self, len: usize) {
        self.len = len.min(BUF_SIZE);
    }

    /// Replaces the frame with a copy of `frame` (truncated to the buffer).
    #[inline]
    pub fn fill(&mut self, frame: &[u8]) {
        let n = frame.len().min(BUF_SIZE);
        let (dst, src) = (&mut self.buf[..], &frame[..n]);
        // Minimum-size frames are the common case of a packet rate: two overlapping
        // fixed-size copies inline instead of a call into memcpy's size dispatch.
        match n {
            32..=64 => {
                dst[..32].copy_from_slice(&src[..32]);
                dst[n - 32..n].copy_from_slice(&src[n - 32..]);
            }
            65..=128 => {
                dst[..64].copy_from_slice(&src[..64]);
                dst[n - 64..n].copy_from_slice(&src[n - 64..]);
            }
            _ => dst[..n].copy_from_slice(src),
        }
        self.len = n;
    }
}

/// Starts loading every cache line of the `len`-byte frame at `p`, so that a copy of it made a
/// little later does not stall: for frames another CPU just wrote, or a trace beyond the caches.
#[inline(always)]
pub fn prefetch_frame(p: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..len.max(1)).step_by(64) {
        // SAFETY: prefetching is a hint; it never faults, whatever the address.
        unsafe { core::arch::x86_64::_mm_prefetch(p.wrapping_add(line).cast(), core::arch::x86_64::_MM_HINT_T0) };
    }
}

/// A fixed stock of buffers. When it runs dry, rx stops taking frames (they stay in the
/// kernel's or NIC's ring, or are dropped there) instead of allocating.
pub struct PacketPool {
    free: Vec<Packet>,
    capacity: usize,
}

impl PacketPool {
    pub fn new(capacity: usize) -> PacketPool {
        let free = (0..capacity)
            .map(|_| Packet { buf: Box::new([0; BUF_SIZE]), len: 0, in_port: 0 })
            .collect();
        PacketPool { free, capacity }
    }

    #[inline]
    pub fn take(&mut self) -> Option<Packet> {
        self.free.pop()
    }

    #[inline]
    pub fn give(&mut self, mut p: Packet) {
        p.len = 0;
        self.free.push(p);
    }

    /// Returns every packet of `batch` to the pool.
    pub fn give_all(&mut self, batch: &mut Vec<Packet>) {
        for p in batch.drain(..) {
            self.give(p);
        }
    }

    pub fn available(&self) -> usize {
        self.free.len()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_cycle_without_growing_the_pool() {
        let mut pool = PacketPool::new(4);
        let mut batch: Vec<Packet> = (0..4).map(|_| pool.take().unwrap()).collect();
        assert!(pool.take().is_none(), "an empty pool refuses instead of allocating");
        batch[0].fill(&[1, 2, 3]);
        assert_eq!(batch[0].data(), &[1, 2, 3]);
        for n in [31, 32, 33, 60, 64, 65, 78, 127, 128, 129, 1514, BUF_SIZE] {
            let frame: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
            batch[1].fill(&frame);
            assert_eq!(batch[1].data(), &frame[..], "a {n}-byte frame");
        }
        pool.give_all(&mut batch);
        assert_eq!(pool.available(), 4);
        assert!(pool.take().unwrap().is_empty(), "returned buffers come back empty");
    }
}
