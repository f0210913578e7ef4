//! Kernel settings of a VR's namespace, written to /proc/sys from inside it
//! (`pearl_vrproc::in_netns`). Not `ip netns exec … sysctl`: that copies every mount of the
//! host, and each VR's namespace is one, so making N VRs that way costs O(N²).

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd};

/// One setting: its key as path components under /proc/sys (an interface name may hold a dot,
/// so keys are not dotted strings), and its value.
pub struct Setting<'a> {
    pub key: Vec<&'a str>,
    pub value: String,
}

impl<'a> Setting<'a> {
    /// A setting whose dotted key names no interface (`net.ipv4.ip_forward`).
    pub fn dotted(key: &'a str, value: impl ToString) -> Setting<'a> {
        Setting { key: key.split('.').collect(), value: value.to_string() }
    }

    /// `net.ipv4.conf.DEVICE.NAME` (or ipv6).
    pub fn conf(family: &'a str, device: &'a str, name: &'a str, value: impl ToString) -> Setting<'a> {
        Setting { key: vec!["net", family, "conf", device, name], value: value.to_string() }
    }
}

/// A namespace's `/proc/sys/net/ipv4` and `/proc/sys/net/ipv6`, opened from inside it. The
/// kernel finds a namespace's family directory among every namespace's (a lookup in time linear
/// in the number of VRs, under a lock), while what lies below it is the namespace's own: a VR
/// being set up looks them up once, and writes below them from any thread.
pub struct Dirs {
    ipv4: File,
    ipv6: File,
}

/// Why a namespace's settings could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SysctlError {
    /// /proc/sys/net: ERROR (the namespace's directories did not open)
    #[error("/proc/sys/net: {0}")]
    Dirs(io::Error),
    /// KEY=VALUE: ERROR (the kernel refused the setting, or has no such key)
    #[error("{key}={value}: {error}")]
    Setting { key: String, value: String, error: io::Error },
}

impl Dirs {
    pub fn open(ns: &str) -> Result<Dirs, SysctlError> {
        pearl_vrproc::in_netns(ns, Dirs::here).map_err(SysctlError::Dirs)
    }

    /// The calling thread's namespace's.
    pub fn here() -> io::Result<Dirs> {
        Ok(Dirs { ipv4: File::open("/proc/sys/net/ipv4")?, ipv6: File::open("/proc/sys/net/ipv6")? })
    }

    /// Writes `settings` (all under `net.ipv4` or `net.ipv6`) in order; the error names the key.
    pub fn write(&self, settings: &[Setting<'_>]) -> Result<(), SysctlError> {
        for s in settings {
            let at = |error: io::Error| SysctlError::Setting { key: s.key.join("."), value: s.value.clone(), error };
            let dir = match s.key.get(..2) {
                Some(["net", "ipv4"]) => &self.ipv4,
                Some(["net", "ipv6"]) => &self.ipv6,
                _ => return Err(at(io::Error::new(io::ErrorKind::InvalidInput, "not a net.ipv4 or net.ipv6 setting"))),
            };
            let mut f = open_at(dir, &s.key[2..].join("/")).map_err(at)?;
            f.write_all(s.value.as_bytes()).map_err(at)?;
        }
        Ok(())
    }
}

/// Opens `path` under directory `dir` for writing.
fn open_at(dir: &File, path: &str) -> io::Result<File> {
    let c = CString::new(path).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in a setting's key"))?;
    // SAFETY: a valid directory descriptor and NUL-terminated path; the result is a fresh fd.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}
