//! The pool: a fixed stock of packet buffers, carved out of one anonymous mapping (the arena).
//!
//! Besides taking and giving packets, a pool can lend chunks to a device that shares the arena
//! (an AF_XDP socket registers it as its UMEM) by their offsets, and make packets of them again
//! when the device hands them back. Offsets, not pointers, because that is what such devices
//! pass through their rings.

use super::{Packet, BUF_SIZE, LARGE_BUF_SIZE};
use pearl_wire::Offload;
use std::io;
use std::ptr::NonNull;

/// When it runs dry, rx stops taking frames (they stay in the kernel's or NIC's ring, or are
/// dropped there) instead of allocating.
///
/// Two arenas: `BUF_SIZE` chunks for ordinary frames (the one a device may share), and a few
/// `LARGE_BUF_SIZE` chunks for GSO super-packets and jumbo frames, taken only when a frame needs
/// one, so small frames keep their dense, cache-friendly buffers.
pub struct PacketPool {
    free: Vec<Packet>,
    capacity: usize,
    base: NonNull<u8>,
    /// The arena's length: `capacity` chunks rounded up to whole pages.
    len: usize,
    free_large: Vec<Packet>,
    large_capacity: usize,
    large_base: NonNull<u8>,
    large_len: usize,
}

// SAFETY: the pool owns its free packets and its arenas; moving it moves that sole ownership.
unsafe impl Send for PacketPool {}

/// Maps `chunks` chunks of `size` bytes and makes a free packet of each. Pages are taken as
/// chunks are first written, and the free list is a stack, so a pool keeps reusing the chunks
/// it used last: a quiet node's pool costs the memory of its busiest moment, not its capacity
/// (an AF_XDP socket that registers the arena pins it whole). Panics if the address space
/// cannot be had, as any allocation does.
fn map_arena(chunks: usize, size: usize) -> (NonNull<u8>, usize, Vec<Packet>) {
    let len = (chunks.max(1) * size).next_multiple_of(4096);
    // SAFETY: a fresh private mapping chosen by the kernel; it is unmapped only by Drop.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        panic!("cannot map {len} bytes for {chunks} packet buffers: {}", io::Error::last_os_error());
    }
    let base = NonNull::new(base.cast::<u8>()).expect("mmap never returns null on success");
    let free = (0..chunks)
        .map(|i| Packet {
            // SAFETY: chunk i lies inside the mapping, since chunks * size <= len.
            chunk: unsafe { base.add(i * size) },
            start: 0,
            in_port: 0,
            len: 0,
            capacity: size as u32,
            offload: Offload::default(),
        })
        .collect();
    (base, len, free)
}

impl PacketPool {
    /// A pool of `capacity` ordinary buffers and no large ones.
    pub fn new(capacity: usize) -> PacketPool {
        PacketPool::with_large(capacity, 0)
    }

    /// A pool of `capacity` ordinary buffers and `large` ones for super-packets and jumbo
    /// frames.
    pub fn with_large(capacity: usize, large: usize) -> PacketPool {
        let (base, len, free) = map_arena(capacity, BUF_SIZE);
        let (large_base, large_len, free_large) = map_arena(large, LARGE_BUF_SIZE);
        PacketPool { free, capacity, base, len, free_large, large_capacity: large, large_base, large_len }
    }

    #[inline]
    pub fn take(&mut self) -> Option<Packet> {
        self.free.pop()
    }

    /// A packet whose buffer holds `len` bytes: an ordinary one when the frame fits, else a
    /// large one.
    #[inline]
    pub fn take_for(&mut self, len: usize) -> Option<Packet> {
        if len <= BUF_SIZE {
            self.free.pop()
        } else if len <= LARGE_BUF_SIZE {
            self.free_large.pop()
        } else {
            None
        }
    }

    #[inline]
    pub fn give(&mut self, mut p: Packet) {
        p.start = 0;
        p.len = 0;
        p.offload = Offload::default();
        if p.capacity as usize == BUF_SIZE {
            self.free.push(p);
        } else {
            self.free_large.push(p);
        }
    }

