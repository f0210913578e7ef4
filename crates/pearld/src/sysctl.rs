//! Kernel settings of a VR's namespace, written to /proc/sys from inside it
//! (`pearl_vrproc::in_netns`). Not `ip netns exec … sysctl`: that copies every mount of the
//! host, and each VR's namespace is one, so making N VRs that way costs O(N²).

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
    pearl_vrproc::in_netns(ns, || {
        for s in settings {
            std::fs::write(format!("/proc/sys/{}", s.key.join("/")), &s.value)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}={}: {e}", s.key.join("."), s.value)))?;
        }
        Ok(())
    })
    .map_err(|e| e.to_string())
}
