//! One receiving socket of an AF_PACKET port and its TPACKET_V2 ring: the kernel writes each
//! frame into the next free slot and marks it ours; we copy it into a packet buffer and hand
//! the slot back at once. No syscall. V2 rather than V3: a V3 ring hands over whole blocks,
//! and a block that is not full only when its timer retires it, which made a lone frame wait
//! ~0.5–1 ms (ping through a VR took ~1–2 ms instead of ~0.1).
//!
//! The kernel takes a VLAN tag out of a frame before a packet socket sees it (into the slot's
//! header); the copy puts it back, so the pipeline sees the frame as it was on the wire.

use super::packet_socket::{bind, packet_socket, set_opt, Mapping};
use super::rx_class::RxClass;
use super::Fanout;
use crate::packet::{Packet, PacketPool, LARGE_BUF_SIZE};
use crate::prefetch::prefetch_bytes;
use pearl_wire::offload::VNET_HDR_LEN;
use pearl_wire::Offload;
use std::io;
use std::mem::size_of_val;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::{self, addr_of, addr_of_mut};
use std::sync::atomic::{fence, Ordering};

/// A ring's slots: `frame` bytes each, `per_block` to a block of `frame × per_block` bytes
/// (a multiple of the page size), `blocks` blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Geometry {
    pub frame: usize,
    pub per_block: usize,
    pub blocks: usize,
}

impl Geometry {
    fn slots(self) -> usize {
        self.per_block * self.blocks
    }

    fn block(self) -> usize {
        self.frame * self.per_block
    }
}

/// How the socket joins the port's other workers' sockets.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sharing {
    pub promiscuous: bool,
    pub fanout_group: Option<u16>,
    pub fanout: Fanout,
}

/// What the copy of one frame counts when it goes wrong.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Losses {
    pub too_long: u64,
    pub bad_offload: u64,
    pub no_buffer: u64,
}

/// The head slot's fate.
pub(super) enum Taken {
    Packet(Packet),
    /// Counted and handed back to the kernel.
    Dropped,
    /// The pool ran dry; the frame stays in the ring.
    NoBuffer,
}

pub(super) struct RxRing {
    fd: OwnedFd,
    ring: Mapping,
    geometry: Geometry,
    /// The next slot to read; the kernel fills slots in the same order.
    head: usize,
    pub class: RxClass,
}

