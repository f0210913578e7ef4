//! AF_PACKET with shared-memory rings: the driver for any Linux interface AF_XDP cannot bind.
//!
//! Two sockets, each with a TPACKET_V2 ring of fixed 2 KiB slots:
//! - rx: the kernel writes each frame into the next free slot and marks it ours; we copy it into a
//!   packet buffer and hand the slot back at once. No syscall. V2 rather than V3: a V3 ring hands
//!   over whole blocks, and a block that is not full only when its timer retires it, which
//!   made a lone frame wait ~0.5–1 ms (ping through a VR took ~1–2 ms instead of ~0.1). Per
//!   frame both read one header from the shared ring.
//! - tx: a batch is copied into consecutive slots and one non-blocking `sendto` asks the kernel to
//!   send everything marked ready. With PACKET_QDISC_BYPASS the frames go straight to the
//!   driver's queue.
//!
//! The kernel takes a VLAN tag out of a frame before a packet socket sees it (into the slot's
//! header); rx puts it back, so the pipeline sees the frame as it was on the wire.
//!
//! Offloads (PACKET_VNET_HDR, as QEMU's and VPP's af_packet drivers use it): the kernel puts a
//! virtio-net header in front of every received frame, saying when the sender left its L4
//! checksum partial or handed over a GSO super-packet (a veth peer with default offloads sends
//! TCP as super-packets of up to 64 KiB); rx slots are large enough for one, and the header
//! becomes the packet's `offload`. Super-packets leave whole through a `VnetSender`, so the
//! kernel cuts them, or hands them whole to a veth peer, exactly as when it forwards them
//! itself. A frame whose checksum alone is partial is finished in software before the tx ring
//! (`offloads()`: tx_gso, not tx_csum): summing a frame costs less than a syscall for it.
//!
//! The rx socket is promiscuous and ignores outgoing frames (PACKET_IGNORE_OUTGOING), so it sees
//! only what arrives on the wire, never what this port or the host sends. The tx socket is bound
//! with protocol 0 so it queues nothing for reading.
//!
//! `AfPacketPort::receiver` opens the rx side alone, for a `SplitPort` that sends through AF_XDP.

use super::vnet_tx::VnetSender;
use super::{Offloads, Port};
use crate::packet::{Packet, PacketPool, BUF_SIZE, LARGE_BUF_SIZE};
use crate::port::steering::Insn;
use crate::prefetch::prefetch_bytes;
use pearl_wire::offload::VNET_HDR_LEN;
use pearl_wire::Offload;
use std::ffi::CString;
use std::io;
use std::mem::{size_of, size_of_val};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::{self, addr_of, addr_of_mut};
use std::sync::atomic::{fence, Ordering};

/// Ring geometry and socket options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfPacketConfig {
    /// Bytes per rx slot: a frame with its headers (a multiple of 16). The default holds a
    /// 64 KiB super-packet.
    pub rx_frame_size: u32,
    /// Bytes per rx block: a multiple of the page size and of `rx_frame_size`.
    pub rx_block_size: u32,
    pub rx_block_count: u32,
    /// Tx slots wanted; rounded up to whole tx blocks.
    pub tx_frames: u32,
    /// Put the interface in promiscuous mode while the port is open.
    pub promiscuous: bool,
    /// Ask for PACKET_QDISC_BYPASS on tx (used when the kernel offers it).
    pub qdisc_bypass: bool,
    /// Join this PACKET_FANOUT group on rx: several workers each open the port and the kernel
    /// spreads its frames over them as `fanout` says.
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
    /// 4,095 rx slots of 68 KiB (273 blocks of 15, ~1 MiB each: the kernel allocates blocks in
    /// powers of two of pages, and 15 slots fill 2^8 pages but for 16 KiB: 273 MiB of ring),
    /// 496 tx slots (~1 MiB). The depth is for the time a worker is kept off its CPU while
    /// frames arrive: on veth the sender's CPU writes the ring in its own softirq, unslowed,
    /// and a flood of ND or of unresolved destinations at ~200 kpps (thc-ipv6 on a shared
    /// 2-CPU host, docs/benchmarks/nd-exhaustion.md) overran 255 slots (1.3 ms) and took a
    /// ping flow to 58–74 %; 2,048 kept 99.0–99.5 %, 4,096 100 %. A small frame touches only
    /// the first page of its slot, and an empty ring is read where the kernel writes it.
    fn default() -> AfPacketConfig {
        AfPacketConfig {
            rx_frame_size: RX_LARGE_FRAME as u32,
            rx_block_size: 15 * RX_LARGE_FRAME as u32,
            rx_block_count: 273,
            tx_frames: 496,
            promiscuous: true,
            qdisc_bypass: true,
            fanout_group: None,
            fanout: Fanout::Hash,
        }
    }
}