    /// A second packet holding `p`'s frame, arrival port and offload state (a program's copy);
    /// `None` when no buffer is free.
    pub fn copy_of(&mut self, p: &Packet) -> Option<Packet> {
        let mut c = self.take_for(p.len())?;
        c.fill(p.data());
        c.in_port = p.in_port;
        c.offload = p.offload;
        Some(c)
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

    pub fn available_large(&self) -> usize {
        self.free_large.len()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The arena's start and length in bytes: what a device registers to share the buffers.
    pub fn arena(&self) -> (*mut u8, usize) {
        (self.base.as_ptr(), self.len)
    }

    /// The offset of `p`'s chunk in the arena, if it is one of this pool's.
    #[inline]
    fn chunk_offset(&self, p: &Packet) -> Option<u64> {
        let offset = (p.chunk.as_ptr() as usize).wrapping_sub(self.base.as_ptr() as usize);
        (offset < self.capacity * BUF_SIZE).then_some(offset as u64)
    }

    /// Lends a free chunk to a device: returns its offset in the arena. It is out of the pool
    /// until `reclaim` brings it back.
    #[inline]
    pub fn lend(&mut self) -> Option<u64> {
        while let Some(p) = self.free.pop() {
            match self.chunk_offset(&p) {
                Some(offset) => return Some(offset),
                // Another pool's packet given to this one: its arena is not the device's.
                None => continue,
            }
        }
        None
    }

    /// Lends `p`'s chunk to a device as it stands: returns the offset of its frame in the arena,
    /// or `p` back if it belongs to another pool.
    #[inline]
    pub fn lend_packet(&self, p: Packet) -> Result<u64, Packet> {
        match self.chunk_offset(&p) {
            Some(offset) => Ok(offset + u64::from(p.start)),
            None => Err(p),
        }
    }

    /// Whether `offset .. offset + len` lies within one chunk of the arena: the check a device's
    /// descriptor must pass before `reclaim`.
    #[inline]
    pub fn holds(&self, offset: u64, len: usize) -> bool {
        let within = (offset % BUF_SIZE as u64) as usize + len <= BUF_SIZE;
        within && offset < (self.capacity * BUF_SIZE) as u64
    }

    /// Makes a packet again of the lent chunk that holds `offset`, its frame being the `len`
    /// bytes there.
    ///
    /// # Safety
    /// The chunk must have been lent by this pool (`lend`, `lend_packet`) and not reclaimed
    /// since, and `holds(offset, len)` must be true.
    #[inline]
    pub unsafe fn reclaim(&self, offset: u64, len: usize) -> Packet {
        debug_assert!(self.holds(offset, len));
        let chunk = offset as usize & !(BUF_SIZE - 1);
        // SAFETY: the caller vouches that the chunk is one of this arena's.
        let chunk = unsafe { self.base.add(chunk) };
        Packet {
            chunk,
            start: (offset as usize % BUF_SIZE) as u16,
            in_port: 0,
            len: len as u32,
            capacity: BUF_SIZE as u32,
            offload: Offload::default(),
        }
    }
}

impl Drop for PacketPool {
    /// Unmaps the arena only if every chunk is back: a packet still out (or a chunk still lent
    /// to a device) keeps it mapped, for the rest of the process, so that no packet can dangle.
    fn drop(&mut self) {
        let home = self.free.iter().filter(|p| self.chunk_offset(p).is_some()).count();
        if home == self.capacity {
            // SAFETY: exactly what mmap returned; no packet of this arena is left outside.
            unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        }
        let base = self.large_base.as_ptr() as usize;
        let large_home = self.free_large.iter().filter(|p| (p.chunk.as_ptr() as usize).wrapping_sub(base) < self.large_len).count();
        if large_home == self.large_capacity {
            // SAFETY: as above, for the large arena.
            unsafe { libc::munmap(self.large_base.as_ptr().cast(), self.large_len) };
        }
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

    #[test]
    fn a_frame_moves_within_its_buffer_and_keeps_its_bytes() {
        let mut pool = PacketPool::with_large(1, 1);
        let mut p = pool.take().unwrap();
        let frame: Vec<u8> = (0..60).collect();
        p.fill(&frame);
        assert!(p.reserve_headroom(256));
        assert_eq!((p.room_mut().1, p.data()), (256, &frame[..]), "moved behind 256 bytes of room");
        assert!(p.reserve_headroom(100), "already has the room");
        assert_eq!(p.room_mut().1, 256);
        assert!(!p.reserve_headroom(BUF_SIZE - 59), "no room in a 2 KiB chunk for that");
        // A program took 20 bytes off the front and grew the tail by 4.
        p.set_bounds(276, 44);
        assert_eq!(&p.data()[..40], &frame[20..]);
        p.set_bounds(BUF_SIZE - 10, 60);
        assert_eq!(p.len(), 10, "clamped to the buffer");
        pool.give(p);
        // In a large chunk, a start beyond what a packet records brings the frame to the front.
        let mut big = pool.take_for(LARGE_BUF_SIZE).unwrap();
        big.room_mut().0[66_000..66_060].copy_from_slice(&frame);
        big.set_bounds(66_000, 60);
        assert_eq!((big.room_mut().1, big.data()), (0, &frame[..]));
        pool.give(big);
    }

    #[test]
    fn chunks_are_distinct_aligned_and_inside_the_arena() {
        let mut pool = PacketPool::new(5);
        let (base, len) = pool.arena();
        assert_eq!(base as usize % 4096, 0);
        assert!(len >= 5 * BUF_SIZE && len % 4096 == 0);
        let mut offsets: Vec<u64> = (0..5).map(|_| pool.lend().unwrap()).collect();
        offsets.sort();
        assert_eq!(offsets, [0, 2048, 4096, 6144, 8192]);
        assert_eq!(pool.lend(), None);
    }

    #[test]
    fn a_lent_chunk_comes_back_as_the_frame_a_device_wrote_there() {
        let mut pool = PacketPool::new(2);
        let offset = pool.lend().unwrap();
        // A device writes a frame 256 bytes into the chunk (as AF_XDP's copy mode does).
        let (base, _) = pool.arena();
        let frame = [7u8, 8, 9, 10];
        // SAFETY: the chunk is lent, so nothing else uses it; 256 + 4 bytes fit in it.
        unsafe { std::ptr::copy_nonoverlapping(frame.as_ptr(), base.add(offset as usize + 256), 4) };
        assert!(pool.holds(offset + 256, 4));
        assert!(!pool.holds(offset + 256, BUF_SIZE - 255), "a frame running past its chunk");
        assert!(!pool.holds(2 * BUF_SIZE as u64, 1), "an offset past the last chunk");
        // SAFETY: lent above, checked by `holds`.
        let mut p = unsafe { pool.reclaim(offset + 256, 4) };
        assert_eq!(p.data(), &frame);
        p.data_mut()[0] = 1;
        // Lending the packet back points at its frame, not its chunk.
        assert_eq!(pool.lend_packet(p).ok(), Some(offset + 256));
        // SAFETY: lent just above.
        let mut p = unsafe { pool.reclaim(offset + 256, 4) };
        assert_eq!(p.data(), &[1, 8, 9, 10]);
        p.set_len(BUF_SIZE);
        assert_eq!(p.len(), BUF_SIZE - 256, "the length stays within the chunk");
        p.buffer_mut()[0] = 42;
        p.set_len(1);
        assert_eq!(p.data(), &[42], "a driver's fill starts at the chunk's first byte");
        pool.give(p);
        assert_eq!(pool.available(), 2);
    }

    #[test]
    fn another_pools_packets_are_never_lent() {
        let mut mine = PacketPool::new(1);
        let mut theirs = PacketPool::new(1);
        let stranger = theirs.take().unwrap();
        let stranger = mine.lend_packet(stranger).expect_err("not this pool's");
        mine.give(stranger);
        let own = mine.lend().unwrap();
        assert_eq!(own, 0, "the pool's own chunk");
        assert_eq!(mine.lend(), None, "the stranger is skipped, not lent");
    }
}
