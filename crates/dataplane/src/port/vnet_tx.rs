//! Sending GSO super-packets whole: a PACKET socket with PACKET_VNET_HDR, to which each frame
//! goes behind its virtio-net header, so the kernel cuts it (or hands it whole to a veth peer,
//! which takes it as the kernel router would have forwarded it). One `sendmsg` per super-packet
//! (up to 64 KiB, ~45 segments): the ring drivers' per-frame economy does not matter at that
//! size, while slots big enough for super-packets would cost a tx ring 64 KiB each.

use crate::packet::Packet;
use pearl_wire::offload::VNET_HDR_LEN;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::{self, addr_of};

/// A send-only PACKET socket on one interface whose frames carry virtio-net headers.
pub struct VnetSender {
    fd: OwnedFd,
}

impl VnetSender {
    /// Opens the socket on interface `ifname`; errors name the interface and the call.
    pub fn on(ifname: &str) -> io::Result<VnetSender> {
        let name =
            std::ffi::CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name contains NUL"))?;
        // SAFETY: `name` is a valid C string for the duration of the call.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("{ifname}: if_nametoindex: {e}")));
        }
        VnetSender::open(index as i32).map_err(|(call, e)| io::Error::new(e.kind(), format!("{ifname}: {call}: {e}")))
    }

    /// Opens the socket on `ifindex`, bound with protocol 0 so it queues nothing for reading.
    pub fn open(ifindex: i32) -> Result<VnetSender, (&'static str, io::Error)> {
        // SAFETY: plain socket creation.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(("socket(AF_PACKET) for super-packets", io::Error::last_os_error()));
        }
        // SAFETY: `raw` was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        set_opt(&fd, libc::PACKET_VNET_HDR, 1).map_err(|e| ("setsockopt(PACKET_VNET_HDR)", e))?;
        // Older kernels lack it; frames then take the qdisc path, which is only slower.
        let _ = set_opt(&fd, libc::PACKET_QDISC_BYPASS, 1);
        let addr = libc::sockaddr_ll {
            sll_family: libc::AF_PACKET as u16,
            sll_protocol: 0,
            sll_ifindex: ifindex,
            sll_hatype: 0,
            sll_pkttype: 0,
            sll_halen: 0,
            sll_addr: [0; 8],
        };
        // SAFETY: `addr` is a valid sockaddr_ll of the size passed.
        let rc = unsafe { libc::bind(fd.as_raw_fd(), addr_of!(addr).cast(), size_of::<libc::sockaddr_ll>() as libc::socklen_t) };
        if rc != 0 {
            return Err(("bind(super-packets)", io::Error::last_os_error()));
        }
        Ok(VnetSender { fd })
    }

    /// Sends `p` with its offload state; false if the device refused it (queue full, link
    /// down, a header the kernel rejects), which drops it as a NIC would.
    pub fn send(&self, p: &Packet) -> bool {
        let mut hdr = [0u8; VNET_HDR_LEN];
        p.offload.emit(&mut hdr);
        let data = p.data();
        let mut iov = [
            libc::iovec { iov_base: hdr.as_mut_ptr().cast(), iov_len: VNET_HDR_LEN },
            libc::iovec { iov_base: data.as_ptr().cast_mut().cast(), iov_len: data.len() },
        ];
        // SAFETY: msghdr is plain data; all zeroes is a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = iov.len();
        // SAFETY: the iovecs point at live buffers of the lengths given; the kernel only reads.
        let rc = unsafe { libc::sendmsg(self.fd.as_raw_fd(), ptr::addr_of!(msg), libc::MSG_DONTWAIT) };
        rc >= 0
    }
}

fn set_opt(fd: &OwnedFd, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` is valid for reads of the size passed.
    let rc = unsafe {
        libc::setsockopt(fd.as_raw_fd(), libc::SOL_PACKET, name, addr_of!(value).cast(), size_of::<libc::c_int>() as libc::socklen_t)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
