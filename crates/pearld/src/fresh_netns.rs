//! A network namespace made before the VR that will have it: unnamed, kept alive by its nsfs
//! descriptor, with its /proc/sys/net directories already looked up (a lookup in time linear in
//! the number of namespaces on the node, as is making the namespace); named when a VR takes it,
//! the way `ip netns add` names one, so that `ip netns` sees no difference. Its loopback is up
//! already. An unnamed one dies with pearld, however pearld ends. A name is removed the way
//! `ip netns del` removes it ([`remove_name`]), so pearld runs no `ip` for namespaces.

use crate::host_mounts::in_starter_mounts;
use crate::netconf::{self, Op};
use crate::sysctl::Dirs;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

const RUN_NETNS: &str = "/run/netns";

pub struct FreshNetns {
    ns: File,
    dirs: Dirs,
}

impl FreshNetns {
    /// Makes one on a short-lived thread, which leaves the namespace when it ends.
    pub fn make() -> io::Result<FreshNetns> {
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: unshare moves only the calling thread, which ends here.
                if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                    let e = io::Error::last_os_error();
                    return Err(io::Error::new(e.kind(), format!("unshare(CLONE_NEWNET): {e}")));
                }
                let ns = File::open("/proc/thread-self/ns/net")?;
                // Every VR's loopback is up; brought up here, its addresses and routes (and
                // the notifications of them, each of which the kernel checks against every
                // namespace a listener hears) cost the VR's creation nothing.
                netconf::apply_here(&[Op::LinkUp { dev: "lo", mac: None, mtu: None }])?;
                Ok(FreshNetns { ns, dirs: Dirs::here()? })
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the thread making a namespace panicked")))
        })
    }

    /// Names it `name` as `ip netns add NAME` would have: an empty file /run/netns/NAME with the
    /// namespace bind-mounted on it. Hands back its /proc/sys/net directories.
    pub fn name(self, name: &str) -> io::Result<Dirs> {
        let path = format!("{RUN_NETNS}/{name}");
        let at = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what} {path}: {e}"));
        let c_path = CString::new(path.as_str()).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let source = CString::new(format!("/proc/self/fd/{}", self.ns.as_raw_fd())).expect("no NUL in a number");
        in_starter_mounts(|| {
            // SAFETY: NUL-terminated path; the descriptor is closed right away.
            let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_RDONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC, 0) };
            if fd < 0 {
                return Err(at("creating", io::Error::last_os_error()));
            }
            // SAFETY: a descriptor just opened, closed once.
            unsafe { libc::close(fd) };
            // SAFETY: NUL-terminated paths, no data.
            if unsafe { libc::mount(source.as_ptr(), c_path.as_ptr(), c"none".as_ptr(), libc::MS_BIND, std::ptr::null()) } != 0 {
                let e = at("bind-mounting the namespace on", io::Error::last_os_error());
                // SAFETY: NUL-terminated path.
                unsafe { libc::unlink(c_path.as_ptr()) };
                return Err(e);
            }
            Ok(())
        })?;
        Ok(self.dirs)
    }
}

/// Removes the name `name` as `ip netns del NAME` does: the bind mount detached (the namespace
/// lives on while a process or descriptor holds it), then the file unlinked. A name that was
/// never mounted is still unlinked, as `ip` does.
pub fn remove_name(name: &str) -> io::Result<()> {
    let path = format!("{RUN_NETNS}/{name}");
    let c_path = CString::new(path.as_str()).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    in_starter_mounts(|| {
        // SAFETY: NUL-terminated path. Its failure (not mounted) does not stop the unlink.
        unsafe { libc::umount2(c_path.as_ptr(), libc::MNT_DETACH) };
        // SAFETY: NUL-terminated path.
        if unsafe { libc::unlink(c_path.as_ptr()) } != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("removing {path}: {e}")));
        }
        Ok(())
    })
}

/// Leaves /run/netns as `ip netns add` does before its first name: a directory that is a mount
/// point of its own, shared, so that a name removed in one mount namespace is removed in all
/// (and its namespace freed). Done once, before VRs are made: two of these at once could each
/// mount the directory on itself.
pub fn prepare_names() -> io::Result<()> {
    let dir = CString::new(RUN_NETNS).expect("no NUL");
    in_starter_mounts(|| {
        // SAFETY: NUL-terminated path; an existing directory is fine.
        if unsafe { libc::mkdir(dir.as_ptr(), 0o755) } != 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(io::Error::new(e.kind(), format!("mkdir {RUN_NETNS}: {e}")));
            }
        }
        let mut made_mount_point = false;
        // SAFETY: mount(2) with NUL-terminated paths and no data.
        while unsafe { libc::mount(c"".as_ptr(), dir.as_ptr(), c"none".as_ptr(), libc::MS_SHARED | libc::MS_REC, std::ptr::null()) } != 0 {
            let e = io::Error::last_os_error();
            // EINVAL: not a mount point yet.
            if e.raw_os_error() != Some(libc::EINVAL) || made_mount_point {
                return Err(io::Error::new(e.kind(), format!("making {RUN_NETNS} shared: {e}")));
            }
            // SAFETY: mount(2) with NUL-terminated strings that outlive the call and no data.
            if unsafe { libc::mount(dir.as_ptr(), dir.as_ptr(), c"none".as_ptr(), libc::MS_BIND | libc::MS_REC, std::ptr::null()) } != 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(e.kind(), format!("bind-mounting {RUN_NETNS} on itself: {e}")));
            }
            made_mount_point = true;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// Makes and names a namespace as pearld does, sees `ip netns` find and enter it, then
    /// removes the name; root only (skipped otherwise).
    #[test]
    fn a_named_namespace_is_the_one_made_and_not_ours() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let fresh = FreshNetns::make().expect("made");
        let made = fresh.ns.metadata().expect("stat").ino();
        assert_ne!(made, std::fs::metadata("/proc/self/ns/net").expect("stat").ino(), "a new namespace, not pearld's");
        prepare_names().expect("/run/netns ready");
        let name = format!("pearld-unit-{}", std::process::id());
        fresh.name(&name).expect("named");
        let path = format!("{RUN_NETNS}/{name}");
        let named = std::fs::metadata(&path).map(|m| m.ino());
        let ip = |args: &[&str]| std::process::Command::new("ip").args(args).output().expect("ip");
        let listed = String::from_utf8_lossy(&ip(&["netns", "list"]).stdout).lines().any(|l| l.split_whitespace().next() == Some(&name));
        let inside = ip(&["netns", "exec", &name, "stat", "-L", "-c", "%i", "/proc/self/ns/net"]);
        let removed = remove_name(&name);
        assert_eq!(named.expect("stat"), made);
        assert!(listed, "`ip netns list` shows {name}");
        assert_eq!(String::from_utf8_lossy(&inside.stdout).trim(), made.to_string(), "`ip netns exec` enters the namespace made");
        removed.expect("removed");
        assert!(!std::path::Path::new(&path).exists());
        assert!(!String::from_utf8_lossy(&ip(&["netns", "list"]).stdout).contains(&name), "`ip netns list` no longer shows it");
        let again = remove_name(&name).expect_err("a second removal finds nothing");
        assert!(again.to_string().starts_with(&format!("removing {path}: ")), "{again}");
    }
}
