//! Sending GSO super-packets whole: a PACKET socket with PACKET_VNET_HDR, to which each frame
//! goes behind its virtio-net header, so the kernel cuts it (or hands it whole to a veth peer,
//! which takes it as the kernel router would have forwarded it). One `sendmsg` per super-packet
//! (up to 64 KiB, ~45 segments): the ring drivers' per-frame economy does not matter at that
//! size, while slots big enough for super-packets would cost a tx ring 64 KiB each.

use super::packet_socket::{bind, interface_index, packet_socket, set_opt};
use crate::packet::Packet;
use pearl_wire::offload::VNET_HDR_LEN;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr;

/// A send-only PACKET socket on one interface whose frames carry virtio-net headers.
pub struct VnetSender {
    fd: OwnedFd,
}

impl VnetSender {
    /// Opens the socket on interface `ifname`; errors name the interface and the call.
    pub fn on(ifname: &str) -> io::Result<VnetSender> {
        let index = interface_index(ifname).map_err(|e| io::Error::new(e.kind(), format!("{ifname}: if_nametoindex: {e}")))?;
        VnetSender::open(index).map_err(|(call, e)| io::Error::new(e.kind(), format!("{ifname}: {call}: {e}")))
    }

    /// Opens the socket on `ifindex`, bound with protocol 0 so it queues nothing for reading.
    pub fn open(ifindex: i32) -> Result<VnetSender, (&'static str, io::Error)> {
        let fd = packet_socket().map_err(|e| ("socket(AF_PACKET) for super-packets", e))?;
        set_opt(&fd, libc::PACKET_VNET_HDR, &1 as &libc::c_int).map_err(|e| ("setsockopt(PACKET_VNET_HDR)", e))?;
        // Older kernels lack it; frames then take the qdisc path, which is only slower.
        let _ = set_opt(&fd, libc::PACKET_QDISC_BYPASS, &1 as &libc::c_int);
        bind(&fd, ifindex, 0).map_err(|e| ("bind(super-packets)", e))?;
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
