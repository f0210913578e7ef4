//! AF_PACKET with shared-memory rings: the driver for any Linux interface AF_XDP cannot bind.
//!
//! Three sockets, each with a TPACKET_V2 ring of fixed slots:
//! - rx, in two rings by frame length (`packet_rx.rs`, `rx_class.rs`): a deep one of 2 KiB slots
//!   for every frame a 1500-byte link carries, and a shallow one of 68 KiB slots for GSO
//!   super-packets and jumbo frames. A V2 ring's slots are all as large as its largest frame,
//!   and the kernel allocates the whole ring when the socket opens: one ring deep enough for a
//!   flood (4,096 frames, docs/benchmarks/nd-exhaustion.md) and wide enough for super-packets
//!   took 273 MiB per port and worker, and ~1–2 s of the kernel's time to allocate each (pearld
//!   took 16 s to start with eight ports). Split, the two take 25 MiB. Frames of one flow may
//!   land in both rings (a bulk TCP flow's short tail); the port reads the earlier of the two
//!   heads first, by the time the kernel stamped on each, so a batch leaves in arrival order.
//! - tx: a batch is copied into consecutive slots and one non-blocking `sendto` asks the kernel to
//!   send everything marked ready. With PACKET_QDISC_BYPASS the frames go straight to the
//!   driver's queue.
//!
//! Offloads (PACKET_VNET_HDR, as QEMU's and VPP's af_packet drivers use it): the kernel puts a
//! virtio-net header in front of every received frame, saying when the sender left its L4
//! checksum partial or handed over a GSO super-packet (a veth peer with default offloads sends
//! TCP as super-packets of up to 64 KiB); the header becomes the packet's `offload`.
//! Super-packets leave whole through a `VnetSender`, so the kernel cuts them, or hands them
//! whole to a veth peer, exactly as when it forwards them itself. A frame whose checksum alone
//! is partial is finished in software before the tx ring (`offloads()`: tx_gso, not tx_csum):
//! summing a frame costs less than a syscall for it.
//!
//! The rx sockets are promiscuous and ignore outgoing frames (PACKET_IGNORE_OUTGOING), so they
//! see only what arrives on the wire, never what this port or the host sends. The tx socket is
//! bound with protocol 0 so it queues nothing for reading.
//!
//! `AfPacketPort::receiver` opens the rx side alone, for a `SplitPort` that sends through AF_XDP.

use super::packet_rx::{frame_room, Geometry, Losses, RxRing, Sharing, Taken};
use super::packet_socket::{bind, interface_index, packet_socket, page_size, set_opt, Mapping};
use super::rx_class::RxClass;
use super::vnet_tx::VnetSender;
use super::{Offloads, Port};
use crate::packet::{Packet, PacketPool, BUF_SIZE};
use crate::port::steering::Insn;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::{self, addr_of, addr_of_mut};
use std::sync::atomic::{fence, Ordering};

/// Ring depths and socket options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfPacketConfig {
    /// Slots of the rx ring for frames of up to ~1.9 KiB (2 KiB each, rounded up to whole
    /// blocks of 32).
    pub rx_frames: u32,
    /// Slots of the rx ring for longer frames: super-packets and jumbo frames (68 KiB each,
    /// rounded up to whole blocks of 15). 0: no such ring; longer frames are dropped and
    /// counted as too long.
    pub rx_super_frames: u32,
    /// Tx slots wanted; rounded up to whole tx blocks.
    pub tx_frames: u32,
    /// Put the interface in promiscuous mode while the port is open.
    pub promiscuous: bool,
    /// Ask for PACKET_QDISC_BYPASS on tx (used when the kernel offers it).
    pub qdisc_bypass: bool,
    /// Join this PACKET_FANOUT group on rx: several workers each open the port and the kernel
    /// spreads its frames over them as `fanout` says. The super-packet ring's socket joins
    /// group `fanout_group ^ 0x8000`, in the same order, so a flow's frames of either length
    /// reach the same worker.
    pub fanout_group: Option<u16>,
    pub fanout: Fanout,
}

/// How a fanout group spreads a port's frames over its sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fanout {
    /// By flow hash: a flow stays with one socket, in order.
    #[default]
    Hash,
    /// Frame after frame to the next socket.
    RoundRobin,
    /// As the classic BPF program installed with `Port::steer` says (until then, every frame
    /// to the first socket).
    Program,
}

