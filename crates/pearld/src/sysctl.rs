//! Kernel settings of a VR's namespace, written to /proc/sys by a thread that entered the
//! namespace. Not `ip netns exec … sysctl`: that copies every mount of the host, and each VR's
//! namespace is one, so making N VRs that way costs O(N²).

use std::fs::File;
use std::os::fd::AsRawFd;

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

/// Writes `settings` in order in namespace `ns`; the error names the namespace and the key.
pub fn write(ns: &str, settings: &[Setting<'_>]) -> Result<(), String> {
    let jobs: Vec<(String, String)> = settings.iter().map(|s| (format!("/proc/sys/{}", s.key.join("/")), s.value.clone())).collect();
    let ns = ns.to_owned();
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let netns = File::open(format!("/run/netns/{ns}")).map_err(|e| format!("namespace {ns}: {e}"))?;
                // SAFETY: setns changes only this short-lived thread's network namespace.
                if unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(format!("namespace {ns}: setns: {}", std::io::Error::last_os_error()));
                }
                for (path, value) in &jobs {
                    let key = path.trim_start_matches("/proc/sys/").replace('/', ".");
                    std::fs::write(path, value).map_err(|e| format!("{key}={value}: {e}"))?;
                }
                Ok(())
            })
            .join()
            .unwrap_or_else(|_| Err(format!("namespace {ns}: the sysctl thread panicked")))
    })
}
