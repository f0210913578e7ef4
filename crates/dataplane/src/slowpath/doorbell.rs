//! Waking a sleeping consumer without a system call per frame: the consumer arms the doorbell
//! before it sleeps in poll(2) on the eventfd; a producer writes the eventfd only if it finds
//! the doorbell armed, so a busy consumer costs producers one load per batch.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, AtomicBool, Ordering};

pub struct Doorbell {
    fd: OwnedFd,
    armed: AtomicBool,
}

impl Doorbell {
    pub fn new() -> io::Result<Doorbell> {
        // SAFETY: plain eventfd creation; the fd is owned below.
        let raw = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("eventfd: {e}")));
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        Ok(Doorbell { fd: unsafe { OwnedFd::from_raw_fd(raw) }, armed: AtomicBool::new(false) })
    }

    /// The descriptor to poll for POLLIN.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Consumer, before sleeping: after this, re-check for work, then poll.
    pub fn arm(&self) {
        self.armed.store(true, Ordering::Relaxed);
        // Pairs with the producer's fence: either it sees `armed`, or we see its frames.
        fence(Ordering::SeqCst);
    }

    /// Consumer, after waking (or deciding not to sleep).
    pub fn disarm(&self) {
        self.armed.store(false, Ordering::Relaxed);
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into `v`; EAGAIN (nothing rung) is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    /// Producer, after publishing.
    #[inline]
    pub fn ring_if_armed(&self) {
        fence(Ordering::SeqCst);
        if self.armed.load(Ordering::Relaxed) && self.armed.swap(false, Ordering::Relaxed) {
            let one = 1u64;
            // SAFETY: writes 8 bytes from `one` to our eventfd.
            unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: RawFd) -> bool {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, no wait.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    #[test]
    fn rings_only_when_armed() {
        let d = Doorbell::new().unwrap();
        d.ring_if_armed();
        assert!(!readable(d.fd()), "an unarmed doorbell stays silent");
        d.arm();
        d.ring_if_armed();
        assert!(readable(d.fd()));
        d.disarm();
        assert!(!readable(d.fd()), "disarm clears the eventfd");
        d.ring_if_armed();
        assert!(!readable(d.fd()), "one ring per arming");
    }
}
