//! A Linux interface's MTU, which is the default MTU of every VR interface on its port (less
//! the tunnel's headers on a vxlan port).

use pearl_control::PortConfig;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The Ethernet MTU: what a port without a Linux interface (memory, pcap) is taken to have.
pub const DEFAULT_MTU: u32 = 1500;

/// The MTU a port's frames may have: its interface's, less a tunnel's headers for a vxlan
/// port (whose interface is the underlay); `DEFAULT_MTU` for a port without an interface.
pub fn port_mtu(port: &PortConfig) -> u32 {
    let mtu = interface_mtu(&port.interface).unwrap_or(DEFAULT_MTU);
    match &port.vxlan {
        Some(tunnel) => tunnel.inner_mtu(mtu),
        None => mtu,
    }
}

/// The MTU of interface `ifname` in the calling thread's network namespace (SIOCGIFMTU).
pub fn interface_mtu(ifname: &str) -> io::Result<u32> {
    if ifname.is_empty() || ifname.len() >= libc::IFNAMSIZ || ifname.contains('\0') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface name {ifname:?} must be 1 to 15 bytes")));
    }
    // SAFETY: a plain datagram socket, only used for the ioctl below.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` was just created and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: ifreq is plain data; all zeroes is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(ifname.bytes()) {
        *dst = src as libc::c_char;
    }
    // SAFETY: SIOCGIFMTU fills the ifreq we pass, which outlives the call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFMTU, &mut ifr) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{ifname}: ioctl(SIOCGIFMTU): {e}")));
    }
    // SAFETY: the kernel filled the MTU member of the union.
    Ok(unsafe { ifr.ifr_ifru.ifru_mtu } as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_interface_has_an_mtu_and_a_missing_one_is_named() {
        assert!(interface_mtu("lo").unwrap() >= 1500);
        let e = interface_mtu("pearl-no-such0").unwrap_err();
        assert!(e.to_string().contains("pearl-no-such0"), "{e}");
    }
}
