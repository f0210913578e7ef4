//! The memory an AF_XDP socket shares with the kernel besides the UMEM: four single-producer,
//! single-consumer rings that pass frame addresses between us and the kernel.
//!
//! Each ring is a power-of-two array of entries plus a producer and a consumer index that run
//! freely (wrapping at 2^32) and are masked on access. The side that owns an index publishes it
//! with a release store; the other side reads it with an acquire load, which orders the entries'
//! contents with the index. Both sides cache the other's index and re-read it only when the
//! cached value says the ring is empty (consumer) or too full (producer), so a busy ring costs one
//! shared-cache-line read per batch, not per entry.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

/// The mapping of one ring, unmapped on drop.
struct Mapping {
    base: *mut u8,
    len: usize,
}

impl Mapping {
    /// One of a socket's rings, at the page offset that names it.
    fn ring(fd: &OwnedFd, len: usize, pgoff: u64) -> io::Result<Mapping> {
        let (prot, flags) = (libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_POPULATE);
        // SAFETY: a fresh mapping chosen by the kernel; we keep the pointer only while it lives.
        let base = unsafe { libc::mmap(ptr::null_mut(), len, prot, flags, fd.as_raw_fd(), pgoff as libc::off_t) };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { base: base.cast(), len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: exactly what mmap returned; the owner holds no pointers into it past this.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

// SAFETY: a mapping is owned by one port and only touched through `&mut` of that port; moving it
// to another thread moves that sole access.
unsafe impl Send for Mapping {}

/// Where a ring's parts lie within its mapping (from XDP_MMAP_OFFSETS).
#[derive(Clone, Copy)]
pub(super) struct RingLayout {
    pub producer: u64,
    pub consumer: u64,
    pub flags: u64,
    pub desc: u64,
}

impl From<libc::xdp_ring_offset> for RingLayout {
    fn from(o: libc::xdp_ring_offset) -> RingLayout {
        RingLayout { producer: o.producer, consumer: o.consumer, flags: o.flags, desc: o.desc }
    }
}

/// A mapped ring of `size` entries of `T`.
struct Ring<T> {
    /// Held for the pointers below, which point into it.
    _map: Mapping,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    entries: *mut T,
    mask: u32,
}

impl<T: Copy> Ring<T> {
    fn map(fd: &OwnedFd, layout: RingLayout, size: u32, pgoff: u64) -> io::Result<Ring<T>> {
        let len = layout.desc as usize + size as usize * size_of::<T>();
        let map = Mapping::ring(fd, len, pgoff)?;
        let at = |offset: u64| {
            // SAFETY: the kernel's offsets lie inside the ring it sized for `size` entries.
            unsafe { map.base.add(offset as usize) }
        };
        Ok(Ring {
            producer: at(layout.producer).cast(),
            consumer: at(layout.consumer).cast(),
            flags: at(layout.flags).cast(),
            entries: at(layout.desc).cast(),
            mask: size - 1,
            _map: map,
        })
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: a 4-byte aligned index inside the live mapping, shared with the kernel, which
        // accesses it atomically too.
        unsafe { &*self.producer }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { &*self.consumer }
    }

    fn entry(&self, index: u32) -> *mut T {
        // SAFETY: masked into the ring's entry array.
        unsafe { self.entries.add((index & self.mask) as usize) }
    }

    fn size(&self) -> u32 {
        self.mask + 1
    }
}

// SAFETY: see Mapping; the raw pointers all point into the ring's own mapping.
unsafe impl<T> Send for Ring<T> {}

/// Our side of a ring we fill (fill, tx).
pub(super) struct Producer<T> {
    ring: Ring<T>,
    /// The next entry we write.
    head: u32,
    /// The kernel's consumer index as last read.
    cached_consumer: u32,
}

impl<T: Copy> Producer<T> {
    pub(super) fn map(fd: &OwnedFd, layout: RingLayout, size: u32, pgoff: u64) -> io::Result<Producer<T>> {
        Ok(Producer { ring: Ring::map(fd, layout, size, pgoff)?, head: 0, cached_consumer: 0 })
    }

    /// Free entries, at most `want` (re-reads the kernel's index only if the cache says fewer).
    pub(super) fn free(&mut self, want: u32) -> u32 {
        let size = self.ring.size();
        let mut free = size - self.head.wrapping_sub(self.cached_consumer);
        if free < want {
            self.cached_consumer = self.ring.consumer().load(Ordering::Acquire);
            free = size - self.head.wrapping_sub(self.cached_consumer);
        }
        free.min(want)
    }

    /// Writes the `i`-th entry after the published ones; `i` must be below what `free` allowed.
    pub(super) fn write(&mut self, i: u32, value: T) {
        // SAFETY: the entry is free (the kernel consumed it), so only we access it.
        unsafe { ptr::write_volatile(self.ring.entry(self.head.wrapping_add(i)), value) };
    }

    /// Hands the next `n` written entries to the kernel.
    pub(super) fn submit(&mut self, n: u32) {
        self.head = self.head.wrapping_add(n);
        self.ring.producer().store(self.head, Ordering::Release);
    }

    /// Entries handed over that the kernel has not taken yet (a fresh read of its index).
    pub(super) fn pending(&self) -> u32 {
        self.head.wrapping_sub(self.ring.consumer().load(Ordering::Acquire))
    }

    /// The kernel asks for a syscall before it looks at this ring again (XDP_USE_NEED_WAKEUP).
    pub(super) fn needs_wakeup(&self) -> bool {
        // SAFETY: as for `Ring::producer`.
        unsafe { &*self.ring.flags }.load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }
}

/// Our side of a ring the kernel fills (rx, completion).
pub(super) struct Consumer<T> {
    ring: Ring<T>,
    /// The next entry we read.
    tail: u32,
    /// The kernel's producer index as last read.
    cached_producer: u32,
}

impl<T: Copy> Consumer<T> {
    pub(super) fn map(fd: &OwnedFd, layout: RingLayout, size: u32, pgoff: u64) -> io::Result<Consumer<T>> {
        Ok(Consumer { ring: Ring::map(fd, layout, size, pgoff)?, tail: 0, cached_producer: 0 })
    }

    /// Entries ready to read, at most `max` (re-reads the kernel's index only when the cache is
    /// used up).
    pub(super) fn available(&mut self, max: u32) -> u32 {
        let mut ready = self.cached_producer.wrapping_sub(self.tail);
        if ready == 0 {
            self.cached_producer = self.ring.producer().load(Ordering::Acquire);
            ready = self.cached_producer.wrapping_sub(self.tail);
        }
        ready.min(max)
    }

    /// The `i`-th ready entry; `i` must be below what `available` returned.
    pub(super) fn read(&self, i: u32) -> T {
        // SAFETY: the kernel published the entry and does not touch it until we release it.
        unsafe { ptr::read_volatile(self.ring.entry(self.tail.wrapping_add(i))) }
    }

    /// Gives the next `n` read entries back to the kernel.
    pub(super) fn release(&mut self, n: u32) {
        self.tail = self.tail.wrapping_add(n);
        self.ring.consumer().store(self.tail, Ordering::Release);
    }
}