impl Default for AfPacketConfig {
    /// 4,096 rx slots of 2 KiB (8 MiB), 255 of 68 KiB (17 MiB: 17 blocks of 15 fill 2^8 pages
    /// but for 16 KiB each; the kernel allocates blocks in powers of two of pages), 496 tx
    /// slots (~1 MiB). The short frames' depth is for the time a worker is kept off its CPU
    /// while frames arrive: on veth the sender's CPU writes the ring in its own softirq,
    /// unslowed, and a flood of ND or of unresolved destinations at ~200 kpps (thc-ipv6 on a
    /// shared 2-CPU host, docs/benchmarks/nd-exhaustion.md) overran 255 slots (1.3 ms) and
    /// took a ping flow to 58–74 %; 2,048 kept 99.0–99.5 %, 4,096 100 %. 255 super-packets are
    /// 16 MiB of TCP, 13 ms at 10 Gb/s.
    fn default() -> AfPacketConfig {
        AfPacketConfig {
            rx_frames: 4096,
            rx_super_frames: 255,
            tx_frames: 496,
            promiscuous: true,
            qdisc_bypass: true,
            fanout_group: None,
            fanout: Fanout::Hash,
        }
    }
}

impl AfPacketConfig {
    /// The default geometry with room for at least `frames` received frames of ordinary
    /// length (a ring of N such frames takes N × 2 KiB of memory; the super-packet ring stays).
    pub fn with_rx_frames(mut self, frames: u32) -> AfPacketConfig {
        self.rx_frames = frames;
        self
    }
}

/// Counters of one AF_PACKET port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AfPacketCounters {
    pub rx_packets: u64,
    /// Frames longer than an rx slot or a large packet buffer, dropped.
    pub rx_too_long: u64,
    /// Frames whose virtio-net header asks for an offload pearld does not know, dropped.
    pub rx_bad_offload: u64,
    /// Received frames that could not get a buffer (the pool ran dry), left in the ring.
    pub rx_no_buffer: u64,
    /// Frames the kernel dropped because the rx ring was full.
    pub rx_ring_drops: u64,
    pub tx_packets: u64,
    /// Frames dropped because every tx slot was still owned by the kernel.
    pub tx_ring_full: u64,
    /// Frames shorter than an Ethernet header or longer than a tx slot, dropped.
    pub tx_bad_length: u64,
    /// Super-packets sent whole.
    pub tx_super_packets: u64,
    /// Super-packets the kernel refused.
    pub tx_super_refused: u64,
}
const TPACKET_ALIGNMENT: usize = 16;
const fn tpacket_align(x: usize) -> usize {
    (x + TPACKET_ALIGNMENT - 1) & !(TPACKET_ALIGNMENT - 1)
}
/// Where frame data starts in a V2 tx slot (the kernel's default `tp_hdrlen - sizeof(sll)`).
const TX_DATA_OFFSET: usize = tpacket_align(size_of::<libc::tpacket2_hdr>());
/// A tx slot holds a whole packet buffer after its header.
const TX_FRAME_SIZE: usize = tpacket_align(TX_DATA_OFFSET + BUF_SIZE);
const TX_BLOCK_SIZE: usize = 1 << 16;
const TX_FRAMES_PER_BLOCK: usize = TX_BLOCK_SIZE / TX_FRAME_SIZE;
/// A slot of the ordinary frames' ring: a 1500-byte link's longest frame, tagged twice, with
/// room to spare; 32 fill a 64 KiB block.
const RX_FRAME: usize = 2048;
const RX_FRAMES_PER_BLOCK: usize = 32;
/// A slot for a super-packet: header, address, virtio-net header, then the frame at the
/// header's `tp_mac` (~82 bytes in); room for 65,535 bytes of IP behind Ethernet.
const RX_SUPER_FRAME: usize = 68 * 1024;
const RX_SUPER_FRAMES_PER_BLOCK: usize = 15;
/// The longest frame the ordinary ring takes; longer ones go to the super-packet ring.
const RX_SHORT_MAX: u32 = frame_room(RX_FRAME) as u32;
const ETH_HLEN: usize = 14;

/// The tx socket and its ring.
struct TxRing {
    fd: OwnedFd,
    /// Super-packets go out whole through this socket.
    vnet: VnetSender,
    ring: Mapping,
    frame_count: usize,
    /// The next slot to fill; the kernel sends slots in the same order.
    head: usize,
    /// The last kick found the device busy: kick again even if the next batch is empty.
    kick_pending: bool,
}

/// A port on one interface of the current network namespace.
pub struct AfPacketPort {
    ifname: String,
    /// Frames of up to `RX_SHORT_MAX` bytes (or every frame, without `long`).
    short: RxRing,
    long: Option<RxRing>,
    /// With two rings, an epoll descriptor readable when either has frames, for the worker
    /// to sleep on.
    wake: Option<OwnedFd>,
    /// None on a port that only receives.
    tx: Option<TxRing>,
    in_port: u16,
    counters: AfPacketCounters,
}

