//! Asking for memory before it is needed. With thousands of VRs, each packet of a batch may
//! belong to another VR whose state (view, counters, share account, next hops) is cold; loading
//! every packet's lines first, before any stage reads them, lets their misses overlap instead of
//! stalling one after the other.

/// Starts loading every cache line of `*x`.
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    prefetch_bytes((x as *const T).cast(), core::mem::size_of::<T>());
}

/// Starts loading every cache line of the `len` bytes at `p` (a frame another CPU just wrote, a
/// trace beyond the caches, so that copying it a little later does not stall), as
/// [`pearl_lookup::prefetch::lines`] counts them.
#[inline(always)]
pub fn prefetch_bytes(p: *const u8, len: usize) {
    pearl_lookup::prefetch::lines(p, len);
}
