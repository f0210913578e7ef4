//! Asking for memory before it is needed: the one place that turns a byte range into the cache
//! lines it touches, for the FIB's snapshots here and for everything the data plane prefetches.

/// Starts loading every cache line the `len` bytes at `p` touch: a struct that starts mid-line
/// ends in one more line than its size says.
#[inline(always)]
pub fn lines(p: *const u8, len: usize) {
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
