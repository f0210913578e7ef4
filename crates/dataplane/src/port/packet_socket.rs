//! What both of an AF_PACKET port's ring sockets need: the socket, its options, its binding
//! and the shared mapping of its ring.

use std::ffi::CString;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::{self, addr_of};

/// A shared ring mapping, unmapped on drop.
pub(super) struct Mapping {
    pub(super) base: *mut u8,
    len: usize,
}

impl Mapping {
    pub(super) fn new(fd: &OwnedFd, len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh shared mapping of the socket's ring; the kernel checks `len` against
        // the ring it set up and we keep the pointer only while the mapping lives.
        let base = unsafe {
            libc::mmap(ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_POPULATE, fd.as_raw_fd(), 0)
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { base: base.cast(), len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what mmap returned, and nothing borrows the ring
        // beyond the port that owns this mapping.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

// SAFETY: the mapping is owned by one port and only touched through `&mut self`; moving it to
// another thread moves that sole access.
unsafe impl Send for Mapping {}

pub(super) fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

pub(super) fn interface_index(ifname: &str) -> io::Result<i32> {
    let name = CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name contains NUL"))?;
    // SAFETY: `name` is a valid C string for the duration of the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(index as i32)
}

/// An AF_PACKET socket that receives nothing until bound with a protocol.
pub(super) fn packet_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(super) fn set_opt<T>(fd: &OwnedFd, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is valid for reads of size_of::<T>() bytes, the size passed.
    let rc =
        unsafe { libc::setsockopt(fd.as_raw_fd(), libc::SOL_PACKET, name, (value as *const T).cast(), size_of::<T>() as libc::socklen_t) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(super) fn bind(fd: &OwnedFd, ifindex: i32, protocol: u16) -> io::Result<()> {
    let addr = libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as u16,
        sll_protocol: protocol.to_be(),
        sll_ifindex: ifindex,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    };
    // SAFETY: `addr` is a valid sockaddr_ll of the size passed.
    let rc = unsafe { libc::bind(fd.as_raw_fd(), addr_of!(addr).cast(), size_of::<libc::sockaddr_ll>() as libc::socklen_t) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
