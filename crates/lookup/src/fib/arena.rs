//! Word storage for trie nodes, owned by the writer and read concurrently by lookups.
//!
//! Readers reach blocks only through a published root, and a block is never written while it is
//! reachable: new blocks go to free space, replaced ones are retired and reused only after a
//! grace period. Storage therefore needs no locks; growing it copies into a fresh allocation
//! and retires the old one the same way.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::collections::HashMap;
use std::ptr::NonNull;

pub struct Arena {
    base: NonNull<u32>,
    capacity: usize,
    /// High-water mark: words below it are used or free blocks.
    top: usize,
    /// Words in blocks currently in use.
    live: usize,
    /// Free blocks by exact length in words; sizes repeat, so exact fits reuse well.
    free: HashMap<usize, Vec<u32>>,
    /// Blocks replaced since the last grace period: `(offset, length)`.
    retired: Vec<(u32, usize)>,
    /// Storage replaced by growth since the last grace period.
    retired_storage: Vec<(NonNull<u32>, usize)>,
}

// SAFETY: the arena hands readers raw pointers whose validity the RCU protocol guarantees.
unsafe impl Send for Arena {}
// SAFETY: as for the impl above.
unsafe impl Sync for Arena {}

const INITIAL_WORDS: usize = 256;
/// Offsets must leave the entry's child bit free.
const MAX_WORDS: usize = 1 << 31;

impl Arena {
    pub fn new() -> Arena {
        Arena {
            base: allocate(INITIAL_WORDS),
            capacity: INITIAL_WORDS,
            top: 0,
            live: 0,
            free: HashMap::new(),
            retired: Vec::new(),
            retired_storage: Vec::new(),
        }
    }

    pub fn base(&self) -> *const u32 {
        self.base.as_ptr()
    }

    /// The words from `offset` on, for the writer (nobody writes a reachable block).
    pub fn from(&self, offset: u32) -> &[u32] {
        // SAFETY: offsets below `top` lie in the allocation; writes only target unreachable
        // blocks, never one the writer is reading.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(offset as usize), self.top - offset as usize) }
    }

    /// Stores a new block and returns its offset; `fill` writes exactly `len` words.
    pub fn insert(&mut self, len: usize, fill: impl FnOnce(&mut [u32])) -> u32 {
        let offset = match self.free.get_mut(&len).and_then(Vec::pop) {
            Some(o) => o,
            None => {
                if self.top + len > self.capacity {
                    self.grow(self.top + len);
                }
                let o = self.top as u32;
                self.top += len;
                o
            }
        };
        // SAFETY: the block is free (unreachable by readers) and inside the allocation.
        let block = unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr().add(offset as usize), len) };
        fill(block);
        self.live += len;
        offset
    }

    /// Marks a block unreachable from the next published root; reused after a grace period.
    pub fn retire(&mut self, offset: u32, len: usize) {
        self.retired.push((offset, len));
    }

    /// Called once readers can no longer reach anything retired.
    pub fn grace_period_elapsed(&mut self) {
        for (offset, len) in self.retired.drain(..) {
            self.live -= len;
            self.free.entry(len).or_default().push(offset);
        }
        for (ptr, cap) in self.retired_storage.drain(..) {
            release(ptr, cap);
        }
    }

    /// Bytes allocated.
    pub fn allocated_bytes(&self) -> usize {
        self.capacity * 4
    }

    /// Bytes in blocks reachable from the current root.
    pub fn live_bytes(&self) -> usize {
        self.live * 4
    }

    fn grow(&mut self, need: usize) {
        let capacity = need.max(self.capacity * 2).min(MAX_WORDS);
        assert!(need <= capacity, "FIB arena exceeds 2^31 words");
        let fresh = allocate(capacity);
        // SAFETY: both allocations hold at least `top` words and do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(self.base.as_ptr(), fresh.as_ptr(), self.top) };
        self.retired_storage.push((self.base, self.capacity));
        self.base = fresh;
        self.capacity = capacity;
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for (ptr, cap) in self.retired_storage.drain(..) {
            release(ptr, cap);
        }
        release(self.base, self.capacity);
    }
}

/// Storage of 2 MiB and more is aligned to and advised for transparent huge pages: a full table
/// spans thousands of 4 KiB pages, and TLB misses would add to every lookup.
const HUGE_PAGE: usize = 2 << 20;

fn layout(words: usize) -> Layout {
    let bytes = words * 4;
    let align = if bytes >= HUGE_PAGE { HUGE_PAGE } else { 64 };
    Layout::from_size_align(bytes, align).expect("arena size fits a Layout")
}

fn allocate(words: usize) -> NonNull<u32> {
    let layout = layout(words);
    // Not zeroed: nothing reads a word before `insert` fills it, and zeroing a huge-page-aligned
    // allocation is a memset over all of it (the allocator cannot hand out known-zero pages at
    // that alignment), which made growing the arena a fifth of the CPU of mirroring a full table.
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { alloc(layout) };
    let Some(ptr) = NonNull::new(ptr as *mut u32) else { handle_alloc_error(layout) };
    if layout.align() == HUGE_PAGE {
        // SAFETY: advising our own mapping; failure only means small pages.
        unsafe { libc::madvise(ptr.as_ptr().cast(), layout.size(), libc::MADV_HUGEPAGE) };
    }
    ptr
}

fn release(ptr: NonNull<u32>, words: usize) {
    // SAFETY: `ptr` came from `allocate(words)` and is released once.
    unsafe { dealloc(ptr.as_ptr().cast(), layout(words)) };
}
