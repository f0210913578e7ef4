//! Read-copy-update for tables that data-plane workers read while a control thread changes them.
//!
//! Hand-written rather than crossbeam-epoch or arc-swap because of what a read costs: here a
//! worker pays two plain stores per batch of packets, however many tables it reads, where
//! epoch pinning pays an atomic read-modify-write and a fence per pin, and arc-swap a reference
//! count or a debt-slot exchange per load. The writer's side (a spin on each reader's counter)
//! is rare and may be slow.
//!
//! Readers never block and never write shared state other than their own sequence counter: a
//! worker enters a read section once per packet batch (two plain stores), loads the current
//! version of any number of tables, and leaves. A writer publishes a whole new version
//! with one atomic pointer swap and then waits for a grace period — until every reader that was
//! inside a read section when the swap happened has left it — before it frees or reuses what the
//! old version referenced. Readers therefore see either the old or the new version, never a mix.

use std::marker::PhantomData;
use std::sync::atomic::{compiler_fence, fence, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Whether the kernel's `membarrier(PRIVATE_EXPEDITED)` is registered for this process.
///
/// A reader must publish "I am inside" before it loads a table pointer, and on x86 a store may
/// be overtaken by a later load unless a full fence sits between them. A fence per packet batch
/// stalls the worker until its outstanding cache misses land, which costs lookups dearly. With
/// membarrier the writer instead forces a full barrier on every CPU running one of our threads
/// (liburcu's "memb" flavour), and readers need only a compiler fence.
fn asymmetric_fences() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| {
        // Miri has no membarrier: under it the readers pay the full fence, which is what
        // its checks of the orderings then see.
        if cfg!(miri) {
            return false;
        }
        const QUERY: libc::c_long = 0;
        const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
        const REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;
        // SAFETY: membarrier takes integer arguments only.
        unsafe {
            let supported = libc::syscall(libc::SYS_membarrier, QUERY, 0, 0);
            supported > 0
                && supported & PRIVATE_EXPEDITED != 0
                && libc::syscall(libc::SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0
        }
    })
}

/// The writer's half of the asymmetric fence: a full barrier on every CPU running this process.
fn heavy_fence() {
    if asymmetric_fences() {
        const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
        // SAFETY: as above; registration succeeded, so the command cannot fail.
        unsafe { libc::syscall(libc::SYS_membarrier, PRIVATE_EXPEDITED, 0, 0) };
    } else {
        fence(Ordering::SeqCst);
    }
}

/// The reader's half.
#[inline(always)]
fn light_fence(asymmetric: bool) {
    if asymmetric {
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// One reader's sequence counter; odd while inside a read section. Padded to its own cache
/// line so readers never share a line with each other.
#[repr(align(128))]
struct ReaderSlot {
    seq: AtomicU64,
}

/// The set of readers a writer waits for. One per process is typical; every table whose
/// readers are the data-plane workers shares it.
#[derive(Default)]
pub struct RcuDomain {
    readers: Mutex<Vec<Arc<ReaderSlot>>>,
}

impl RcuDomain {
    pub fn new() -> Arc<RcuDomain> {
        Arc::new(RcuDomain::default())
    }

    /// Registers a reader (one per worker thread).
    pub fn register(self: &Arc<Self>) -> RcuReader {
        let slot = Arc::new(ReaderSlot { seq: AtomicU64::new(0) });
        self.readers.lock().unwrap().push(Arc::clone(&slot));
        RcuReader { slot, domain: Arc::clone(self), asymmetric: asymmetric_fences() }
    }

    /// Waits until every reader that was inside a read section on entry has left it. Anything
    /// unpublished before the call is unreachable to readers afterwards.
    pub fn synchronize(&self) {
        heavy_fence();
        let readers = self.readers.lock().unwrap().clone();
        for slot in readers {
            let seen = slot.seq.load(Ordering::Acquire);
            if seen % 2 == 0 {
                continue;
            }
            let mut spins = 0u32;
            while slot.seq.load(Ordering::Acquire) == seen {
                spins += 1;
                if spins < 1000 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }
}

/// A registered reader; `read()` opens a read section.
pub struct RcuReader {
    slot: Arc<ReaderSlot>,
    domain: Arc<RcuDomain>,
    asymmetric: bool,
}

impl RcuReader {
    /// Enters a read section; what is loaded through the guard stays valid until it drops.
    #[inline]
    pub fn read(&mut self) -> ReadGuard<'_> {
        let seq = self.slot.seq.load(Ordering::Relaxed);
        // Release, not Relaxed (a plain store on x86 either way): a writer that waited for the
        // previous section may see this store rather than that section's exit, and must then
        // still synchronise with everything the section read (Miri reported the race).
        self.slot.seq.store(seq + 1, Ordering::Release);
        // Orders the store above before the pointer loads that follow (with the writer's
        // `heavy_fence`): either the writer sees this reader inside, or this reader sees the
        // writer's new pointer.
        light_fence(self.asymmetric);
        ReadGuard { slot: &self.slot, seq: seq + 2 }
    }
}

impl Drop for RcuReader {
    fn drop(&mut self) {
        self.domain.readers.lock().unwrap().retain(|s| !Arc::ptr_eq(s, &self.slot));
    }
}

/// Proof of an open read section.
pub struct ReadGuard<'r> {
    slot: &'r ReaderSlot,
    seq: u64,
}

impl Drop for ReadGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.slot.seq.store(self.seq, Ordering::Release);
    }
}

