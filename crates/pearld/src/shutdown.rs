//! How pearld ends. SIGTERM and SIGINT (so `systemctl restart` and `stop`, a package upgrade)
//! leave every VR running, its namespace, TAPs, cgroup and daemons, for the next pearld to
//! adopt (live restore, as Docker's); tearing everything down is asked for explicitly,
//! `POST /v1/node/stop` (`pearlctl node stop`), which then stops pearld the same way.

use std::sync::atomic::{AtomicBool, Ordering};

static TEAR_DOWN: AtomicBool = AtomicBool::new(false);

/// Asks pearld to remove every VR and everything PEARL made, then exit 0: the main thread,
/// waiting for a stop signal, gets one.
pub fn tear_down() {
    TEAR_DOWN.store(true, Ordering::SeqCst);
    // SAFETY: signals this process; every thread but the main one blocks SIGTERM.
    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
}

/// Whether the stop under way was asked to tear everything down.
pub fn tearing_down() -> bool {
    TEAR_DOWN.load(Ordering::SeqCst)
}
