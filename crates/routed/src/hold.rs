//! The hold-down switch. pearld turns it from whatever thread learns that a routing daemon died
//! (zebra withdraws that daemon's routes from the kernel milliseconds later) and turns it back
//! once the daemon has relearnt them; routed's thread follows at its next wake-up.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A handle on one VR's hold-down; clones turn the same switch. See [`crate::Routed::set_hold`].
#[derive(Clone)]
pub struct HoldSwitch(Arc<Shared>);

struct Shared {
    on: AtomicBool,
    /// Written after each change, so that routed's thread wakes from poll(2) and looks.
    wake: OwnedFd,
}

impl HoldSwitch {
    pub(crate) fn new() -> io::Result<HoldSwitch> {
        Ok(HoldSwitch(Arc::new(Shared { on: AtomicBool::new(false), wake: eventfd()? })))
    }

    /// Holds (`true`) or releases (`false`). One atomic store and one eventfd write: cheap
    /// enough for a supervisor's callback or a signal-handling thread.
    pub fn set(&self, on: bool) {
        self.0.on.store(on, Ordering::Release);
        notify(&self.0.wake);
    }

    /// Whether a hold is asked for now; also consumes the wake-up.
    pub(crate) fn wanted(&self) -> bool {
        let mut n = [0u8; 8];
        // SAFETY: reads at most 8 bytes into `n` from our own non-blocking eventfd.
        unsafe { libc::read(self.0.wake.as_raw_fd(), n.as_mut_ptr().cast(), n.len()) };
        self.0.on.load(Ordering::Acquire)
    }

    pub(crate) fn wake_fd(&self) -> &OwnedFd {
        &self.0.wake
    }
}

pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain eventfd(2) call.
    let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if raw < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("eventfd: {e}")));
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

pub(crate) fn notify(fd: &OwnedFd) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: writes 8 bytes to an eventfd; a full counter (EAGAIN) still wakes the reader.
    unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
}
