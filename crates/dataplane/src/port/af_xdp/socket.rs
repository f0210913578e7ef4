//! An AF_XDP socket: UMEM registration, ring set-up, mapping and bind.

use super::ring::{Consumer, Producer, RingLayout};
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::{addr_of, addr_of_mut};

/// linux/if_xdp.h, newer than the libc crate.
const XDP_MAX_TX_SKB_BUDGET: libc::c_int = 9;

/// Ring sizes, in frames, and the UMEM's chunk size. No rx ring when `rx_frames` is 0.
pub(super) struct Geometry {
    pub chunk_size: u32,
    pub rx_frames: u32,
    pub tx_frames: u32,
}

/// A bound socket and the rings it shares with the kernel. Field order is drop order: the socket
/// closes before its rings are unmapped.
pub(super) struct Xsk {
    pub fd: OwnedFd,
    pub rx: Option<Consumer<libc::xdp_desc>>,
    pub fill: Producer<u64>,
    pub tx: Producer<libc::xdp_desc>,
    pub completion: Consumer<u64>,
}

/// Names the step that failed.
fn step(call: &'static str) -> impl Fn(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{call}: {e}"))
}

impl Xsk {
    /// Creates the socket, registers the `umem_len` bytes at `umem` (page-aligned, a whole number
    /// of chunks, mapped for as long as the socket lives) as its UMEM and sets up the rings: fill
    /// and tx get twice the frames they can hold, because the kernel publishes how far it has read
    /// them lazily; rx and completion never hold more than the frames in circulation.
    pub(super) fn new(g: &Geometry, umem: *mut u8, umem_len: usize) -> io::Result<Xsk> {
        // SAFETY: plain socket creation.
        let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(step("socket(AF_XDP)")(io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: plain data; zero is valid for every field (no flags, no metadata).
        let mut reg: libc::xdp_umem_reg = unsafe { zeroed() };
        reg.addr = umem as u64;
        reg.len = umem_len as u64;
        reg.chunk_size = g.chunk_size;
        set_opt(&fd, libc::XDP_UMEM_REG, &reg).map_err(step("setsockopt(XDP_UMEM_REG)"))?;
        // The kernel wants a fill ring even on a socket that only sends.
        let (fill_size, tx_size) = ((2 * g.rx_frames).max(1), 2 * g.tx_frames);
        set_opt(&fd, libc::XDP_UMEM_FILL_RING, &fill_size).map_err(step("setsockopt(XDP_UMEM_FILL_RING)"))?;
        set_opt(&fd, libc::XDP_UMEM_COMPLETION_RING, &g.tx_frames).map_err(step("setsockopt(XDP_UMEM_COMPLETION_RING)"))?;
        if g.rx_frames > 0 {
            set_opt(&fd, libc::XDP_RX_RING, &g.rx_frames).map_err(step("setsockopt(XDP_RX_RING)"))?;
        }
        set_opt(&fd, libc::XDP_TX_RING, &tx_size).map_err(step("setsockopt(XDP_TX_RING)"))?;
        // In copy mode one sendto sends at most 32 frames unless told otherwise (Linux 6.17+;
        // older kernels refuse the option and the caller kicks again).
        let _ = set_opt(&fd, XDP_MAX_TX_SKB_BUDGET, &tx_size);

        // SAFETY: plain data, filled by the kernel.
        let mut off: libc::xdp_mmap_offsets = unsafe { zeroed() };
        let mut len = size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
        // SAFETY: `off` and `len` are valid for writes of the sizes passed.
        let rc = unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_XDP, libc::XDP_MMAP_OFFSETS, addr_of_mut!(off).cast(), &mut len) };
        if rc != 0 {
            return Err(step("getsockopt(XDP_MMAP_OFFSETS)")(io::Error::last_os_error()));
        }
        if len as usize != size_of::<libc::xdp_mmap_offsets>() {
            // Kernels before 5.4 lack the ring flags, hence XDP_USE_NEED_WAKEUP.
            return Err(io::Error::new(io::ErrorKind::Unsupported, "getsockopt(XDP_MMAP_OFFSETS): no ring flags (kernel older than 5.4)"));
        }
        let rx = (g.rx_frames > 0)
            .then(|| {
                Consumer::map(&fd, RingLayout::from(off.rx), g.rx_frames, libc::XDP_PGOFF_RX_RING as u64).map_err(step("mmap(rx ring)"))
            })
            .transpose()?;
        let tx = Producer::map(&fd, RingLayout::from(off.tx), tx_size, libc::XDP_PGOFF_TX_RING as u64).map_err(step("mmap(tx ring)"))?;
        let fill =
            Producer::map(&fd, RingLayout::from(off.fr), fill_size, libc::XDP_UMEM_PGOFF_FILL_RING).map_err(step("mmap(fill ring)"))?;
        let completion = Consumer::map(&fd, RingLayout::from(off.cr), g.tx_frames, libc::XDP_UMEM_PGOFF_COMPLETION_RING)
            .map_err(step("mmap(completion ring)"))?;
        Ok(Xsk { fd, rx, fill, tx, completion })
    }

    /// Binds to rx queue `queue` of `ifindex`; `copy` forces copy mode, otherwise the kernel
    /// uses zero-copy where the driver offers it. Returns whether zero-copy is in use.
    pub(super) fn bind(&self, ifindex: u32, queue: u32, copy: bool) -> io::Result<bool> {
        let flags = libc::XDP_USE_NEED_WAKEUP | if copy { libc::XDP_COPY } else { 0 };
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: `addr` is a valid sockaddr_xdp of the size passed.
        let rc = unsafe { libc::bind(self.fd.as_raw_fd(), addr_of!(addr).cast(), size_of::<libc::sockaddr_xdp>() as libc::socklen_t) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: xdp_options is plain data.
        let options: libc::xdp_options = unsafe { get_opt(&self.fd, libc::XDP_OPTIONS) }.map_err(step("getsockopt(XDP_OPTIONS)"))?;
        Ok(options.flags & libc::XDP_OPTIONS_ZEROCOPY != 0)
    }

    /// The kernel's drop and error counts for this socket (cumulative).
    pub(super) fn statistics(&self) -> io::Result<libc::xdp_statistics> {
        // SAFETY: xdp_statistics is plain data.
        unsafe { get_opt(&self.fd, libc::XDP_STATISTICS) }.map_err(step("getsockopt(XDP_STATISTICS)"))
    }
}

fn set_opt<T>(fd: &OwnedFd, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is valid for reads of size_of::<T>() bytes, the size passed.
    let rc =
        unsafe { libc::setsockopt(fd.as_raw_fd(), libc::SOL_XDP, name, (value as *const T).cast(), size_of::<T>() as libc::socklen_t) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads an option the kernel fills whole.
///
/// # Safety
/// `T` must be plain data for which all-zero bytes are a valid value.
unsafe fn get_opt<T>(fd: &OwnedFd, name: libc::c_int) -> io::Result<T> {
    // SAFETY: the caller vouches that zero is a valid T.
    let mut value: T = unsafe { zeroed() };
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` and `len` are valid for writes of the sizes passed.
    let rc = unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_XDP, name, addr_of_mut!(value).cast(), &mut len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}
