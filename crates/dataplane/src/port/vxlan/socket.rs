//! The UDP sockets of a tunnel: one receive socket per (underlay device, family, local
//! address, destination port) and worker, and a few send sockets bound to distinct source ports.

use std::io;
use std::mem::size_of;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Send sockets per hub: the number of distinct UDP source ports a tunnel's flows spread over.
pub const SOURCE_PORTS: usize = 16;
/// Where the source ports are taken from (RFC 7348 §5: the dynamic range 49152–65535).
const SOURCE_PORT_BASE: u16 = 49_152;

/// An address as the kernel takes it, with its length.
#[derive(Clone, Copy)]
pub struct RawAddr {
    pub storage: libc::sockaddr_in6,
    pub len: libc::socklen_t,
}

impl RawAddr {
    pub fn of(addr: SocketAddr) -> RawAddr {
        // SAFETY: plain data; all zeroes is valid.
        let mut storage: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
        let len = match addr {
            SocketAddr::V4(a) => {
                // SAFETY: sockaddr_in fits in sockaddr_in6 and is plain data.
                let sin = unsafe { &mut *(&mut storage as *mut libc::sockaddr_in6).cast::<libc::sockaddr_in>() };
                sin.sin_family = libc::AF_INET as libc::sa_family_t;
                sin.sin_port = a.port().to_be();
                sin.sin_addr.s_addr = u32::from(*a.ip()).to_be();
                size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(a) => {
                storage.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                storage.sin6_port = a.port().to_be();
                storage.sin6_addr.s6_addr = a.ip().octets();
                size_of::<libc::sockaddr_in6>()
            }
        };
        RawAddr { storage, len: len as libc::socklen_t }
    }

    /// The IP address of an address the kernel wrote (a datagram's source).
    pub fn ip(storage: &libc::sockaddr_in6) -> Option<IpAddr> {
        match i32::from(storage.sin6_family) {
            libc::AF_INET => {
                // SAFETY: the kernel wrote a sockaddr_in here.
                let sin = unsafe { &*(storage as *const libc::sockaddr_in6).cast::<libc::sockaddr_in>() };
                Some(IpAddr::from(u32::from_be(sin.sin_addr.s_addr).to_be_bytes()))
            }
            libc::AF_INET6 => Some(IpAddr::from(storage.sin6_addr.s6_addr)),
            _ => None,
        }
    }
}

fn check(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(r)
}

fn set_int(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, value: libc::c_int, what: &str) -> io::Result<()> {
    // SAFETY: `value` outlives the call; its size is passed.
    let r =
        unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, (&value as *const libc::c_int).cast(), size_of::<libc::c_int>() as u32) };
    check(r, what).map(drop)
}

/// A non-blocking UDP socket of `local`'s family, bound to `device` and to `local`.
fn udp_socket(device: &str, local: SocketAddr, reuse_port: bool) -> io::Result<OwnedFd> {
    let family = if local.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain socket creation.
    let raw = check(unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) }, "socket")?;
    // SAFETY: just created, owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    if family == libc::AF_INET6 {
        set_int(&fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 1, "IPV6_V6ONLY")?;
    }
    if reuse_port {
        set_int(&fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1, "SO_REUSEPORT")?;
    }
    // Bursts of super-packets cut into datagrams must not overflow the default 208 KiB.
    set_int(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 4 << 20, "SO_RCVBUF")?;
    set_int(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, 4 << 20, "SO_SNDBUF")?;
    // SAFETY: the name outlives the call; its length is passed.
    let r = unsafe {
        libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_BINDTODEVICE, device.as_ptr().cast(), device.len() as libc::socklen_t)
    };
    check(r, &format!("SO_BINDTODEVICE {device}"))?;
    let addr = RawAddr::of(local);
    // SAFETY: `addr` holds a socket address of `addr.len` bytes.
    let r = unsafe { libc::bind(fd.as_raw_fd(), (&addr.storage as *const libc::sockaddr_in6).cast(), addr.len) };
    check(r, &format!("bind {local}"))?;
    Ok(fd)
}

/// The socket datagrams to `port` arrive on; shared with the other workers' through
/// SO_REUSEPORT.
pub fn receiver(device: &str, local: IpAddr, port: u16) -> io::Result<OwnedFd> {
    udp_socket(device, SocketAddr::new(local, port), true)
}

/// `SOURCE_PORTS` send sockets on distinct source ports of the dynamic range, the first free
/// ones from a place that depends on the process (so that two pearld on one host rarely
/// collide and then skip each other's).
pub fn senders(device: &str, local: IpAddr) -> io::Result<Vec<OwnedFd>> {
    let span = u32::from(u16::MAX - SOURCE_PORT_BASE) + 1;
    let start = (std::process::id().wrapping_mul(2_654_435_761) >> 8) % span;
    let mut sockets = Vec::with_capacity(SOURCE_PORTS);
    for i in 0..span {
        if sockets.len() == SOURCE_PORTS {
            break;
        }
        let port = SOURCE_PORT_BASE + ((start + i * 97) % span) as u16;
        match udp_socket(device, SocketAddr::new(local, port), false) {
            Ok(fd) => sockets.push(fd),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(sockets)
}
