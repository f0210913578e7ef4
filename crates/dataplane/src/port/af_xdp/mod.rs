//! AF_XDP: the default driver. An XDP program on the interface hands each received frame to our
//! socket through shared rings, before the kernel's stack sees it; we send by putting frames on
//! another ring and, when the kernel asks for it, one `sendto` per batch.
//!
//! One socket per port, bound to rx queue 0. Its UMEM is the worker's packet pool: the socket
//! registers the pool's arena, so a chunk is a packet buffer. The port keeps `rx_frames` chunks
//! lent to the kernel through the fill ring; a received frame becomes a packet where the kernel
//! wrote it, and a fresh chunk from the pool takes its place in the fill ring. A packet is sent
//! from where it lies, and comes back to the pool through the completion ring. Every AF_XDP port
//! of a worker registers the same arena (each as its own UMEM over the same pages), so a frame
//! crosses from one port to another without being copied. Per packet: three ring entries; no
//! copy, syscall, lock or allocation.
//!
//! The program is attached in native (driver) mode where the driver supports it, else in skb
//! (generic) mode; the socket uses zero-copy where the driver offers it (native only), else copy
//! mode (always so on veth), where the kernel copies between its buffers and the UMEM. Interfaces
//! with several rx queues are refused, since frames on the other queues would reach the kernel
//! instead of the port, and so are MTUs whose frames do not fit a chunk: the caller falls back to
//! AF_PACKET. The interface is promiscuous while the port is open, since the VRs' MACs are not the
//! interface's and a NIC filters unicast MACs itself.
//!
//! Hand-written on the raw socket and ring layout rather than libxdp/xsk-rs because the UMEM is
//! the worker's own packet pool, shared by every AF_XDP port of the worker: those libraries own
//! their UMEM and its frame allocator, and a frame would be copied between it and the pool.

mod netdev;
mod program;
mod ring;
mod socket;

pub use program::XdpMode;

use super::{Offloads, Port};
use crate::packet::{Packet, PacketPool, BUF_SIZE};
use crate::prefetch::prefetch_bytes;
use socket::{Geometry, Xsk};
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr;

/// Ring sizes and the XDP attach mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfXdpConfig {
    /// Chunks lent to the kernel for receiving (the rx ring's size): a power of two.
    pub rx_frames: u32,
    /// Frames being sent at most at once (the completion ring's size): a power of two.
    pub tx_frames: u32,
    /// Attach the XDP program in this mode only; `None` tries native, then skb.
    pub mode: Option<XdpMode>,
}

impl Default for AfXdpConfig {
    /// 512 rx and 1024 tx frames: 3 MiB of packet buffers per port. The fill ring is kept
    /// short (a NIC's rx ring is 512 to 4096 entries; veth's own XDP ring has 256) because
    /// every chunk in it is touched once per round of the ring: a short ring keeps the
    /// kernel's writes and our reads within the caches. Measured on veth at 1518 B, a
    /// 2048-chunk ring forwarded ~15 % fewer frames than 256 or 512.
    fn default() -> AfXdpConfig {
        AfXdpConfig { rx_frames: 512, tx_frames: 1024, mode: None }
    }
}

impl AfXdpConfig {
    /// The most packet buffers the port holds out of its pool at once, lent to the kernel: a
    /// pool shared with such ports needs this many more for each.
    pub fn pool_share(&self) -> usize {
        (self.rx_frames + self.tx_frames) as usize
    }
}

/// How the port bound: where the XDP program runs and whether frames are copied by the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AfXdpBinding {
    pub mode: XdpMode,
    pub zero_copy: bool,
}

impl fmt::Display for AfXdpBinding {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} XDP, {} mode", self.mode.name(), if self.zero_copy { "zero-copy" } else { "copy" })
    }
}

/// Counters of one AF_XDP port; the `rx_*` drops and `tx_invalid` are the kernel's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AfXdpCounters {
    pub rx_packets: u64,
    /// Descriptors outside our UMEM or running past a chunk (a kernel fault), dropped.
    pub rx_bad_descriptor: u64,
    /// Frames dropped because the rx ring was full.
    pub rx_ring_full: u64,
    /// Times the kernel found no free chunk in the fill ring (the frame is dropped).
    pub rx_fill_empty: u64,
    /// Frames dropped for other reasons, e.g. longer than a chunk.
    pub rx_dropped: u64,
    pub tx_packets: u64,
    /// Frames dropped because `tx_frames` were still being sent, or the tx ring was full.
    pub tx_ring_full: u64,
    /// Frames shorter than an Ethernet header or longer than a chunk, dropped.
    pub tx_bad_length: u64,
    /// Tx descriptors the kernel refused.
    pub tx_invalid: u64,
}

