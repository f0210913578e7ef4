//! A port's own Linux stack stays off its link: the port interface is pearld's wire, and only
//! the VRs' interfaces (their TAPs) may answer on it. With IPv6 on, the port's kernel stack
//! gives it an EUI-64 link-local address and answers what reaches every node of the link
//! (a multicast echo to ff02::1, ND and MLD probes) beside the VR, a second router on the link
//! that nobody configured (a PACKET ring sees frames before the stack does, and does not take
//! them from it). IPv6 is turned off on every kernel port when pearld takes it; IPv4 needs
//! nothing, as a port carries no IPv4 address.

use pearl_control::{Config, Driver};

/// Turns the kernel's IPv6 off on `config`'s AF_PACKET and AF_XDP port interfaces; a port whose
/// setting cannot be written is logged and runs on.
pub fn silence(config: &Config) {
    for (n, port) in config.ports.iter().enumerate().filter(|(_, p)| matches!(p.driver, Driver::AfPacket | Driver::AfXdp)) {
        let path = format!("/proc/sys/net/ipv6/conf/{}/disable_ipv6", port.interface);
        if let Err(e) = std::fs::write(&path, "1") {
            tracing::warn!("ports[{n}] ({}): turning its own IPv6 off ({path}): {e}; its kernel may answer on its link", port.name);
        }
    }
}
