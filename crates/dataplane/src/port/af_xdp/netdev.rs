//! What an AF_XDP port needs to know about its interface before binding (index, MTU, rx queues)
//! and promiscuous mode. Asked with ioctls on a throwaway socket, so the answers come from the
//! calling thread's network namespace (sysfs would show the namespace it was mounted in).

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GCHANNELS: u32 = 0x3c;

pub(super) fn index(ifname: &str) -> io::Result<u32> {
    let name = c_name(ifname)?;
    // SAFETY: `name` is a valid C string for the duration of the call.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(io::Error::last_os_error()),
        i => Ok(i),
    }
}

/// Rx queues in use (combined + rx-only channels); 1 for drivers that do not report channels.
pub(super) fn rx_queues(ifname: &str) -> io::Result<u32> {
    /// `struct ethtool_channels`.
    #[repr(C)]
    #[derive(Default)]
    struct Channels {
        cmd: u32,
        max_rx: u32,
        max_tx: u32,
        max_other: u32,
        max_combined: u32,
        rx_count: u32,
        tx_count: u32,
        other_count: u32,
        combined_count: u32,
    }
    let mut channels = Channels { cmd: ETHTOOL_GCHANNELS, ..Channels::default() };
    let mut req = ifreq(ifname)?;
    req.ifr_ifru.ifru_data = (&mut channels as *mut Channels).cast();
    match ioctl(SIOCETHTOOL, &mut req) {
        Ok(()) => Ok((channels.rx_count + channels.combined_count).max(1)),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(1),
        Err(e) => Err(e),
    }
}

/// Keeps an interface promiscuous while it lives. The kernel counts promiscuity per holder and
/// undoes this one when the socket closes, also when the process dies.
pub(super) struct Promiscuous {
    _membership: OwnedFd,
}

impl Promiscuous {
    pub(super) fn on(ifindex: u32) -> io::Result<Promiscuous> {
        // Protocol 0 and never bound: the socket receives nothing, it only holds the membership.
        // SAFETY: plain socket creation.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        let mreq =
            libc::packet_mreq { mr_ifindex: ifindex as i32, mr_type: libc::PACKET_MR_PROMISC as u16, mr_alen: 0, mr_address: [0; 8] };
        // SAFETY: `mreq` is valid for reads of the size passed.
        let rc = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_ADD_MEMBERSHIP,
                (&mreq as *const libc::packet_mreq).cast(),
                size_of::<libc::packet_mreq>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Promiscuous { _membership: sock })
    }
}

fn c_name(ifname: &str) -> io::Result<CString> {
    CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name contains NUL"))
}

fn ifreq(ifname: &str) -> io::Result<libc::ifreq> {
    let name = c_name(ifname)?;
    let bytes = name.as_bytes_with_nul();
    // SAFETY: ifreq is plain data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { zeroed() };
    if bytes.len() > req.ifr_name.len() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "interface name longer than 15 bytes"));
    }
    for (d, &s) in req.ifr_name.iter_mut().zip(bytes) {
        *d = s as libc::c_char;
    }
    Ok(req)
}

fn ioctl(request: libc::c_ulong, req: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nobody else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: `req` is a valid ifreq (and whatever its data pointer names) for the call.
    if unsafe { libc::ioctl(sock.as_raw_fd(), request, req as *mut libc::ifreq) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
