//! A TAP device: frames written to it arrive at the kernel as if received on that interface,
//! frames the kernel sends out of it are read here. This is how a VR's slow path reaches its
//! namespace's kernel.
//!
//! Frames cross with a virtio-net header in front (IFF_VNET_HDR): a frame whose sender left
//! its checksum partial, or a GSO super-packet, enters the kernel as such (as if a NIC with
//! offloads had received it) instead of with a checksum the kernel rejects; what the kernel
//! sends comes out complete (no TUNSETOFFLOAD: the kernel finishes checksums and cuts
//! super-packets before the TAP, so a frame read here is ready for any port).
//!
//! The TAP character device moves one frame per read or write, so unlike the ring drivers this
//! port makes a syscall per frame in both directions; rx stops at the first EAGAIN, so an idle
//! poll costs one read.

use super::{Offloads, Port};
use crate::packet::{Packet, PacketPool};
use pearl_wire::offload::VNET_HDR_LEN;
use pearl_wire::Offload;
use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Counters of a TAP port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapCounters {
    pub rx_packets: u64,
    pub tx_packets: u64,
    /// Frames the device refused (link down, frame malformed or too long).
    pub tx_refused: u64,
}

/// A TAP device opened with virtio-net headers and without packet information headers, in
/// non-blocking mode. The device
/// lives as long as the port unless it was made persistent beforehand.
pub struct TapPort {
    fd: OwnedFd,
    ifname: String,
    in_port: u16,
    counters: TapCounters,
}

impl TapPort {
    /// Opens (creating if missing) the TAP device `ifname` in the current network namespace.
    pub fn open(ifname: &str) -> io::Result<TapPort> {
        let (fd, name) = open_tap(ifname).map_err(|e| io::Error::new(e.kind(), format!("tap {ifname}: {e}")))?;
        Ok(TapPort { fd, ifname: name, in_port: 0, counters: TapCounters::default() })
    }

    /// Opens (creating if missing) the TAP device `ifname` inside the network namespace `netns`
    /// (`/run/netns/NETNS`, as made by `ip netns add`). A short-lived thread enters the namespace,
    /// so the calling thread stays where it is; the device belongs to the namespace it was
    /// created in while the fd works from anywhere.
    pub fn open_in_netns(netns: &str, ifname: &str) -> io::Result<TapPort> {
        let path = format!("/run/netns/{netns}");
        let name = ifname.to_owned();
        let opened = std::thread::Builder::new()
            .name(format!("tap-{netns}"))
            .spawn(move || -> io::Result<(OwnedFd, String)> {
                let ns = File::open(&path).map_err(|e| io::Error::new(e.kind(), format!("open {path}: {e}")))?;
                // SAFETY: setns changes only this thread's network namespace; the thread ends
                // right after opening the device.
                if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    let e = io::Error::last_os_error();
                    return Err(io::Error::new(e.kind(), format!("setns({path}): {e}")));
                }
                open_tap(&name)
            })
            .map_err(|e| io::Error::new(e.kind(), format!("tap {ifname} in netns {netns}: spawning the setns thread: {e}")))?
            .join()
            .map_err(|_| io::Error::other(format!("tap {ifname} in netns {netns}: the setns thread panicked")))?;
        let (fd, name) = opened.map_err(|e| io::Error::new(e.kind(), format!("tap {ifname} in netns {netns}: {e}")))?;
        Ok(TapPort { fd, ifname: name, in_port: 0, counters: TapCounters::default() })
    }

    /// Takes over an open TAP descriptor (one kept by another process across a restart).
    pub fn adopt(fd: OwnedFd, ifname: &str) -> TapPort {
        TapPort { fd, ifname: ifname.to_owned(), in_port: 0, counters: TapCounters::default() }
    }

    /// Stamps received packets with `in_port`.
    pub fn stamp_in_port(mut self, in_port: u16) -> TapPort {
        self.in_port = in_port;
        self
    }

    /// The device name the kernel gave (differs from the request only for `%d` patterns).
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    pub fn counters(&self) -> TapCounters {
        self.counters
    }

    /// Reads one frame into `buf`, with its offload state; `None` when none waits.
    pub fn read_frame(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, Offload)>> {
        let mut hdr = [0u8; VNET_HDR_LEN];
        let mut iov = [
            libc::iovec { iov_base: hdr.as_mut_ptr().cast(), iov_len: VNET_HDR_LEN },
            libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() },
        ];
        loop {
            // SAFETY: reads at most the iovecs' lengths into the buffers they point at.
            let got = unsafe { libc::readv(self.fd.as_raw_fd(), iov.as_mut_ptr(), 2) };
            if got >= 0 {
                self.counters.rx_packets += 1;
                let len = (got as usize).saturating_sub(VNET_HDR_LEN);
                // The kernel writes only headers it knows; one we do not is read as none.
                return Ok(Some((len, Offload::parse(&hdr).unwrap_or_default())));
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) => return Ok(None),
                Some(libc::EINTR) => continue,
                _ => return Err(io::Error::new(e.kind(), format!("tap {}: read: {e}", self.ifname))),
            }
        }
    }

    /// Writes one frame with its offload state; false if the device refused it (down, full,
    /// malformed), which, as on a NIC, drops it.
    pub fn write_frame(&mut self, frame: &[u8], offload: &Offload) -> io::Result<bool> {
        let mut hdr = [0u8; VNET_HDR_LEN];
        offload.emit(&mut hdr);
        let iov = [
            libc::iovec { iov_base: hdr.as_mut_ptr().cast(), iov_len: VNET_HDR_LEN },
            libc::iovec { iov_base: frame.as_ptr().cast_mut().cast(), iov_len: frame.len() },
        ];
        // SAFETY: writes the initialised bytes the iovecs point at.
        let rc = unsafe { libc::writev(self.fd.as_raw_fd(), iov.as_ptr(), 2) };
        if rc >= 0 {
            self.counters.tx_packets += 1;
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EIO | libc::EINVAL | libc::EMSGSIZE | libc::EAGAIN | libc::ENOBUFS) => {
                self.counters.tx_refused += 1;
                Ok(false)
            }
            _ => Err(io::Error::new(e.kind(), format!("tap {}: write: {e}", self.ifname))),
        }
    }
}

