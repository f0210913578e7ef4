//! A port's own Linux stack stays off its link: the port interface is pearld's wire, and only
//! the VRs' interfaces (their TAPs) may answer on it. With IPv6 on, the port's kernel stack
//! gives it an EUI-64 link-local address and answers what reaches every node of the link
//! (a multicast echo to ff02::1, ND and MLD probes) beside the VR, a second router on the link
//! that nobody configured (a PACKET ring sees frames before the stack does, and does not take
//! them from it). IPv6 is turned off on every kernel port when pearld takes it; IPv4 needs
//! nothing, as a port carries no IPv4 address.
//!
//! The interface is given back as pearld found it: what IPv6 was there is noted under
//! `GIVEN_BACK` (per network namespace and interface, so a pearld that starts again, with the
//! port gone from its configuration, still knows), and turned on again when the node stops
//! (`pearlctl node stop`) or a start finds the port no longer in the configuration. Live
//! restore (a stop signal) leaves it off: the next pearld takes the port over.

use pearl_control::{Config, Driver};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

const GIVEN_BACK: &str = "/run/pearl/port-ipv6";

/// Turns the kernel's IPv6 off on `config`'s AF_PACKET and AF_XDP port interfaces, and on again
/// on those an earlier pearld in this namespace turned off that `config` no longer has; a port
/// whose setting cannot be written is logged and runs on.
pub fn silence(config: &Config) {
    let ours = kernel_ports(config);
    for (interface, note) in noted() {
        if !ours.iter().any(|(_, i, _)| *i == interface) {
            give_back(&interface, &note);
        }
    }
    for (n, interface, name) in ours {
        let path = setting(&interface);
        // Only a port found with IPv6 on has something to be given back.
        let on = std::fs::read_to_string(&path).is_ok_and(|v| v.trim() == "0");
        if on {
            if let Err(e) = std::fs::create_dir_all(GIVEN_BACK).and_then(|_| std::fs::write(note_of(&interface)?, "0")) {
                tracing::warn!("ports[{n}] ({name}): noting its IPv6 for when pearld gives it back: {e}");
            }
        }
        if let Err(e) = std::fs::write(&path, "1") {
            tracing::warn!("ports[{n}] ({name}): turning its own IPv6 off ({path}): {e}; its kernel may answer on its link");
        }
    }
}

/// Turns IPv6 on again on `config`'s kernel ports where pearld turned it off (the node stops).
pub fn restore(config: &Config) {
    let ours = kernel_ports(config);
    for (interface, note) in noted() {
        if ours.iter().any(|(_, i, _)| *i == interface) {
            give_back(&interface, &note);
        }
    }
}

fn kernel_ports(config: &Config) -> Vec<(usize, String, String)> {
    config
        .ports
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.driver, Driver::AfPacket | Driver::AfXdp))
        .map(|(n, p)| (n, p.interface.clone(), p.name.clone()))
        .collect()
}

fn setting(interface: &str) -> String {
    format!("/proc/sys/net/ipv6/conf/{interface}/disable_ipv6")
}

/// This namespace's prefix of the notes' names: an interface name is unique only in its
/// network namespace.
fn netns_prefix() -> std::io::Result<String> {
    Ok(format!("{}-", std::fs::metadata("/proc/self/ns/net")?.ino()))
}

fn note_of(interface: &str) -> std::io::Result<PathBuf> {
    Ok(PathBuf::from(GIVEN_BACK).join(format!("{}{}", netns_prefix()?, interface.replace('/', "%"))))
}

/// The interfaces of this namespace pearld turned IPv6 off on, with their notes.
fn noted() -> Vec<(String, PathBuf)> {
    let (Ok(prefix), Ok(dir)) = (netns_prefix(), std::fs::read_dir(GIVEN_BACK)) else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            Some((name.strip_prefix(&prefix)?.replace('%', "/"), e.path()))
        })
        .collect()
}

fn give_back(interface: &str, note: &PathBuf) {
    let path = setting(interface);
    // A port removed with its interface has nothing to give back to.
    if std::path::Path::new(&path).exists() {
        if let Err(e) = std::fs::write(&path, "0") {
            tracing::warn!("interface {interface}: turning its IPv6 on again ({path}): {e}");
            return;
        }
    }
    let _ = std::fs::remove_file(note);
}
