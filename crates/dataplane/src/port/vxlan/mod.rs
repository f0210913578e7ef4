//! `driver: vxlan`: a port whose frames travel inside UDP datagrams to a far tunnel end (RFC
//! 7348), over an underlay device the kernel's IP stack routes through.
//!
//! Datagrams go through ordinary UDP sockets bound to the underlay device, so the kernel
//! routes, resolves neighbours, fills the outer headers and their checksum (also for IPv6,
//! where it is required) and a Linux `vxlan` device or tcpdump sees the standard format. The
//! UDP source port follows the inner flow's hash (§5) by sending from one of a small pool of
//! sockets bound to distinct ports of the dynamic range (`socket::senders`): raw IP_HDRINCL
//! sockets would spread flows over every port but make the data plane build outer IP headers,
//! resolve the next hop and compute checksums itself, which the kernel does anyway. Each batch
//! costs one recvmmsg on the hub's socket and one sendmmsg per source port used; the VXLAN
//! header is gathered in front of each frame, never copied into it.
//!
//! The frames the port sends must be complete (`Offloads::default()`): the worker finishes
//! partial checksums and cuts super-packets before `tx_batch`, so a VR's TCP crosses as
//! MTU-sized datagrams.

mod hub;
mod socket;

use crate::packet::{Packet, PacketPool};
use crate::port::{Port, TunnelRefused};
use hub::{Hub, HubKey};
use pearl_control::VxlanConfig;
use pearl_wire::vxlan::VxlanRepr;
use socket::RawAddr;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::Arc;

pub struct VxlanPort {
    hub: Arc<Hub>,
    slot: usize,
    header: [u8; 8],
    remote: RawAddr,
    /// Per send socket: the frames of the batch it sends.
    by_sender: Vec<Vec<usize>>,
    iovs: Vec<[libc::iovec; 2]>,
    hdrs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers in `iovs` and `hdrs` are scratch, rewritten before each use.
unsafe impl Send for VxlanPort {}

impl VxlanPort {
    /// Worker `worker`'s instance of the tunnel `tunnel` over `device`.
    pub fn open(device: &str, tunnel: &VxlanConfig, worker: usize) -> io::Result<VxlanPort> {
        let any = match tunnel.remote {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        let key = HubKey { device: device.to_string(), local: tunnel.local.unwrap_or(any), dst_port: tunnel.dst_port, worker };
        let (hub, slot) = Hub::join(key, tunnel.vni, tunnel.remote)?;
        let senders = hub.senders.len();
        Ok(VxlanPort {
            hub,
            slot,
            header: VxlanRepr { vni: tunnel.vni }.to_bytes(),
            remote: RawAddr::of(SocketAddr::new(tunnel.remote, tunnel.dst_port)),
            by_sender: vec![Vec::with_capacity(hub::BATCH); senders],
            iovs: Vec::new(),
            hdrs: Vec::new(),
        })
    }
}

impl Drop for VxlanPort {
    fn drop(&mut self) {
        self.hub.leave(self.slot);
    }
}

/// A hash of the inner frame's flow: its IP addresses and, for TCP and UDP, ports; a frame
/// that is not IP hashes by its MAC addresses.
pub fn flow_hash(frame: &[u8]) -> u32 {
    let word = |b: &[u8]| b.chunks(4).fold(0u32, |h, c| (h ^ c.iter().fold(0, |w, &x| w << 8 | u32::from(x))).wrapping_mul(0x9e37_79b1));
    let ethertype = frame.get(12..14).map(|t| u16::from_be_bytes([t[0], t[1]]));
    let (addresses, proto, l4) = match ethertype {
        Some(0x0800) if frame.len() >= 34 => (&frame[26..34], frame[23], 14 + usize::from(frame[14] & 0x0f) * 4),
        Some(0x86dd) if frame.len() >= 54 => (&frame[22..54], frame[20], 54),
        _ => return word(&frame[..frame.len().min(12)]),
    };
    let mut h = word(addresses);
    if matches!(proto, 6 | 17) {
        if let Some(ports) = frame.get(l4..l4 + 4) {
            h = (h ^ word(ports)).wrapping_mul(0x85eb_ca6b);
        }
    }
    h ^ h >> 16
}

impl Port for VxlanPort {
    fn rx_batch(&mut self, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        self.hub.receive(self.slot, pool, out, max)
    }

    fn tx_batch(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> io::Result<usize> {
        let senders = self.by_sender.len();
        for s in &mut self.by_sender {
            s.clear();
        }
        for (i, p) in batch.iter().enumerate() {
            self.by_sender[flow_hash(p.data()) as usize % senders].push(i);
        }
        self.iovs.resize(batch.len(), [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; 2]);
        // SAFETY: plain data; all zeroes is valid.
        self.hdrs.resize(batch.len(), unsafe { std::mem::zeroed() });
        let mut sent = 0;
        let mut failure = None;
        for (s, frames) in self.by_sender.iter().enumerate() {
            if frames.is_empty() {
                continue;
            }
            for (k, &i) in frames.iter().enumerate() {
                let data = batch[i].data();
                self.iovs[k] = [
                    libc::iovec { iov_base: self.header.as_ptr() as *mut _, iov_len: self.header.len() },
                    libc::iovec { iov_base: data.as_ptr() as *mut _, iov_len: data.len() },
                ];
                let h = &mut self.hdrs[k].msg_hdr;
                h.msg_name = (&self.remote.storage as *const libc::sockaddr_in6) as *mut _;
                h.msg_namelen = self.remote.len;
                h.msg_iov = self.iovs[k].as_mut_ptr();
                h.msg_iovlen = 2;
            }
            let mut done = 0;
            while done < frames.len() {
                // SAFETY: the headers point at the header, the frames and the address, which
                // live until the call returns.
                let r = unsafe {
                    libc::sendmmsg(
                        self.hub.senders[s].as_raw_fd(),
                        self.hdrs[done..].as_mut_ptr(),
                        (frames.len() - done) as u32,
                        libc::MSG_DONTWAIT,
                    )
                };
                if r <= 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::WouldBlock {
                        failure = Some(e);
                    }
                    break;
                }
                done += r as usize;
            }
            sent += done;
        }
        pool.give_all(batch);
        match failure {
            Some(e) if sent == 0 => Err(e),
            _ => Ok(sent),
        }
    }

    fn rx_fd(&self) -> Option<i32> {
        Some(self.hub.rx_fd())
    }

    fn tunnel_refused(&self) -> TunnelRefused {
        self.hub.refused(self.slot)
    }
}

#[cfg(test)]
mod tests;
