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
/// trace beyond the caches, so that copying it a little later does not stall). The lines are
/// those the bytes touch: a struct that starts mid-line ends in one more line than its size
/// says.
#[inline(always)]
pub fn prefetch_bytes(p: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let into_line = p as usize & 63;
        let first = p.wrapping_sub(into_line);
        for line in (0..into_line + len.max(1)).step_by(64) {
            // SAFETY: prefetching is a hint; it never faults, whatever the address.
            unsafe { core::arch::x86_64::_mm_prefetch(first.wrapping_add(line).cast(), core::arch::x86_64::_MM_HINT_T0) };
        }
    }
}
