//! Work inside a VR's network namespace without moving the caller: a short-lived thread enters
//! `/run/netns/NAME` (as `ip netns add` makes it) and runs the work there. What it opens (a
//! /proc file, a socket) keeps that namespace when used from any thread afterwards.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Runs `work` in network namespace `netns`; errors name the namespace's path.
pub fn in_netns<T: Send>(netns: &str, work: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    let path = format!("/run/netns/{netns}");
    let ns = open(&path)?;
    std::thread::scope(|s| {
        s.spawn(|| {
            enter_opened(&ns, &path)?;
            work().map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other(format!("{path}: the thread working in the namespace panicked"))))
    })
}

/// Moves the calling thread into network namespace `netns`, for a thread of the caller's own
/// that visits several namespaces in turn; errors name the namespace's path.
pub(crate) fn enter(netns: &str) -> io::Result<()> {
    let path = format!("/run/netns/{netns}");
    enter_opened(&open(&path)?, &path)
}

fn open(path: &str) -> io::Result<File> {
    File::open(path).map_err(|e| io::Error::new(e.kind(), format!("open {path}: {e}")))
}

fn enter_opened(ns: &File, path: &str) -> io::Result<()> {
    // SAFETY: setns changes only the calling thread's network namespace.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("setns({path}): {e}")));
    }
    Ok(())
}
