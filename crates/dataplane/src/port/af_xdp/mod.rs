//! AF_XDP: the default driver. An XDP program on the interface hands each received frame to our
//! socket through shared rings, before the kernel's stack sees it; we send by putting frames on
//! another ring and, when the kernel asks for it, one `sendto` per batch.
//!
//! One socket per port, bound to rx queue 0, with its own UMEM of 2 KiB chunks: the first
//! `rx_frames` chunks circulate between the fill ring, the kernel and the rx ring; the others are
//! tx chunks, kept in a free stack while they are ours. Received frames are copied into pool
//! buffers and their chunks go straight back to the fill ring, so the kernel never waits for the
//! pipeline; frames to send are copied into free tx chunks, which come back through the
//! completion ring. Per packet: two ring entries and a copy; no syscall, lock or allocation.
//!
//! The program is attached in native (driver) mode where the driver supports it, else in skb
//! (generic) mode; the socket uses zero-copy where the driver offers it (native only), else copy
//! mode (always so on veth). Interfaces with several rx queues are refused, since frames on the
//! other queues would reach the kernel instead of the port, and so are MTUs whose frames do not
//! fit a chunk: the caller falls back to AF_PACKET. The interface is promiscuous while the port is
//! open, since the VRs' MACs are not the interface's and a NIC filters unicast MACs itself.

mod netdev;
mod program;
mod ring;
mod socket;

pub use program::XdpMode;

use super::Port;
use crate::packet::{prefetch_frame, Packet, PacketPool, BUF_SIZE};
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
    /// Chunks for frames being sent (the completion ring's size): a power of two.
    pub tx_frames: u32,
    /// Attach the XDP program in this mode only; `None` tries native, then skb.
    pub mode: Option<XdpMode>,
}