/// One chunk per packet buffer.
const CHUNK_SIZE: u32 = BUF_SIZE as u32;
/// The kernel keeps XDP_PACKET_HEADROOM bytes in front of every received frame.
const RX_FRAME_ROOM: u32 = CHUNK_SIZE - 256;
const ETH_HLEN: usize = 14;
/// Ethernet header plus two VLAN tags: the longest frame an MTU lets in.
const L2_OVERHEAD: u32 = 14 + 2 * 4;
/// The port binds this rx queue, the only one (see the module docs).
const QUEUE: u32 = 0;

/// An AF_XDP port on one interface of the current network namespace. Field order is drop order:
/// the program is detached before the socket closes. Chunks the port has lent to the kernel when
/// it is dropped stay out of the pool (which then keeps its arena mapped for good).
pub struct AfXdpPort {
    _link: Option<OwnedFd>,
    xsk: Xsk,
    _promiscuous: Option<netdev::Promiscuous>,
    /// The arena registered as UMEM: the only pool this port may take packets from.
    umem: *mut u8,
    /// Chunks lent for receiving: in the fill ring, or being written by the kernel.
    rx_lent: u32,
    rx_frames: u32,
    /// Frames on the tx ring or not yet completed.
    tx_in_flight: u32,
    tx_frames: u32,
    /// The last kick left frames on the tx ring: kick again even without new frames.
    tx_kick_pending: bool,
    ifname: String,
    /// None for a transmitter, which runs no XDP program.
    binding: Option<AfXdpBinding>,
    zero_copy: bool,
    in_port: u16,
    counters: AfXdpCounters,
}

// SAFETY: `umem` is only compared, never dereferenced; the rest is owned by the port.
unsafe impl Send for AfXdpPort {}

impl AfXdpPort {
    /// Opens `ifname` with the default ring sizes, trying native XDP, then skb, sharing `pool`'s
    /// buffers (see the module docs): the port must be used with that pool only.
    pub fn open(ifname: &str, pool: &mut PacketPool) -> io::Result<AfXdpPort> {
        AfXdpPort::with_config(ifname, &AfXdpConfig::default(), pool)
    }

