//! A TAP device: frames written to it arrive at the kernel as if received on that interface,
//! frames the kernel sends out of it are read here. This is how a VR's slow path reaches its
//! namespace's kernel.
//!
//! Frames cross with a virtio-net header in front (IFF_VNET_HDR), both ways, as between a
//! virtio NIC and its host: a frame whose sender left its checksum partial, or a GSO
//! super-packet, enters the kernel as such (as if a NIC with offloads had received it) instead
//! of with a checksum the kernel rejects; and the device offers the kernel checksum and
//! segmentation offload (TUNSETOFFLOAD: TCP and UDP segmentation, as far as the kernel knows
//! them), so what the kernel sends may come out as a super-packet of up to 64 KiB or with a
//! partial checksum, marked in its header, for the port that sends it on to finish or cut only
//! if its device cannot. IFF_VNET_HDR and the offloads belong to the device, not to a
//! descriptor: an adopted descriptor (kept by the holder across a restart) is checked for them.
//!
//! The TAP character device moves one frame per read or write, so unlike the ring drivers this
//! port makes a syscall per frame in both directions; rx stops at the first EAGAIN, so an idle
//! poll costs one read.

use super::{Offloads, Port};
use crate::packet::{Packet, PacketPool, LARGE_BUF_SIZE};
use pearl_wire::offload::VNET_HDR_LEN;
use pearl_wire::Offload;
use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Counters of a TAP port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapCounters {
    pub rx_packets: u64,
    pub tx_packets: u64,
    /// Frames the device refused (link down, frame malformed or too long).
    pub tx_refused: u64,
    /// Frames received through `rx_batch` longer than an ordinary buffer while no large one was
    /// free: dropped whole rather than cut.
    pub rx_dropped: u64,
}

/// What a TAP offers its kernel (TUNSETOFFLOAD), most first: each next choice leaves out what
/// an older kernel may not know (UDP segmentation came with Linux 6.2). TSO needs CSUM.
const OFFLOAD_CHOICES: [libc::c_uint; 3] = [
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6 | libc::TUN_F_TSO_ECN | libc::TUN_F_USO4 | libc::TUN_F_USO6,
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6 | libc::TUN_F_TSO_ECN,
    libc::TUN_F_CSUM,
];

/// A TAP device opened with virtio-net headers and without packet information headers, in
/// non-blocking mode, offering its kernel the offloads of `OFFLOAD_CHOICES`. The device lives
/// as long as the port unless it was made persistent beforehand.
pub struct TapPort {
    fd: OwnedFd,
    ifname: String,
    in_port: u16,
    counters: TapCounters,
    /// The TUNSETOFFLOAD flags the kernel took (0: none, frames come out complete).
    kernel_offloads: u32,
    /// `rx_batch`: where a frame longer than an ordinary buffer lands when no large buffer is
    /// free, to be dropped whole; made the first time that happens.
    spill: Option<Box<[u8]>>,
}

/// What `TapPort::adopt` found.
pub enum Adoption {
    Adopted(TapPort),
    /// The device was made without IFF_VNET_HDR (by an earlier version): its frames would be
    /// misread. The descriptor comes back for `TapPort::reopen_in_netns`.
    WithoutVnetHdr(OwnedFd),
}

impl TapPort {
    fn new(fd: OwnedFd, ifname: String) -> TapPort {
        let kernel_offloads = offer_offloads(fd.as_fd());
        TapPort { fd, ifname, in_port: 0, counters: TapCounters::default(), kernel_offloads, spill: None }
    }

    /// Opens (creating if missing) the TAP device `ifname` in the current network namespace.
    pub fn open(ifname: &str) -> io::Result<TapPort> {
        let (fd, name) = open_tap(ifname).map_err(|e| io::Error::new(e.kind(), format!("tap {ifname}: {e}")))?;
        Ok(TapPort::new(fd, name))
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
        Ok(TapPort::new(fd, name))
    }