/// Opens /dev/net/tun and attaches it to TAP `ifname`; returns the fd and the device's name.
fn open_tap(ifname: &str) -> io::Result<(OwnedFd, String)> {
    if ifname.is_empty() || ifname.len() >= libc::IFNAMSIZ || ifname.contains('\0') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface name {ifname:?} must be 1 to 15 bytes")));
    }
    // SAFETY: opening a device node with a static NUL-terminated path.
    let raw = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if raw < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("open /dev/net/tun: {e}")));
    }
    // SAFETY: `raw` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: ifreq is plain data; all zeroes is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(ifname.bytes()) {
        *dst = src as libc::c_char;
    }
    ifr.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI | libc::IFF_VNET_HDR) as libc::c_short;
    // SAFETY: TUNSETIFF reads and updates the ifreq we pass, which outlives the call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut ifr) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("ioctl(TUNSETIFF, IFF_TAP | IFF_NO_PI | IFF_VNET_HDR): {e}")));
    }
    // SAFETY: the kernel returns a NUL-terminated name within IFNAMSIZ bytes.
    let name = unsafe { CStr::from_ptr(ifr.ifr_name.as_ptr()) }.to_string_lossy().into_owned();
    Ok((fd, name))
}

impl Port for TapPort {
    fn rx_batch(&mut self, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        let mut n = 0;
        while n < max {
            let Some(mut p) = pool.take() else { break };
            match self.read_frame(p.buffer_mut()) {
                Ok(Some((len, offload))) => {
                    p.set_len(len);
                    p.offload = offload;
                    p.in_port = self.in_port;
                    out.push(p);
                    n += 1;
                }
                Ok(None) => {
                    pool.give(p);
                    break;
                }
                Err(e) => {
                    pool.give(p);
                    return Err(e);
                }
            }
        }
        Ok(n)
    }

    fn tx_batch(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> io::Result<usize> {
        let mut sent = 0;
        let mut failure = None;
        for p in batch.drain(..) {
            if failure.is_none() {
                match self.write_frame(p.data(), &p.offload) {
                    Ok(true) => sent += 1,
                    Ok(false) => {}
                    Err(e) => failure = Some(e),
                }
            }
            pool.give(p);
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(sent),
        }
    }

    fn rx_fd(&self) -> Option<i32> {
        Some(self.fd.as_raw_fd())
    }

    /// The kernel on the other side takes partial checksums and super-packets as a NIC hands
    /// them over.
    fn offloads(&self) -> Offloads {
        Offloads { rx_unmarked_partial: false, tx_csum: true, tx_gso: true }
    }
}