    pub fn with_config(ifname: &str, config: &AfXdpConfig, pool: &mut PacketPool) -> io::Result<AfXdpPort> {
        let fail = |kind: io::ErrorKind, what: String| io::Error::new(kind, format!("af_xdp {ifname}: {what}"));
        let ctx = |call: &str, e: io::Error| fail(e.kind(), format!("{call}: {e}"));
        check_ring_size(ifname, "rx_frames", config.rx_frames)?;
        check_ring_size(ifname, "tx_frames", config.tx_frames)?;
        let ifindex = netdev::index(ifname).map_err(|e| ctx("if_nametoindex", e))?;
        let queues = netdev::rx_queues(ifname).map_err(|e| ctx("ioctl(ETHTOOL_GCHANNELS)", e))?;
        if queues > 1 {
            return Err(fail(
                io::ErrorKind::Unsupported,
                format!("{queues} rx queues, but the port binds one socket to queue {QUEUE}: frames on the others would bypass it (`ethtool -L {ifname} combined 1` or `rx 1` leaves one)"),
            ));
        }
        let mtu = super::interface_mtu(ifname).map_err(|e| ctx("ioctl(SIOCGIFMTU)", e))?;
        if mtu + L2_OVERHEAD > RX_FRAME_ROOM {
            return Err(fail(
                io::ErrorKind::Unsupported,
                format!(
                    "MTU {mtu} lets in frames of {} bytes; a {CHUNK_SIZE}-byte chunk holds {RX_FRAME_ROOM} after the kernel's headroom",
                    mtu + L2_OVERHEAD
                ),
            ));
        }

        if pool.available() < config.rx_frames as usize {
            return Err(fail(
                io::ErrorKind::InvalidInput,
                format!(
                    "the packet pool has {} free buffers, fewer than the {} rx_frames the port lends the kernel",
                    pool.available(),
                    config.rx_frames
                ),
            ));
        }

        let promiscuous = netdev::Promiscuous::on(ifindex).map_err(|e| ctx("promiscuous mode", e))?;

        let geometry = Geometry { chunk_size: CHUNK_SIZE, rx_frames: config.rx_frames, tx_frames: config.tx_frames };
        let (umem, umem_len) = pool.arena();
        let xsk = Xsk::new(&geometry, umem, umem_len).map_err(|e| ctx("setting up the socket", e))?;

        let map = program::xsk_map(QUEUE + 1).map_err(|e| ctx("bpf(BPF_MAP_CREATE, XSKMAP)", e))?;
        let prog = program::load(&map).map_err(|e| ctx("bpf(BPF_PROG_LOAD, XDP)", e))?;
        let modes = match &config.mode {
            Some(mode) => std::slice::from_ref(mode),
            None => &[XdpMode::Native, XdpMode::Skb],
        };
        let mut refusals = Vec::new();
        let mut attached = None;
        for &mode in modes {
            match program::attach(&prog, ifindex, mode) {
                Ok(link) => {
                    attached = Some((mode, link));
                    break;
                }
                Err(e) => refusals.push(format!("{} mode: {e}", mode.name())),
            }
        }
        let Some((mode, link)) = attached else {
            let kind = io::ErrorKind::Unsupported;
            return Err(fail(kind, format!("bpf(BPF_LINK_CREATE) attaching the XDP program: {}", refusals.join("; "))));
        };
        let zero_copy =
            xsk.bind(ifindex, QUEUE, mode == XdpMode::Skb).map_err(|e| ctx(&format!("bind(queue {QUEUE}, {} XDP)", mode.name()), e))?;
        program::map_insert(&map, QUEUE, &xsk.fd).map_err(|e| ctx("bpf(BPF_MAP_UPDATE_ELEM, XSKMAP)", e))?;

        // Only now that nothing can fail, so that a refused port takes nothing from the pool.
        let mut port = AfXdpPort {
            _link: Some(link),
            xsk,
            _promiscuous: Some(promiscuous),
            umem,
            rx_lent: 0,
            rx_frames: config.rx_frames,
            tx_in_flight: 0,
            tx_frames: config.tx_frames,
            tx_kick_pending: false,
            ifname: ifname.to_owned(),
            binding: Some(AfXdpBinding { mode, zero_copy }),
            zero_copy,
            in_port: 0,
            counters: AfXdpCounters::default(),
        };
        port.refill(pool);
        Ok(port)
    }

    /// Opens `ifname` for sending only, sharing `pool`'s buffers: no XDP program, no rx ring,
    /// nothing lent for receiving; frames arriving on the interface are left to the kernel (and
    /// to whatever else receives there: see `SplitPort`). `config.mode` is not used.
    pub fn transmitter(ifname: &str, config: &AfXdpConfig, pool: &mut PacketPool) -> io::Result<AfXdpPort> {
        let fail = |kind: io::ErrorKind, what: String| io::Error::new(kind, format!("af_xdp {ifname}: {what}"));
        let ctx = |call: &str, e: io::Error| fail(e.kind(), format!("{call}: {e}"));
        check_ring_size(ifname, "tx_frames", config.tx_frames)?;
        let ifindex = netdev::index(ifname).map_err(|e| ctx("if_nametoindex", e))?;
        let geometry = Geometry { chunk_size: CHUNK_SIZE, rx_frames: 0, tx_frames: config.tx_frames };
        let (umem, umem_len) = pool.arena();
        let xsk = Xsk::new(&geometry, umem, umem_len).map_err(|e| ctx("setting up the socket", e))?;
        // Sending needs no XDP program; the kernel uses zero-copy where the driver offers it.
        let zero_copy = xsk.bind(ifindex, QUEUE, false).map_err(|e| ctx(&format!("bind(queue {QUEUE}, tx only)"), e))?;
        Ok(AfXdpPort {
            _link: None,
            xsk,
            _promiscuous: None,
            umem,
            rx_lent: 0,
            rx_frames: 0,
            tx_in_flight: 0,
            tx_frames: config.tx_frames,
            tx_kick_pending: false,
            ifname: ifname.to_owned(),
            binding: None,
            zero_copy,
            in_port: 0,
            counters: AfXdpCounters::default(),
        })
    }