/// A pointer to the current version of a `T`, swapped whole by the writer.
pub struct RcuCell<T> {
    ptr: AtomicPtr<T>,
    _owns: PhantomData<Box<T>>,
}

// SAFETY: readers on other threads get `&T`; the writer moves `Box<T>` in and out.
unsafe impl<T: Send + Sync> Send for RcuCell<T> {}
// SAFETY: as for the impl above.
unsafe impl<T: Send + Sync> Sync for RcuCell<T> {}

impl<T> RcuCell<T> {
    pub fn new(value: T) -> RcuCell<T> {
        RcuCell { ptr: AtomicPtr::new(Box::into_raw(Box::new(value))), _owns: PhantomData }
    }

    /// The current version, valid while the guard lives.
    #[inline]
    pub fn load<'a>(&'a self, _guard: &'a ReadGuard<'_>) -> &'a T {
        // SAFETY: the pointer came from Box::into_raw and is only freed by `replace` after a
        // grace period, which cannot end while this guard's read section is open.
        unsafe { &*self.ptr.load(Ordering::Acquire) }
    }

    /// Publishes `value`, waits for the grace period, and hands back the old version.
    pub fn replace(&self, value: T, domain: &RcuDomain) -> T {
        let old = self.ptr.swap(Box::into_raw(Box::new(value)), Ordering::SeqCst);
        domain.synchronize();
        // SAFETY: no reader can still hold `old` after the grace period.
        *unsafe { Box::from_raw(old) }
    }

    /// The current version, for the single writer (which never races its own `replace`).
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self` excludes every reader borrowing through `load`.
        unsafe { &mut *self.ptr.load(Ordering::Relaxed) }
    }
}

impl<T> Drop for RcuCell<T> {
    fn drop(&mut self) {
        // SAFETY: readers borrow the cell, so none can outlive it.
        drop(unsafe { Box::from_raw(self.ptr.load(Ordering::Relaxed)) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// Two fields that the writer always changes together: a reader must never see them differ.
    struct Pair {
        a: u64,
        b: u64,
    }

    #[test]
    fn readers_never_see_a_half_published_version_or_a_freed_one() {
        let domain = RcuDomain::new();
        let cell = Arc::new(RcuCell::new(Pair { a: 0, b: 0 }));
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (cell, stop, mut reader) = (cell.clone(), stop.clone(), domain.register());
                std::thread::spawn(move || {
                    let mut seen = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let g = reader.read();
                        let p = cell.load(&g);
                        assert_eq!(p.a, p.b, "torn version");
                        assert!(p.a >= seen, "went back in time");
                        seen = p.a;
                    }
                    seen
                })
            })
            .collect();
        // Miri (scripts/test.sh) runs each step a thousand times slower: fewer versions, the same races.
        let versions = if cfg!(miri) { 40 } else { 2000u64 };
        for i in 1..=versions {
            let old = cell.replace(Pair { a: i, b: i }, &domain);
            assert_eq!(old.a, i - 1);
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            assert!(r.join().unwrap() <= versions);
        }
    }

    #[test]
    fn synchronize_waits_for_an_open_read_section() {
        let domain = RcuDomain::new();
        let mut reader = domain.register();
        let (tx, rx) = std::sync::mpsc::channel();
        let guard = reader.read();
        let d = domain.clone();
        let waiter = std::thread::spawn(move || {
            d.synchronize();
            tx.send(()).unwrap();
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(rx.try_recv().is_err(), "grace period ended while a reader was inside");
        drop(guard);
        rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
        waiter.join().unwrap();
    }
}