/// Errors name the call that failed.
type OpenError = (&'static str, io::Error);

impl RxRing {
    /// A socket on `ifindex` taking `class`'s frames into a ring of `geometry`; bound to all
    /// protocols only once its ring and filter exist, so no frame ever lands in an ordinary
    /// socket queue or in the wrong ring.
    pub fn open(ifindex: i32, geometry: Geometry, class: RxClass, sharing: Sharing) -> Result<RxRing, OpenError> {
        let fd = packet_socket().map_err(|e| ("socket(AF_PACKET) for rx", e))?;
        set_opt(&fd, libc::PACKET_VERSION, &(libc::tpacket_versions::TPACKET_V2 as libc::c_int))
            .map_err(|e| ("setsockopt(PACKET_VERSION, TPACKET_V2)", e))?;
        set_opt(&fd, libc::PACKET_IGNORE_OUTGOING, &1 as &libc::c_int).map_err(|e| ("setsockopt(PACKET_IGNORE_OUTGOING)", e))?;
        // Before the ring: the kernel then leaves room for the header in front of each frame.
        set_opt(&fd, libc::PACKET_VNET_HDR, &1 as &libc::c_int).map_err(|e| ("setsockopt(PACKET_VNET_HDR)", e))?;
        let req = libc::tpacket_req {
            tp_block_size: geometry.block() as u32,
            tp_block_nr: geometry.blocks as u32,
            tp_frame_size: geometry.frame as u32,
            tp_frame_nr: geometry.slots() as u32,
        };
        set_opt(&fd, libc::PACKET_RX_RING, &req).map_err(|e| ("setsockopt(PACKET_RX_RING)", e))?;
        let ring = Mapping::new(&fd, geometry.block() * geometry.blocks).map_err(|e| ("mmap(rx ring)", e))?;
        class.restore(&fd).map_err(|e| ("setsockopt(SO_ATTACH_FILTER, frame length)", e))?;
        bind(&fd, ifindex, libc::ETH_P_ALL as u16).map_err(|e| ("bind(rx)", e))?;
        if let Some(group) = sharing.fanout_group {
            let mode = match sharing.fanout {
                Fanout::Hash => libc::PACKET_FANOUT_HASH,
                Fanout::RoundRobin => libc::PACKET_FANOUT_LB,
                Fanout::Program => libc::PACKET_FANOUT_CBPF,
            };
            let arg = libc::c_int::from(group) | (mode as libc::c_int) << 16;
            set_opt(&fd, libc::PACKET_FANOUT, &arg).map_err(|e| ("setsockopt(PACKET_FANOUT)", e))?;
        }
        if sharing.promiscuous {
            let mreq = libc::packet_mreq { mr_ifindex: ifindex, mr_type: libc::PACKET_MR_PROMISC as u16, mr_alen: 0, mr_address: [0; 8] };
            set_opt(&fd, libc::PACKET_ADD_MEMBERSHIP, &mreq).map_err(|e| ("setsockopt(PACKET_ADD_MEMBERSHIP, promiscuous)", e))?;
        }
        Ok(RxRing { fd, ring, geometry, head: 0, class })
    }

    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Frames the kernel dropped because the ring was full, since the last call (a syscall).
    pub fn take_drops(&self) -> io::Result<u32> {
        let mut stats = libc::tpacket_stats { tp_packets: 0, tp_drops: 0 };
        let mut len = size_of_val(&stats) as libc::socklen_t;
        // SAFETY: `stats` and `len` are valid for writes of the sizes passed.
        let rc = unsafe {
            libc::getsockopt(self.fd.as_raw_fd(), libc::SOL_PACKET, libc::PACKET_STATISTICS, addr_of_mut!(stats).cast(), &mut len)
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // The kernel resets its counters on every read.
        Ok(stats.tp_drops)
    }

    /// The header of slot `i`, which must be below the slot count.
    fn slot(&self, i: usize) -> *mut libc::tpacket2_hdr {
        debug_assert!(i < self.geometry.slots());
        // SAFETY: i < slots, so the slot lies inside the mapping (the frame size divides the
        // block size, so slots sit back to back across blocks).
        unsafe { self.ring.base.add(i * self.geometry.frame).cast() }
    }

    /// The slot after `i`, round the ring (a compare, not a division: this runs per frame).
    fn next_slot(&self, i: usize) -> usize {
        if i + 1 == self.geometry.slots() {
            0
        } else {
            i + 1
        }
    }

    /// The head slot if the kernel has filled it; its contents may be read from then on.
    pub fn ready(&self) -> Option<*mut libc::tpacket2_hdr> {
        let hdr = self.slot(self.head);
        // SAFETY: `hdr` is a slot header inside the ring; the status word is shared with the
        // kernel, hence the volatile read.
        let status = unsafe { ptr::read_volatile(addr_of!((*hdr).tp_status)) };
        if status & libc::TP_STATUS_USER == 0 {
            return None;
        }
        // Pairs with the kernel's barrier before it flips the status: the slot's contents are
        // complete once we see TP_STATUS_USER.
        fence(Ordering::Acquire);
        Some(hdr)
    }

    /// When the kernel received the frame in a ready slot `hdr`: orders frames across rings.
    pub fn arrival(hdr: *mut libc::tpacket2_hdr) -> (u32, u32) {
        // SAFETY: a ready slot's header is ours to read.
        unsafe { ((*hdr).tp_sec, (*hdr).tp_nsec) }
    }

    /// Copies the frame in the ready head slot `hdr` into a buffer of `pool` and hands the
    /// slot back (unless no buffer was free). `prefetch`: pull the next slot's frame over
    /// meanwhile.
    pub fn take(&mut self, hdr: *mut libc::tpacket2_hdr, pool: &mut PacketPool, losses: &mut Losses, prefetch: bool) -> Taken {
        // SAFETY: the slot is ours until we hand it back; its header is plain data.
        let (status, len, snaplen, mac, tci, tpid) = unsafe {
            (
                (*hdr).tp_status,
                (*hdr).tp_len as usize,
                (*hdr).tp_snaplen as usize,
                (*hdr).tp_mac as usize,
                (*hdr).tp_vlan_tci,
                (*hdr).tp_vlan_tpid,
            )
        };
        let tag = (status & libc::TP_STATUS_VLAN_VALID != 0).then(|| {
            let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 { tpid } else { ETH_P_8021Q };
            [tpid.to_be_bytes(), tci.to_be_bytes()]
        });
        let wire_len = snaplen + if tag.is_some() { VLAN_LEN } else { 0 };
        if snaplen != len
            || wire_len > LARGE_BUF_SIZE
            || mac + snaplen > self.geometry.frame
            || mac < VNET_HDR_LEN
            || (tag.is_some() && snaplen < VLAN_AT)
        {
            losses.too_long += 1;
            self.release(hdr);
            return Taken::Dropped;
        }
        // SAFETY: the kernel wrote the virtio-net header right in front of the frame, inside the
        // slot (mac >= VNET_HDR_LEN, checked).
        let vnet = unsafe { std::slice::from_raw_parts(hdr.cast::<u8>().add(mac - VNET_HDR_LEN), VNET_HDR_LEN) };
        let Ok(mut offload) = Offload::parse(vnet) else {
            losses.bad_offload += 1;
            self.release(hdr);
            return Taken::Dropped;
        };
        let Some(mut p) = pool.take_for(wire_len) else {
            losses.no_buffer += 1;
            return Taken::NoBuffer;
        };
        if prefetch {
            // The kernel wrote the ring from another CPU: start pulling the next frame over (if
            // it is there) while this one is copied.
            let next = self.slot(self.next_slot(self.head));
            // SAFETY: a read of the next slot's header, inside the ring; stale values only make
            // the prefetch useless.
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
        self.release(hdr);
        Taken::Packet(p)
    }

    /// Hands the head slot back to the kernel and moves on.
    fn release(&mut self, hdr: *mut libc::tpacket2_hdr) {
        // Every read of the slot happens before the kernel may refill it.
        fence(Ordering::Release);
        // SAFETY: `hdr` is the head slot's header inside the ring.
        unsafe { ptr::write_volatile(addr_of_mut!((*hdr).tp_status), libc::TP_STATUS_KERNEL) };
        self.head = self.next_slot(self.head);
    }
}

/// The bytes a slot of `frame` bytes holds from the frame's first: the kernel puts the slot's
/// header, an address, alignment and the virtio-net header in front (~76 bytes on Ethernet);
/// 128 keeps room for a longer link header.
pub(super) const fn frame_room(frame: usize) -> usize {
    frame - 128
}

/// Received frames keep the prefetch to their first bytes: a super-packet is copied line by
/// line anyway, and prefetching all of it would only evict the next frames' headers.
const PREFETCH_LIMIT: usize = 2048;
/// The TPID of a tag the kernel reports without one (kernels before 3.14).
const ETH_P_8021Q: u16 = 0x8100;
/// Where a VLAN tag goes back into a frame: after the two MAC addresses.
const VLAN_AT: usize = 12;
const VLAN_LEN: usize = 4;