    /// Stamps received packets with `in_port`.
    pub fn stamp_in_port(mut self, in_port: u16) -> AfXdpPort {
        self.in_port = in_port;
        self
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Where the XDP program runs and whether frames are copied; None for a transmitter.
    pub fn binding(&self) -> Option<AfXdpBinding> {
        self.binding
    }

    /// Whether the kernel sends (and receives) without copying frames.
    pub fn zero_copy(&self) -> bool {
        self.zero_copy
    }

    /// The counters, after collecting the kernel's (a syscall: not per batch).
    pub fn counters(&mut self) -> io::Result<AfXdpCounters> {
        let s = self.xsk.statistics().map_err(|e| io::Error::new(e.kind(), format!("af_xdp {}: {e}", self.ifname)))?;
        self.counters.rx_ring_full = s.rx_ring_full;
        self.counters.rx_fill_empty = s.rx_fill_ring_empty_descs;
        self.counters.rx_dropped = s.rx_dropped + s.rx_invalid_descs;
        self.counters.tx_invalid = s.tx_invalid_descs;
        Ok(self.counters)
    }

    /// Refuses a pool other than the one whose arena the socket registered: its chunks' offsets
    /// would name other memory.
    fn check_pool(&self, pool: &PacketPool) -> io::Result<()> {
        if pool.arena().0 == self.umem {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("af_xdp {}: a packet pool other than the one the port was opened with", self.ifname),
        ))
    }

    /// Tops the fill ring up to `rx_frames` chunks, as far as the pool has them.
    fn refill(&mut self, pool: &mut PacketPool) {
        let want = self.xsk.fill.free(self.rx_frames - self.rx_lent).min(pool.available() as u32);
        let mut n = 0;
        while n < want {
            let Some(addr) = pool.lend() else { break };
            self.xsk.fill.write(n, addr);
            n += 1;
        }
        self.xsk.fill.submit(n);
        self.rx_lent += n;
    }

    /// Returns the packets the kernel has finished sending to the pool.
    fn reap_completions(&mut self, pool: &mut PacketPool) {
        let n = self.xsk.completion.available(u32::MAX);
        for i in 0..n {
            let addr = self.xsk.completion.read(i);
            if pool.holds(addr, 0) {
                // SAFETY: the kernel completes only what we put on the tx ring: packets of this
                // pool (checked in tx_batch), lent by `lend_packet` or `lend` and not back since.
                pool.give(unsafe { pool.reclaim(addr, 0) });
            }
        }
        self.xsk.completion.release(n);
        self.tx_in_flight -= n;
    }

    /// Asks the kernel to send what the tx ring holds, without waiting, if it needs asking. In
    /// copy mode one call sends at most the socket's budget (raised to the ring's size where the
    /// kernel allows) and fails with EAGAIN when frames remain, so it repeats while the ring
    /// drains.
    fn kick(&mut self) -> io::Result<()> {
        self.tx_kick_pending = false;
        if !self.xsk.tx.needs_wakeup() {
            return Ok(());
        }
        loop {
            let before = self.xsk.tx.pending();
            // SAFETY: a zero-length sendto with no address only triggers the tx ring.
            let rc = unsafe { libc::sendto(self.xsk.fd.as_raw_fd(), ptr::null(), 0, libc::MSG_DONTWAIT, ptr::null(), 0) };
            if rc >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) if (1..before).contains(&self.xsk.tx.pending()) => continue,
                // The device is busy or down, or an skb could not be had: the frames stay on
                // the ring and go with the next kick.
                Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::ENETDOWN) => {
                    self.tx_kick_pending = true;
                    return Ok(());
                }
                _ => return Err(io::Error::new(e.kind(), format!("af_xdp {}: sendto(tx ring kick): {e}", self.ifname))),
            }
        }
    }
}

/// Ring sizes must be powers of two the kernel accepts.
fn check_ring_size(ifname: &str, field: &str, n: u32) -> io::Result<()> {
    if n.is_power_of_two() && n <= 1 << 16 {
        return Ok(());
    }
    Err(io::Error::new(io::ErrorKind::InvalidInput, format!("af_xdp {ifname}: {field} {n} is not a power of two up to 65536")))
}

