//! Making the cgroup hierarchies visible to pearld. Started by `ip netns exec`, pearld runs in a
//! private mount namespace whose /sys is a fresh sysfs without the cgroup mounts; VR cgroups
//! need them. Mounting the same hierarchies again there gives the very same cgroups (a
//! hierarchy is one tree however often it is mounted), and the private mounts stay private.

use std::ffi::CString;
use std::io;

/// v1 controllers VR limits use, and where they are mounted (as on the host).
const V1: &[&str] = &["cpu", "memory", "pids"];
const ROOT: &str = "/sys/fs/cgroup";

/// Mounts the cgroup hierarchies if none is visible; a no-op where they are.
pub fn ensure_visible() -> io::Result<()> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
    if mountinfo.lines().any(|l| l.contains(" - cgroup ") || l.contains(" - cgroup2 ")) {
        return Ok(());
    }
    mount("tmpfs", ROOT, "tmpfs", "mode=755")?;
    for c in V1 {
        let dir = format!("{ROOT}/{c}");
        std::fs::create_dir_all(&dir)?;
        mount("cgroup", &dir, "cgroup", c)?;
    }
    let unified = format!("{ROOT}/unified");
    std::fs::create_dir_all(&unified)?;
    // The v2 tree is optional (kill-all); without it VR processes are killed one by one.
    let _ = mount("cgroup2", &unified, "cgroup2", "");
    Ok(())
}

fn mount(source: &str, target: &str, fstype: &str, options: &str) -> io::Result<()> {
    let c = |s: &str| CString::new(s).expect("no NUL");
    let (src, tgt, fs, opt) = (c(source), c(target), c(fstype), c(options));
    // SAFETY: all pointers are valid NUL-terminated strings for the duration of the call.
    let rc = unsafe { libc::mount(src.as_ptr(), tgt.as_ptr(), fs.as_ptr(), 0, opt.as_ptr().cast()) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("mount -t {fstype} -o {options} {target}: {e}")));
    }
    Ok(())
}