impl AfPacketConfig {
    /// The default geometry with room for at least `frames` received frames (whole blocks of
    /// 15 slots, each slot ~68 KiB: a ring of N frames takes N × 68 KiB of memory).
    pub fn with_rx_frames(mut self, frames: u32) -> AfPacketConfig {
        let per_block = self.rx_block_size / self.rx_frame_size;
        self.rx_block_count = frames.div_ceil(per_block).max(1);
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
/// An rx slot for a super-packet: header, address, virtio-net header, then the frame at the
/// header's `tp_mac` (~82 bytes in); room for 65,535 bytes of IP behind Ethernet.
const RX_LARGE_FRAME: usize = 68 * 1024;
/// Received frames keep the prefetch to their first bytes: a super-packet is copied line by
/// line anyway, and prefetching all of it would only evict the next frames' headers.
const PREFETCH_LIMIT: usize = 2048;
const ETH_HLEN: usize = 14;
/// The TPID of a tag the kernel reports without one (kernels before 3.14).
const ETH_P_8021Q: u16 = 0x8100;
/// Where a VLAN tag goes back into a frame: after the two MAC addresses.
const VLAN_AT: usize = 12;
const VLAN_LEN: usize = 4;

/// A shared ring mapping, unmapped on drop.
struct Mapping {
    base: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(fd: &OwnedFd, len: usize) -> io::Result<Mapping> {
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
    rx_fd: OwnedFd,
    rx_ring: Mapping,
    rx_slots: usize,
    rx_frame_size: usize,
    /// The next slot to read; the kernel fills slots in the same order.
    rx_head: usize,
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
        let page = page_size();
        let frame = config.rx_frame_size as usize;
        if frame < 256 || !frame.is_multiple_of(TPACKET_ALIGNMENT) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("af_packet {ifname}: rx_frame_size {frame} is not a multiple of {TPACKET_ALIGNMENT} of at least 256 bytes"),
            ));
        }
        let block = config.rx_block_size as usize;
        if block == 0 || !block.is_multiple_of(page) || !block.is_multiple_of(frame) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "af_packet {ifname}: rx_block_size {block} is not a multiple of the page size ({page}) and of rx_frame_size ({frame})"
                ),
            ));
        }
        if config.rx_block_count == 0 || (transmit && config.tx_frames == 0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("af_packet {ifname}: rx_block_count and tx_frames must be positive"),
            ));
        }
        let ifindex = interface_index(ifname).map_err(|e| ctx("if_nametoindex", e))?;

        // rx: TPACKET_V2 ring, bound to all protocols only once the ring exists, so no frame
        // ever lands in an ordinary socket queue.
        let rx_fd = packet_socket().map_err(|e| ctx("socket(AF_PACKET) for rx", e))?;
        set_opt(&rx_fd, libc::PACKET_VERSION, &(libc::tpacket_versions::TPACKET_V2 as libc::c_int))
            .map_err(|e| ctx("setsockopt(PACKET_VERSION, TPACKET_V2)", e))?;
        set_opt(&rx_fd, libc::PACKET_IGNORE_OUTGOING, &1 as &libc::c_int).map_err(|e| ctx("setsockopt(PACKET_IGNORE_OUTGOING)", e))?;
        // Before the ring: the kernel then leaves room for the header in front of each frame.
        set_opt(&rx_fd, libc::PACKET_VNET_HDR, &1 as &libc::c_int).map_err(|e| ctx("setsockopt(PACKET_VNET_HDR)", e))?;
        let rx_slots = block / frame * config.rx_block_count as usize;
        let req = libc::tpacket_req {
            tp_block_size: config.rx_block_size,
            tp_block_nr: config.rx_block_count,
            tp_frame_size: frame as u32,
            tp_frame_nr: rx_slots as u32,
        };
        set_opt(&rx_fd, libc::PACKET_RX_RING, &req).map_err(|e| ctx("setsockopt(PACKET_RX_RING)", e))?;
        let rx_len = config.rx_block_size as usize * config.rx_block_count as usize;
        let rx_ring = Mapping::new(&rx_fd, rx_len).map_err(|e| ctx("mmap(rx ring)", e))?;
        bind(&rx_fd, ifindex, libc::ETH_P_ALL as u16).map_err(|e| ctx("bind(rx)", e))?;
        if let Some(group) = config.fanout_group {
            let mode = match config.fanout {
                Fanout::Hash => libc::PACKET_FANOUT_HASH,
                Fanout::RoundRobin => libc::PACKET_FANOUT_LB,
                Fanout::Program => libc::PACKET_FANOUT_CBPF,
            };
            let arg = libc::c_int::from(group) | (mode as libc::c_int) << 16;
            set_opt(&rx_fd, libc::PACKET_FANOUT, &arg).map_err(|e| ctx("setsockopt(PACKET_FANOUT)", e))?;
        }
        if config.promiscuous {
            let mreq = libc::packet_mreq { mr_ifindex: ifindex, mr_type: libc::PACKET_MR_PROMISC as u16, mr_alen: 0, mr_address: [0; 8] };
            set_opt(&rx_fd, libc::PACKET_ADD_MEMBERSHIP, &mreq).map_err(|e| ctx("setsockopt(PACKET_ADD_MEMBERSHIP, promiscuous)", e))?;
        }

        let tx = if transmit { Some(TxRing::open(config, ifindex).map_err(|(call, e)| ctx(call, e))?) } else { None };
        Ok(AfPacketPort {
            ifname: ifname.to_owned(),
            rx_fd,
            rx_ring,
            rx_slots,
            rx_frame_size: frame,
            rx_head: 0,
            tx,
            in_port: 0,
            counters: AfPacketCounters::default(),
        })
    }

    /// Stamps received packets with `in_port`.
    pub fn stamp_in_port(mut self, in_port: u16) -> AfPacketPort {
        self.in_port = in_port;
        self
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The counters, after collecting the kernel's rx drop count (a syscall: not per batch).
    pub fn counters(&mut self) -> io::Result<AfPacketCounters> {
        let mut stats = libc::tpacket_stats { tp_packets: 0, tp_drops: 0 };
        let mut len = size_of_val(&stats) as libc::socklen_t;
        // SAFETY: `stats` and `len` are valid for writes of the sizes passed.
        let rc = unsafe {
            libc::getsockopt(self.rx_fd.as_raw_fd(), libc::SOL_PACKET, libc::PACKET_STATISTICS, addr_of_mut!(stats).cast(), &mut len)
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("af_packet {}: getsockopt(PACKET_STATISTICS): {e}", self.ifname)));
        }
        // The kernel resets its counters on every read.
        self.counters.rx_ring_drops += u64::from(stats.tp_drops);
        Ok(self.counters)
    }

    /// The header of rx slot `i`, which must be below `rx_slots`.
    fn rx_slot(&self, i: usize) -> *mut libc::tpacket2_hdr {
        debug_assert!(i < self.rx_slots);
        // SAFETY: i < rx_slots, so the slot lies inside the mapping (the frame size divides the
        // block size, so slots sit back to back across blocks).
        unsafe { self.rx_ring.base.add(i * self.rx_frame_size).cast() }
    }

    /// The slot after `i`, round the ring (a compare, not a division: this runs per frame).
    fn next_rx_slot(&self, i: usize) -> usize {
        if i + 1 == self.rx_slots {
            0
        } else {
            i + 1
        }
    }

    /// Hands the head slot back to the kernel and moves on.
    fn release_rx_slot(&mut self, hdr: *mut libc::tpacket2_hdr) {
        // Every read of the slot happens before the kernel may refill it.
        fence(Ordering::Release);
        // SAFETY: `hdr` is the head slot's header inside the ring.
        unsafe { ptr::write_volatile(addr_of_mut!((*hdr).tp_status), libc::TP_STATUS_KERNEL) };
        self.rx_head = self.next_rx_slot(self.rx_head);
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
    fn rx_socket(&self) -> Option<BorrowedFd<'_>> {
        Some(self.rx_fd.as_fd())
    }

    fn steer(&mut self, program: &[Insn]) -> io::Result<()> {
        let mut filter: Vec<libc::sock_filter> =
            program.iter().map(|i| libc::sock_filter { code: i.code, jt: i.jt, jf: i.jf, k: i.k }).collect();
        let len = u16::try_from(filter.len()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "steering program too long"))?;
        let fprog = libc::sock_fprog { len, filter: filter.as_mut_ptr() };
        set_opt(&self.rx_fd, libc::PACKET_FANOUT_DATA, &fprog)
            .map_err(|e| io::Error::new(e.kind(), format!("af_packet {}: setsockopt(PACKET_FANOUT_DATA): {e}", self.ifname)))
    }

    fn rx_batch(&mut self, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        let mut n = 0;
        while n < max {
            let hdr = self.rx_slot(self.rx_head);
            // SAFETY: `hdr` is a slot header inside the ring; the status word is shared with the
            // kernel, hence the volatile read.
            let status = unsafe { ptr::read_volatile(addr_of!((*hdr).tp_status)) };
            if status & libc::TP_STATUS_USER == 0 {
                break;
            }
            // Pairs with the kernel's barrier before it flips the status: the slot's contents
            // are complete once we see TP_STATUS_USER.
            fence(Ordering::Acquire);
            // SAFETY: the slot is ours until we hand it back; its header is plain data.
            let (len, snaplen, mac, tci, tpid) = unsafe {
                ((*hdr).tp_len as usize, (*hdr).tp_snaplen as usize, (*hdr).tp_mac as usize, (*hdr).tp_vlan_tci, (*hdr).tp_vlan_tpid)
            };
            let tag = (status & libc::TP_STATUS_VLAN_VALID != 0).then(|| {
                let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 { tpid } else { ETH_P_8021Q };
                [tpid.to_be_bytes(), tci.to_be_bytes()]
            });
            let wire_len = snaplen + if tag.is_some() { VLAN_LEN } else { 0 };
            if snaplen != len
                || wire_len > LARGE_BUF_SIZE
                || mac + snaplen > self.rx_frame_size
                || mac < VNET_HDR_LEN
                || (tag.is_some() && snaplen < VLAN_AT)
            {
                self.counters.rx_too_long += 1;
                self.release_rx_slot(hdr);
                continue;
            }
            // SAFETY: the kernel wrote the virtio-net header right in front of the frame, inside
            // the slot (mac >= VNET_HDR_LEN, checked).
            let vnet = unsafe { std::slice::from_raw_parts(hdr.cast::<u8>().add(mac - VNET_HDR_LEN), VNET_HDR_LEN) };
            let Ok(mut offload) = Offload::parse(vnet) else {
                self.counters.rx_bad_offload += 1;
                self.release_rx_slot(hdr);
                continue;
            };
            let Some(mut p) = pool.take_for(wire_len) else {
                self.counters.rx_no_buffer += 1;
                break;
            };
            if n + 1 < max {
                // The kernel wrote the ring from another CPU: start pulling the next frame over
                // (if it is there) while this one is copied.
                let next = self.rx_slot(self.next_rx_slot(self.rx_head));
                // SAFETY: a read of the next slot's header, inside the ring; stale values only
                // make the prefetch useless.
                let (next_status, next_mac, next_len) =
                    unsafe { (ptr::read_volatile(addr_of!((*next).tp_status)), (*next).tp_mac as usize, (*next).tp_snaplen as usize) };
                if next_status & libc::TP_STATUS_USER != 0 {
                    prefetch_bytes(next.cast::<u8>().wrapping_add(next_mac), next_len.min(PREFETCH_LIMIT));
                }
            }
            let (src, dst) = (hdr.cast::<u8>().wrapping_add(mac), p.buffer_mut().as_mut_ptr());
            // SAFETY: the kernel wrote `snaplen` frame bytes at `mac` from the header, inside the
            // slot (checked); the destination buffer was taken for wire_len bytes.
            unsafe {
                match tag {
                    None => ptr::copy_nonoverlapping(src, dst, snaplen),
                    Some(tag) => {
                        ptr::copy_nonoverlapping(src, dst, VLAN_AT);
                        ptr::copy_nonoverlapping(tag.as_flattened().as_ptr(), dst.add(VLAN_AT), VLAN_LEN);
                        ptr::copy_nonoverlapping(src.add(VLAN_AT), dst.add(VLAN_AT + VLAN_LEN), snaplen - VLAN_AT);
                    }
                }
            }
            p.set_len(wire_len);
            if tag.is_some() {
                offload.shift(VLAN_LEN as i32);
            }
            p.offload = offload;
            p.in_port = self.in_port;
            out.push(p);
            n += 1;
            self.release_rx_slot(hdr);
        }
        self.counters.rx_packets += n as u64;
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
        Some(self.rx_fd.as_raw_fd())
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

fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

fn interface_index(ifname: &str) -> io::Result<i32> {
    let name = CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name contains NUL"))?;
    // SAFETY: `name` is a valid C string for the duration of the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(index as i32)
}

/// An AF_PACKET socket that receives nothing until bound with a protocol.
fn packet_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn set_opt<T>(fd: &OwnedFd, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is valid for reads of size_of::<T>() bytes, the size passed.
    let rc =
        unsafe { libc::setsockopt(fd.as_raw_fd(), libc::SOL_PACKET, name, (value as *const T).cast(), size_of::<T>() as libc::socklen_t) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn bind(fd: &OwnedFd, ifindex: i32, protocol: u16) -> io::Result<()> {
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