impl Default for AfXdpConfig {
    /// 2048 rx and 1024 tx chunks: 6 MiB of UMEM per port.
    fn default() -> AfXdpConfig {
        AfXdpConfig { rx_frames: 2048, tx_frames: 1024, mode: None }
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
    /// Descriptors outside our UMEM or longer than a packet buffer (a kernel fault), dropped.
    pub rx_bad_descriptor: u64,
    /// Frames dropped because the rx ring was full.
    pub rx_ring_full: u64,
    /// Times the kernel found no free chunk in the fill ring (the frame is dropped).
    pub rx_fill_empty: u64,
    /// Frames dropped for other reasons, e.g. longer than a chunk.
    pub rx_dropped: u64,
    pub tx_packets: u64,
    /// Frames dropped because every tx chunk or ring entry was still the kernel's.
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
/// the program is detached before the socket closes.
pub struct AfXdpPort {
    _link: OwnedFd,
    xsk: Xsk,
    _promiscuous: netdev::Promiscuous,
    /// Tx chunks that are ours; room for all of them, so pushing never allocates.
    tx_free: Vec<u64>,
    /// The last kick left frames on the tx ring: kick again even without new frames.
    tx_kick_pending: bool,
    ifname: String,
    binding: AfXdpBinding,
    in_port: u16,
    counters: AfXdpCounters,
}

impl AfXdpPort {
    /// Opens `ifname` with the default ring sizes, trying native XDP, then skb.
    pub fn open(ifname: &str) -> io::Result<AfXdpPort> {
        AfXdpPort::with_config(ifname, &AfXdpConfig::default())
    }

    pub fn with_config(ifname: &str, config: &AfXdpConfig) -> io::Result<AfXdpPort> {
        let fail = |kind: io::ErrorKind, what: String| io::Error::new(kind, format!("af_xdp {ifname}: {what}"));
        let ctx = |call: &str, e: io::Error| fail(e.kind(), format!("{call}: {e}"));
        for (field, n) in [("rx_frames", config.rx_frames), ("tx_frames", config.tx_frames)] {
            if !n.is_power_of_two() || n > 1 << 16 {
                return Err(fail(io::ErrorKind::InvalidInput, format!("{field} {n} is not a power of two up to 65536")));
            }
        }
        let ifindex = netdev::index(ifname).map_err(|e| ctx("if_nametoindex", e))?;
        let queues = netdev::rx_queues(ifname).map_err(|e| ctx("ioctl(ETHTOOL_GCHANNELS)", e))?;
        if queues > 1 {
            return Err(fail(
                io::ErrorKind::Unsupported,
                format!("{queues} rx queues, but the port binds one socket to queue {QUEUE}: frames on the others would bypass it (`ethtool -L {ifname} combined 1` or `rx 1` leaves one)"),
            ));
        }
        let mtu = netdev::mtu(ifname).map_err(|e| ctx("ioctl(SIOCGIFMTU)", e))?;
        if mtu + L2_OVERHEAD > RX_FRAME_ROOM {
            return Err(fail(
                io::ErrorKind::Unsupported,
                format!("MTU {mtu} lets in frames of {} bytes; a {CHUNK_SIZE}-byte chunk holds {RX_FRAME_ROOM} after the kernel's headroom", mtu + L2_OVERHEAD),
            ));
        }

        let promiscuous = netdev::Promiscuous::on(ifindex).map_err(|e| ctx("promiscuous mode", e))?;

        let geometry = Geometry { chunk_size: CHUNK_SIZE, rx_frames: config.rx_frames, tx_frames: config.tx_frames };
        let mut xsk = Xsk::new(&geometry).map_err(|e| ctx("setting up the socket", e))?;
        // Every rx chunk starts in the fill ring (which has room for twice as many).
        let rx_frames = xsk.fill.free(config.rx_frames);
        for i in 0..rx_frames {
            xsk.fill.write(i, u64::from(i * CHUNK_SIZE));
        }
        xsk.fill.submit(rx_frames);
        let tx_free = (config.rx_frames..config.rx_frames + config.tx_frames).map(|i| u64::from(i * CHUNK_SIZE)).collect();

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
        let zero_copy = xsk.bind(ifindex, QUEUE, mode == XdpMode::Skb).map_err(|e| ctx(&format!("bind(queue {QUEUE}, {} XDP)", mode.name()), e))?;
        program::map_insert(&map, QUEUE, &xsk.fd).map_err(|e| ctx("bpf(BPF_MAP_UPDATE_ELEM, XSKMAP)", e))?;

        Ok(AfXdpPort {
            _link: link,
            xsk,
            _promiscuous: promiscuous,
            tx_free,
            tx_kick_pending: false,
            ifname: ifname.to_owned(),
            binding: AfXdpBinding { mode, zero_copy },
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

    pub fn binding(&self) -> AfXdpBinding {
        self.binding
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

    /// Takes back the tx chunks the kernel is done with.
    fn reap_completions(&mut self) {
        let n = self.xsk.completion.available(u32::MAX);
        for i in 0..n {
            self.tx_free.push(self.xsk.completion.read(i) & !u64::from(CHUNK_SIZE - 1));
        }
        self.xsk.completion.release(n);
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

impl Port for AfXdpPort {
    fn rx_batch(&mut self, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        let want = max.min(pool.available()) as u32;
        let ready = self.xsk.rx.available(want);
        // Each chunk read goes back to the fill ring in the same batch, so take no more than it
        // has room for (it always should).
        let n = self.xsk.fill.free(ready);
        if n == 0 {
            if self.xsk.fill.needs_wakeup() {
                // A zero-copy driver that ran out of fill chunks sleeps until told.
                // SAFETY: a zero-length, non-blocking recvfrom only wakes the driver.
                unsafe { libc::recvfrom(self.xsk.fd.as_raw_fd(), ptr::null_mut(), 0, libc::MSG_DONTWAIT, ptr::null_mut(), ptr::null_mut()) };
            }
            if self.tx_kick_pending {
                self.kick()?;
            }
            return Ok(0);
        }
        let umem = self.xsk.umem.base();
        let umem_len = self.xsk.umem.len() as u64;
        let mut received = 0;
        let mut next = self.xsk.rx.read(0);
        for i in 0..n {
            let desc = next;
            if i + 1 < n {
                // The kernel wrote the next frame from another CPU: start pulling it over
                // while this one is copied.
                next = self.xsk.rx.read(i + 1);
                prefetch_frame(umem.wrapping_add(next.addr as usize), next.len as usize);
            }
            let len = desc.len as usize;
            // umem_len >= BUF_SIZE, so the subtraction cannot wrap once the length passed.
            if len > BUF_SIZE || desc.addr > umem_len - len as u64 {
                self.counters.rx_bad_descriptor += 1;
            } else if let Some(mut p) = pool.take() {
                // SAFETY: the kernel wrote `len` bytes at `addr` in our UMEM (checked to lie
                // inside it) and leaves them alone until the chunk is back in the fill ring; the
                // buffer holds BUF_SIZE >= len bytes.
                unsafe { ptr::copy_nonoverlapping(umem.add(desc.addr as usize), p.buffer_mut().as_mut_ptr(), len) };
                p.set_len(len);
                p.in_port = self.in_port;
                out.push(p);
                received += 1;
            }
            self.xsk.fill.write(i, desc.addr & !u64::from(CHUNK_SIZE - 1));
        }
        self.xsk.rx.release(n);
        self.xsk.fill.submit(n);
        self.counters.rx_packets += received as u64;
        Ok(received)
    }

    fn tx_batch(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> io::Result<usize> {
        self.reap_completions();
        let room = self.xsk.tx.free(batch.len() as u32);
        let umem = self.xsk.umem.base();
        let mut queued = 0;
        for p in batch.drain(..) {
            let len = p.len();
            if !(ETH_HLEN..=CHUNK_SIZE as usize).contains(&len) {
                self.counters.tx_bad_length += 1;
            } else if queued == room {
                self.counters.tx_ring_full += 1;
            } else if let Some(addr) = self.tx_free.pop() {
                // SAFETY: `addr` is a tx chunk of our UMEM that the kernel is not using; len fits
                // a chunk (checked above).
                unsafe { ptr::copy_nonoverlapping(p.data().as_ptr(), umem.add(addr as usize), len) };
                self.xsk.tx.write(queued, libc::xdp_desc { addr, len: len as u32, options: 0 });
                queued += 1;
            } else {
                self.counters.tx_ring_full += 1;
            }
            pool.give(p);
        }
        if queued > 0 {
            self.xsk.tx.submit(queued);
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

    fn rx_fd(&self) -> Option<i32> {
        Some(self.xsk.fd.as_raw_fd())
    }
}
