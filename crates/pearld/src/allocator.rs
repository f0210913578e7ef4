//! How pearld's heap gives memory back. glibc's defaults keep what a process frees: a heap arena
//! per thread (up to eight per core), and a threshold for mapping large blocks on their own that
//! rises each time such a block is freed, so the next full-table hash map or document copy comes
//! from an arena and stays there. pearld's big, short-lived values (100,000-route maps that
//! regrow after a BGP flap, a whole desired document put through the API) are what a routing daemon
//! makes all day, so its RSS crept with every flap.
//!
//! Measured on the same machine in the same hour (`pearl-bench scale --vrs 4096 --parts node`,
//! and `bench/soak.py --minutes 2`): mimalloc held 199 KiB per VR at 4,096 VRs and grew 6–19 MiB
//! per BGP flap of the soak; glibc tuned as below holds 77 KiB per VR and stays flat, with API
//! creates within 10 % of mimalloc's.

/// Two arenas: the control path's threads allocate rarely and briefly, and every further arena
/// would keep its own freed memory.
const ARENAS: libc::c_int = 2;
/// Blocks from 128 KiB up are mapped on their own and unmapped when freed, whatever was freed
/// before (setting it fixes the threshold glibc would otherwise raise).
const MMAP_THRESHOLD: libc::c_int = 128 << 10;
/// Free memory above 1 MiB at the top of an arena goes back to the kernel.
const TRIM_THRESHOLD: libc::c_int = 1 << 20;

/// Called first in `main`, before any thread exists.
pub fn tune() {
    for (param, value) in [(libc::M_ARENA_MAX, ARENAS), (libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD), (libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD)]
    {
        // SAFETY: mallopt only sets the allocator's parameters; a refusal (0) leaves the default,
        // which costs memory, not correctness.
        unsafe { libc::mallopt(param, value) };
    }
}