    /// Takes over an open TAP descriptor (one kept by another process across a restart). The
    /// virtio-net header is a property of the device, set when it was made: a device without
    /// one is handed back, not adopted. The offloads (also the device's) are offered again.
    pub fn adopt(fd: OwnedFd, ifname: &str) -> io::Result<Adoption> {
        // SAFETY: ifreq is plain data; all zeroes is a valid value.
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        // SAFETY: TUNGETIFF writes the device's name and flags into the ifreq we pass.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNGETIFF, &mut ifr) } != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("tap {ifname}: adopting a descriptor: ioctl(TUNGETIFF): {e}")));
        }
        // SAFETY: TUNGETIFF filled the flags member.
        let flags = i32::from(unsafe { ifr.ifr_ifru.ifru_flags });
        if flags & libc::IFF_TAP == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("tap {ifname}: the adopted descriptor is not a TAP")));
        }
        if flags & libc::IFF_VNET_HDR == 0 || flags & libc::IFF_NO_PI == 0 {
            return Ok(Adoption::WithoutVnetHdr(fd));
        }
        Ok(Adoption::Adopted(TapPort::new(fd, ifname.to_owned())))
    }

    /// Opens the device of `old` (a TAP in `netns` made with other flags) again with this
    /// port's flags, keeping the device and with it its addresses, routes and neighbours: the
    /// device is made persistent, `close_copies` must close every other copy of `old` (the
    /// holder's), `old` is closed, the device opened anew, and made non-persistent again. Its
    /// carrier drops for that moment, as on a cable pulled and put back.
    pub fn reopen_in_netns(old: OwnedFd, netns: &str, ifname: &str, close_copies: impl FnOnce() -> io::Result<()>) -> io::Result<TapPort> {
        let at = |e: io::Error| io::Error::new(e.kind(), format!("tap {ifname} in netns {netns}: re-opening: {e}"));
        set_persist(old.as_fd(), true).map_err(at)?;
        if let Err(e) = close_copies() {
            let _ = set_persist(old.as_fd(), false);
            return Err(at(e));
        }
        drop(old);
        let tap = TapPort::open_in_netns(netns, ifname)?;
        set_persist(tap.fd.as_fd(), false).map_err(at)?;
        Ok(tap)
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

    /// The offloads (`libc::TUN_F_*`) the device's kernel took: what it may leave partial or
    /// send as super-packets. 0 if it took none.
    pub fn kernel_offloads(&self) -> u32 {
        self.kernel_offloads
    }

    /// Reads one frame into `buf`, with its offload state; `None` when none waits. A frame
    /// longer than `buf` is cut to it (the kernel says nothing): a buffer of
    /// `LARGE_BUF_SIZE` bytes takes any frame.
    pub fn read_frame(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, Offload)>> {
        let mut hdr = [0u8; VNET_HDR_LEN];
        let mut iov = [
            libc::iovec { iov_base: hdr.as_mut_ptr().cast(), iov_len: VNET_HDR_LEN },
            libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() },
        ];
        Ok(self.readv(&mut iov)?.map(|n| (n, Offload::parse(&hdr).unwrap_or_default())))
    }

    /// One readv of a frame behind its virtio-net header (`iov[0]`); the frame's length.
    fn readv(&mut self, iov: &mut [libc::iovec]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: reads at most the iovecs' lengths into the buffers they point at.
            let got = unsafe { libc::readv(self.fd.as_raw_fd(), iov.as_mut_ptr(), iov.len() as i32) };
            if got >= 0 {
                self.counters.rx_packets += 1;
                // The kernel writes only headers it knows; one we do not is read as none.
                return Ok(Some((got as usize).saturating_sub(VNET_HDR_LEN)));
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

/// Offers the device's kernel checksum and segmentation offload, the most it takes; returns
/// the flags taken (0 if none: then it finishes every frame before the TAP).
fn offer_offloads(fd: BorrowedFd<'_>) -> u32 {
    for flags in OFFLOAD_CHOICES {
        // SAFETY: TUNSETOFFLOAD takes its flags by value.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETOFFLOAD, libc::c_ulong::from(flags)) } == 0 {
            return flags;
        }
    }
    0
}

fn set_persist(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    // SAFETY: TUNSETPERSIST takes its flag by value.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETPERSIST, libc::c_ulong::from(on)) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("ioctl(TUNSETPERSIST, {}): {e}", u8::from(on))));
    }
    Ok(())
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
    /// Each frame is read into an ordinary buffer and, past its end, into a large one taken
    /// alongside (given back unused for the common short frame), so a super-packet or jumbo
    /// frame costs one copy of an ordinary buffer's length and is never cut.
    fn rx_batch(&mut self, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        let mut n = 0;
        while n < max {
            let Some(mut p) = pool.take() else { break };
            let mut large = pool.take_for(LARGE_BUF_SIZE);
            let mut hdr = [0u8; VNET_HDR_LEN];
            let small = p.buffer_mut();
            let cap = small.len();
            let rest: &mut [u8] = match large.as_mut() {
                Some(l) => &mut l.buffer_mut()[cap..],
                None => self.spill.get_or_insert_with(|| vec![0; LARGE_BUF_SIZE].into_boxed_slice()),
            };
            let mut iov = [
                libc::iovec { iov_base: hdr.as_mut_ptr().cast(), iov_len: VNET_HDR_LEN },
                libc::iovec { iov_base: small.as_mut_ptr().cast(), iov_len: cap },
                libc::iovec { iov_base: rest.as_mut_ptr().cast(), iov_len: rest.len() },
            ];
            let got = self.readv(&mut iov);
            let mut frame = match (got, large) {
                (Ok(Some(len)), large) if len <= cap => {
                    if let Some(l) = large {
                        pool.give(l);
                    }
                    p.set_len(len);
                    p
                }
                (Ok(Some(len)), Some(mut l)) => {
                    l.buffer_mut()[..cap].copy_from_slice(&p.buffer_mut()[..cap]);
                    l.set_len(len);
                    pool.give(p);
                    l
                }
                (Ok(Some(_)), None) => {
                    pool.give(p);
                    self.counters.rx_dropped += 1;
                    continue;
                }
                (other, large) => {
                    if let Some(l) = large {
                        pool.give(l);
                    }
                    pool.give(p);
                    match other {
                        Err(e) => return Err(e),
                        _ => break,
                    }
                }
            };
            frame.offload = Offload::parse(&hdr).unwrap_or_default();
            frame.in_port = self.in_port;
            out.push(frame);
            n += 1;
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