impl AfPacketPort {
    /// Opens `ifname` with the default ring sizes.
    pub fn open(ifname: &str) -> io::Result<AfPacketPort> {
        AfPacketPort::with_config(ifname, &AfPacketConfig::default())
    }

    pub fn with_config(ifname: &str, config: &AfPacketConfig) -> io::Result<AfPacketPort> {
        AfPacketPort::open_with(ifname, config, true)
    }

    /// Opens `ifname` for receiving only (`config.tx_frames` and `qdisc_bypass` are not used):
    /// no tx socket; `tx_batch` refuses. For a `SplitPort`, which sends through another driver.
    pub fn receiver(ifname: &str, config: &AfPacketConfig) -> io::Result<AfPacketPort> {
        AfPacketPort::open_with(ifname, config, false)
    }

    fn open_with(ifname: &str, config: &AfPacketConfig, transmit: bool) -> io::Result<AfPacketPort> {
        let ctx = |call: &str, e: io::Error| io::Error::new(e.kind(), format!("af_packet {ifname}: {call}: {e}"));
        if config.rx_frames == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("af_packet {ifname}: rx_frames must be positive")));
        }
        if transmit && config.tx_frames == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("af_packet {ifname}: tx_frames must be positive")));
        }
        debug_assert!((RX_FRAME * RX_FRAMES_PER_BLOCK).is_multiple_of(page_size()));
        let ifindex = interface_index(ifname).map_err(|e| ctx("if_nametoindex", e))?;
        let sharing = Sharing { promiscuous: config.promiscuous, fanout_group: config.fanout_group, fanout: config.fanout };
        let blocks = |frames: u32, per_block: usize| (frames as usize).div_ceil(per_block);
        let short_geometry =
            Geometry { frame: RX_FRAME, per_block: RX_FRAMES_PER_BLOCK, blocks: blocks(config.rx_frames, RX_FRAMES_PER_BLOCK) };
        let (short_class, long) = match config.rx_super_frames {
            0 => (RxClass::All, None),
            frames => {
                let geometry = Geometry {
                    frame: RX_SUPER_FRAME,
                    per_block: RX_SUPER_FRAMES_PER_BLOCK,
                    blocks: blocks(frames, RX_SUPER_FRAMES_PER_BLOCK),
                };
                let sharing = Sharing { fanout_group: config.fanout_group.map(|g| g ^ 0x8000), ..sharing };
                (RxClass::AtMost(RX_SHORT_MAX), Some((geometry, sharing)))
            }
        };
        // The short ring first, then the long one: every worker joins the two fanout groups in
        // the same order, so a flow's index is the same in both.
        let short = RxRing::open(ifindex, short_geometry, short_class, sharing).map_err(|(call, e)| ctx(call, e))?;
        let long = match long {
            Some((geometry, sharing)) => {
                Some(RxRing::open(ifindex, geometry, RxClass::Above(RX_SHORT_MAX), sharing).map_err(|(call, e)| ctx(call, e))?)
            }
            None => None,
        };
        let wake = match &long {
            Some(long) => Some(wake_on_either(&short, long).map_err(|e| ctx("epoll_ctl(rx sockets)", e))?),
            None => None,
        };
        let tx = if transmit { Some(TxRing::open(config, ifindex).map_err(|(call, e)| ctx(call, e))?) } else { None };
        Ok(AfPacketPort { ifname: ifname.to_owned(), short, long, wake, tx, in_port: 0, counters: AfPacketCounters::default() })
    }

    /// Stamps received packets with `in_port`.
    pub fn stamp_in_port(mut self, in_port: u16) -> AfPacketPort {
        self.in_port = in_port;
        self
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The counters, after collecting the kernel's rx drop counts (syscalls: not per batch).
    pub fn counters(&mut self) -> io::Result<AfPacketCounters> {
        for ring in std::iter::once(&self.short).chain(&self.long) {
            let drops = ring
                .take_drops()
                .map_err(|e| io::Error::new(e.kind(), format!("af_packet {}: getsockopt(PACKET_STATISTICS): {e}", self.ifname)))?;
            self.counters.rx_ring_drops += u64::from(drops);
        }
        Ok(self.counters)
    }

    /// The ring whose head frame arrived first, with that frame, if either has one.
    fn next_frame(&mut self) -> Option<(&mut RxRing, *mut libc::tpacket2_hdr)> {
        let short = self.short.ready();
        let long = self.long.as_ref().and_then(RxRing::ready);
        match (short, long) {
            (Some(s), Some(l)) if RxRing::arrival(l) < RxRing::arrival(s) => Some((self.long.as_mut()?, l)),
            (Some(s), _) => Some((&mut self.short, s)),
            (None, Some(l)) => Some((self.long.as_mut()?, l)),
            (None, None) => None,
        }
    }
}

