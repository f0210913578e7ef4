//! How the slow path has a VR's kernel resolve a neighbour without handing it a packet: for NAT
//! (`Exception::NatUnresolved`) the packet itself must not reach the kernel, which would
//! forward it untranslated, so a UDP datagram of the VR's own (from its own address, to the
//! packet's destination, discard port 9, empty) goes out through the kernel's routing instead,
//! and the kernel resolves the next hop on the way; routed then brings the neighbour into the
//! fast path. The socket lives in the VR's namespace, found from one of its TAPs
//! (TUNGETDEVNETNS), and is made on first use.

use crate::port::{Port, TapPort};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// `_IO('T', 227)`: a descriptor of the TAP device's network namespace.
const TUNGETDEVNETNS: libc::c_ulong = 0x54e3;
/// One probe per destination this often at most, however many packets wait on it.
const PROBE_INTERVAL: Duration = Duration::from_millis(200);
const DISCARD_PORT: u16 = 9;

#[derive(Default)]
pub struct NeighborProbe {
    socket: Option<UdpSocket>,
    last: Option<(Ipv4Addr, Instant)>,
}

impl NeighborProbe {
    /// Probes towards the IPv4 destination of Ethernet `frame` through the namespace of `tap`;
    /// whether a datagram was sent.
    pub fn probe(&mut self, tap: &TapPort, frame: &[u8]) -> bool {
        let Some(dst) = ipv4_destination(frame) else { return false };
        if self.last.is_some_and(|(d, at)| d == dst && at.elapsed() < PROBE_INTERVAL) {
            return false;
        }
        self.last = Some((dst, Instant::now()));
        if self.socket.is_none() {
            match socket_in_namespace_of(tap) {
                Ok(s) => self.socket = Some(s),
                Err(e) => {
                    tracing::warn!("NAT neighbour probe: {e}");
                    return false;
                }
            }
        }
        self.socket.as_ref().is_some_and(|s| s.send_to(&[], SocketAddrV4::new(dst, DISCARD_PORT)).is_ok())
    }
}

fn ipv4_destination(frame: &[u8]) -> Option<Ipv4Addr> {
    (frame.get(12..14)? == [0x08, 0x00]).then_some(())?;
    let d: [u8; 4] = frame.get(30..34)?.try_into().ok()?;
    Some(Ipv4Addr::from(d))
}

/// A non-blocking UDP socket made inside the network namespace `tap`'s device is in (a
/// short-lived thread enters it, so the reactor's thread stays where it is).
fn socket_in_namespace_of(tap: &TapPort) -> io::Result<UdpSocket> {
    let fd = tap.rx_fd().ok_or_else(|| io::Error::other("the TAP has no descriptor"))?;
    // SAFETY: an ioctl without argument on an open TAP descriptor; it returns a new descriptor.
    let ns = unsafe { libc::ioctl(fd, TUNGETDEVNETNS as _) };
    if ns < 0 {
        return Err(io::Error::other(format!("TUNGETDEVNETNS: {}", io::Error::last_os_error())));
    }
    // SAFETY: the kernel just returned this descriptor, owned by nobody else.
    let ns = unsafe { OwnedFd::from_raw_fd(ns) };
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: setns changes only this short-lived thread's network namespace.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::other(format!("setns: {}", io::Error::last_os_error())));
            }
            let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
            s.set_nonblocking(true)?;
            Ok(s)
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the probe socket's thread panicked")))
    })
}
