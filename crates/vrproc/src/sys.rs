//! The few system calls std does not wrap: pidfds (which name one process, never a recycled
//! pid), poll, and user lookup.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Signals the process behind `pidfd`; a process that has already exited is not an error.
pub fn pidfd_signal(pidfd: &OwnedFd, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: a valid pidfd, a signal number, no siginfo, no flags.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), signal, std::ptr::null::<libc::siginfo_t>(), 0) };
    match r {
        0 => Ok(()),
        _ => match io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
            e => Err(e),
        },
    }
}

/// Waits until one of `fds` is readable (a pidfd is readable once its process has exited) or
/// `timeout` passes (`None`: forever). Returns which fds are ready.
pub fn poll_readable(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<libc::pollfd> = fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as libc::c_int);
    loop {
        // SAFETY: `pfds` is a valid array of `pfds.len()` pollfd structures.
        let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
        if r >= 0 {
            return Ok(pfds.iter().map(|p| p.revents != 0).collect());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether the process behind `pidfd` has exited.
pub fn exited(pidfd: &OwnedFd, timeout: Duration) -> io::Result<bool> {
    Ok(poll_readable(&[pidfd.as_raw_fd()], Some(timeout))?[0])
}

/// uid and gid of the user `name` (and its primary group).
pub fn user_ids(name: &str) -> io::Result<(u32, u32)> {
    let c = CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in user name"))?;
    let mut buf = vec![0u8; 4096];
    // SAFETY: plain-old-data output structure, filled in by getpwnam_r.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer refers to live storage of the stated size; getpwnam_r is reentrant.
    let r = unsafe { libc::getpwnam_r(c.as_ptr(), &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut found) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    if found.is_null() {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("no user {name:?} (is FRR installed?)")));
    }
    Ok((pw.pw_uid, pw.pw_gid))
}