impl TxRing {
    /// A TPACKET_V2 socket with a ring of fixed slots, bound to `ifindex`. Errors name the call.
    fn open(config: &AfPacketConfig, ifindex: i32) -> Result<TxRing, (&'static str, io::Error)> {
        let fd = packet_socket().map_err(|e| ("socket(AF_PACKET) for tx", e))?;
        set_opt(&fd, libc::PACKET_VERSION, &(libc::tpacket_versions::TPACKET_V2 as libc::c_int))
            .map_err(|e| ("setsockopt(PACKET_VERSION, TPACKET_V2)", e))?;
        if config.qdisc_bypass {
            // Older kernels lack it; frames then take the qdisc path, which is only slower.
            let _ = set_opt(&fd, libc::PACKET_QDISC_BYPASS, &1 as &libc::c_int);
        }
        // A frame the kernel refuses (e.g. above the MTU) is skipped instead of stalling the ring.
        set_opt(&fd, libc::PACKET_LOSS, &1 as &libc::c_int).map_err(|e| ("setsockopt(PACKET_LOSS)", e))?;
        let blocks = (config.tx_frames as usize).div_ceil(TX_FRAMES_PER_BLOCK);
        let frame_count = blocks * TX_FRAMES_PER_BLOCK;
        let req = libc::tpacket_req {
            tp_block_size: TX_BLOCK_SIZE as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: TX_FRAME_SIZE as u32,
            tp_frame_nr: frame_count as u32,
        };
        set_opt(&fd, libc::PACKET_TX_RING, &req).map_err(|e| ("setsockopt(PACKET_TX_RING)", e))?;
        let ring = Mapping::new(&fd, TX_BLOCK_SIZE * blocks).map_err(|e| ("mmap(tx ring)", e))?;
        bind(&fd, ifindex, 0).map_err(|e| ("bind(tx)", e))?;
        let vnet = VnetSender::open(ifindex)?;
        Ok(TxRing { fd, vnet, ring, frame_count, head: 0, kick_pending: false })
    }

    fn slot(&self, i: usize) -> *mut u8 {
        let offset = i / TX_FRAMES_PER_BLOCK * TX_BLOCK_SIZE + i % TX_FRAMES_PER_BLOCK * TX_FRAME_SIZE;
        // SAFETY: i < frame_count, so the slot lies inside the mapping.
        unsafe { self.ring.base.add(offset) }
    }

    /// Asks the kernel to send every ready slot, without waiting.
    fn kick(&mut self, ifname: &str) -> io::Result<()> {
        // SAFETY: a zero-length sendto with no address only triggers the tx ring.
        let rc = unsafe { libc::sendto(self.fd.as_raw_fd(), ptr::null(), 0, libc::MSG_DONTWAIT, ptr::null(), 0) };
        self.kick_pending = false;
        if rc >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // The device queue is full or the link is down: the slots stay ready and go with
            // the next kick.
            Some(libc::EAGAIN | libc::ENOBUFS | libc::ENETDOWN) => {
                self.kick_pending = true;
                Ok(())
            }
            _ => Err(io::Error::new(e.kind(), format!("af_packet {ifname}: sendto(tx ring kick): {e}"))),
        }
    }
}
impl Port for AfPacketPort {
    fn rx_sockets(&self) -> Vec<(BorrowedFd<'_>, RxClass)> {
        std::iter::once(&self.short).chain(&self.long).map(|r| (r.fd().as_fd(), r.class)).collect()
    }

