//! The mount namespace of whoever started pearld. Namespace names are bind mounts under
//! /run/netns; made from a private mount namespace (pearld started by `ip netns exec` gets one)
//! they would be visible to pearld alone, so they are made where its starter sees them, and
//! reach pearld's own view by mount propagation.

use std::io;
use std::sync::OnceLock;

/// The mount namespace of the nearest ancestor process outside pearld's own, if pearld runs in
/// a private one; opened once and kept for the life of the process.
pub fn starter_mount_ns() -> Option<i32> {
    static FD: OnceLock<Option<i32>> = OnceLock::new();
    *FD.get_or_init(|| {
        let own = std::fs::read_link("/proc/self/ns/mnt").ok()?;
        let mut pid = std::process::id();
        for _ in 0..16 {
            pid = parent_of(pid)?;
            if pid <= 1 {
                return None;
            }
            let path = format!("/proc/{pid}/ns/mnt");
            if std::fs::read_link(&path).ok()? != own {
                let f = std::fs::File::open(&path).ok()?;
                return Some(std::os::fd::IntoRawFd::into_raw_fd(f));
            }
        }
        None
    })
}

/// Runs `work` where the starter's mounts are: here if pearld shares them, else on a
/// short-lived thread moved into the starter's mount namespace.
pub fn in_starter_mounts<T: Send>(work: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    let Some(fd) = starter_mount_ns() else { return work() };
    std::thread::scope(|s| {
        s.spawn(|| {
            // The kernel refuses to move a thread that shares its root and working directory
            // with others into another mount namespace: this one stops sharing them first.
            // SAFETY: unshare and setns change only the calling thread, which ends after `work`.
            if unsafe { libc::unshare(libc::CLONE_FS) } != 0 || unsafe { libc::setns(fd, libc::CLONE_NEWNS) } != 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(e.kind(), format!("entering the starter's mount namespace: {e}")));
            }
            work()
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the thread working in the starter's mount namespace panicked")))
    })
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; the fields after its last ')' do not.
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()
}
