//! TAP devices for the test namespaces, made here rather than with the data plane's port so that
//! routed's tests need no data plane: a TAP held open has a carrier, as a VR interface does.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Makes TAP `name` in namespace `netns`; it goes when the descriptor closes.
pub fn open_tap(netns: &str, name: &str) -> io::Result<OwnedFd> {
    pearl_vrproc::in_netns(netns, || {
        // SAFETY: opening a device node with a static NUL-terminated path.
        let raw = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` was just opened and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ifreq is plain data; all zeroes is a valid value.
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
            *dst = src as libc::c_char;
        }
        ifr.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and updates the ifreq we pass, which outlives the call.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut ifr) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(fd)
    })
    .map_err(|e| io::Error::new(e.kind(), format!("tap {name}: {e}")))
}