    fn steer(&mut self, program: &[Insn]) -> io::Result<()> {
        let mut filter: Vec<libc::sock_filter> =
            program.iter().map(|i| libc::sock_filter { code: i.code, jt: i.jt, jf: i.jf, k: i.k }).collect();
        let len = u16::try_from(filter.len()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "steering program too long"))?;
        let fprog = libc::sock_fprog { len, filter: filter.as_mut_ptr() };
        for ring in std::iter::once(&self.short).chain(&self.long) {
            set_opt(ring.fd(), libc::PACKET_FANOUT_DATA, &fprog)
                .map_err(|e| io::Error::new(e.kind(), format!("af_packet {}: setsockopt(PACKET_FANOUT_DATA): {e}", self.ifname)))?;
        }
        Ok(())
    }

    fn rx_batch(&mut self, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        let (mut n, mut losses, in_port) = (0, Losses::default(), self.in_port);
        while n < max {
            let Some((ring, hdr)) = self.next_frame() else { break };
            match ring.take(hdr, pool, &mut losses, n + 1 < max) {
                Taken::Packet(mut p) => {
                    p.in_port = in_port;
                    out.push(p);
                    n += 1;
                }
                Taken::Dropped => {}
                Taken::NoBuffer => break,
            }
        }
        let c = &mut self.counters;
        c.rx_packets += n as u64;
        c.rx_too_long += losses.too_long;
        c.rx_bad_offload += losses.bad_offload;
        c.rx_no_buffer += losses.no_buffer;
        Ok(n)
    }

    fn tx_batch(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> io::Result<usize> {
        let Some(tx) = self.tx.as_mut() else {
            pool.give_all(batch);
            return Err(io::Error::new(io::ErrorKind::Unsupported, format!("af_packet {}: opened to receive only", self.ifname)));
        };
        let mut queued = 0;
        let mut supers = 0;
        let mut ring_full = false;
        for p in batch.drain(..) {
            let len = p.len();
            if p.offload.is_gso() || len > TX_FRAME_SIZE - TX_DATA_OFFSET {
                // A super-packet, or a jumbo frame longer than a ring slot. Whatever the ring
                // holds goes first: a flow's frames leave in order.
                if queued > 0 || tx.kick_pending {
                    tx.kick(&self.ifname)?;
                }
                if tx.vnet.send(&p) {
                    self.counters.tx_super_packets += 1;
                    supers += 1;
                } else {
                    self.counters.tx_super_refused += 1;
                }
                pool.give(p);
                continue;
            }
            if !(ETH_HLEN..=TX_FRAME_SIZE - TX_DATA_OFFSET).contains(&len) {
                self.counters.tx_bad_length += 1;
            } else if ring_full {
                self.counters.tx_ring_full += 1;
            } else {
                let slot = tx.slot(tx.head);
                let hdr = slot.cast::<libc::tpacket2_hdr>();
                // SAFETY: `slot` is a tx slot header inside the ring; the status word is shared
                // with the kernel, hence the volatile access.
                let status = unsafe { ptr::read_volatile(addr_of!((*hdr).tp_status)) };
                if status != libc::TP_STATUS_AVAILABLE {
                    ring_full = true;
                    self.counters.tx_ring_full += 1;
                } else {
                    // The kernel is done reading the slot once it reports it available.
                    fence(Ordering::Acquire);
                    // SAFETY: the slot is ours while its status is AVAILABLE; TX_DATA_OFFSET +
                    // len <= TX_FRAME_SIZE was checked above.
                    unsafe {
                        ptr::copy_nonoverlapping(p.data().as_ptr(), slot.add(TX_DATA_OFFSET), len);
                        (*hdr).tp_len = len as u32;
                    }
                    // The frame must be visible before the kernel may see SEND_REQUEST.
                    fence(Ordering::Release);
                    // SAFETY: as above.
                    unsafe { ptr::write_volatile(addr_of_mut!((*hdr).tp_status), libc::TP_STATUS_SEND_REQUEST) };
                    tx.head = (tx.head + 1) % tx.frame_count;
                    queued += 1;
                }
            }
            pool.give(p);
        }
        if queued > 0 || tx.kick_pending {
            tx.kick(&self.ifname)?;
        }
        self.counters.tx_packets += queued as u64;
        Ok(queued + supers)
    }

    fn rx_fd(&self) -> Option<i32> {
        Some(self.wake.as_ref().unwrap_or(self.short.fd()).as_raw_fd())
    }

    fn trickles(&self) -> bool {
        true
    }

    fn offloads(&self) -> Offloads {
        Offloads { rx_unmarked_partial: false, tx_csum: false, tx_gso: true }
    }

    fn rx_dropped(&mut self) -> u64 {
        // A failed read leaves the counts as last collected.
        let _ = self.counters();
        let c = &self.counters;
        c.rx_ring_drops + c.rx_too_long + c.rx_bad_offload
    }
}

/// An epoll descriptor that is readable while either ring holds a frame (level-triggered: the
/// rings' own readiness, looked at again on every wait).
fn wake_on_either(short: &RxRing, long: &RxRing) -> io::Result<OwnedFd> {
    // SAFETY: plain descriptor creation.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nobody else.
    let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
    for ring in [short, long] {
        let mut event = libc::epoll_event { events: libc::EPOLLIN as u32, u64: 0 };
        // SAFETY: both descriptors are open; `event` is valid for the call.
        if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, ring.fd().as_raw_fd(), &mut event) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(epoll)
}