impl Port for AfXdpPort {
    fn rx_batch(&mut self, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        self.check_pool(pool)?;
        let n = self.xsk.rx.as_mut().map_or(0, |rx| rx.available(max as u32));
        if n == 0 {
            if self.xsk.fill.needs_wakeup() {
                // A zero-copy driver that ran out of fill chunks sleeps until told.
                // SAFETY: a zero-length, non-blocking recvfrom only wakes the driver.
                unsafe {
                    libc::recvfrom(self.xsk.fd.as_raw_fd(), ptr::null_mut(), 0, libc::MSG_DONTWAIT, ptr::null_mut(), ptr::null_mut())
                };
            }
            if self.tx_kick_pending {
                self.kick()?;
            }
            if self.rx_lent < self.rx_frames {
                self.refill(pool);
            }
            return Ok(0);
        }
        let (umem, before) = (self.umem, out.len());
        let Some(rx) = self.xsk.rx.as_mut() else { return Ok(0) };
        for i in 0..n {
            let desc = rx.read(i);
            let len = desc.len as usize;
            if len <= BUF_SIZE && pool.holds(desc.addr, len) {
                // The kernel wrote the frame from another CPU: start pulling it over, for the
                // pipeline, which reads its headers next, and for the kernel's copy on tx.
                prefetch_bytes(umem.wrapping_add(desc.addr as usize), len);
                // SAFETY: the kernel fills only chunks we lent it through the fill ring, each
                // coming back once, and the descriptor lies within one (checked).
                let mut p = unsafe { pool.reclaim(desc.addr, len) };
                p.in_port = self.in_port;
                out.push(p);
            } else {
                self.counters.rx_bad_descriptor += 1;
            }
        }
        rx.release(n);
        self.rx_lent -= n;
        self.refill(pool);
        let received = out.len() - before;
        self.counters.rx_packets += received as u64;
        Ok(received)
    }

    fn tx_batch(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> io::Result<usize> {
        self.check_pool(pool)?;
        self.reap_completions(pool);
        let room = self.xsk.tx.free(batch.len() as u32).min(self.tx_frames - self.tx_in_flight);
        let mut queued = 0;
        for p in batch.drain(..) {
            let len = p.len();
            if !(ETH_HLEN..=BUF_SIZE).contains(&len) {
                self.counters.tx_bad_length += 1;
                pool.give(p);
                continue;
            }
            if queued == room {
                self.counters.tx_ring_full += 1;
                pool.give(p);
                continue;
            }
            let addr = match pool.lend_packet(p) {
                Ok(addr) => addr,
                // Another pool's packet: copied into one of ours.
                Err(p) => {
                    let copy = pool.lend();
                    if let Some(addr) = copy {
                        // SAFETY: a chunk of our arena just lent, so nobody else's; len fits it.
                        unsafe { ptr::copy_nonoverlapping(p.data().as_ptr(), self.umem.add(addr as usize), len) };
                    }
                    pool.give(p);
                    let Some(addr) = copy else {
                        self.counters.tx_ring_full += 1;
                        continue;
                    };
                    addr
                }
            };
            self.xsk.tx.write(queued, libc::xdp_desc { addr, len: len as u32, options: 0 });
            queued += 1;
        }
        if queued > 0 {
            self.xsk.tx.submit(queued);
            self.tx_in_flight += queued;
        }
        if queued > 0 || self.tx_kick_pending {
            self.kick()?;
        }
        self.counters.tx_packets += u64::from(queued);
        Ok(queued as usize)
    }

    fn trickles(&self) -> bool {
        true
    }

    /// A veth peer with tx checksum offload (the default) hands XDP its frames with the L4
    /// checksum partial and no way to say so; attaching XDP to a veth turns the peer's GSO off
    /// (veth_fix_features), so super-packets do not arrive. AF_XDP tx takes no metadata.
    fn offloads(&self) -> Offloads {
        Offloads { rx_unmarked_partial: true, tx_csum: false, tx_gso: false }
    }

    fn rx_fd(&self) -> Option<i32> {
        Some(self.xsk.fd.as_raw_fd())
    }

    fn rx_dropped(&mut self) -> u64 {
        // A failed read leaves the counts as last collected.
        let _ = self.counters();
        let c = &self.counters;
        // A frame that found the fill ring empty is also in the kernel's rx_dropped.
        c.rx_ring_full + c.rx_dropped + c.rx_bad_descriptor
    }
}
