//! Packet buffers and the pool they cycle through.
//!
//! Buffers are chunks of one arena, mapped once when the pool is made; rx takes them from the
//! pool, tx and drops give them back. Moving a `Packet` moves a pointer, so a batch passes through
//! the pipeline without copying or allocating. Because the arena is one region, a device can share
//! it (an AF_XDP UMEM): then the kernel writes received frames straight into packets and sends
//! packets straight from them.

mod pool;

pub use pool::PacketPool;

use pearl_wire::{GsoSegments, Offload};
use std::ptr::NonNull;

/// Room for a 1518-byte frame plus VLAN tags, with headroom to spare; also the chunk size of the
/// arena, and its alignment.
pub const BUF_SIZE: usize = 2048;

/// Room for the largest frame a host hands over: a 64 KiB GSO super-packet (an IP packet of up
/// to 65,535 bytes) behind Ethernet and two VLAN tags, or a jumbo frame; whole pages.
pub const LARGE_BUF_SIZE: usize = 68 * 1024;

/// One frame, where it came from, and what its sender left for the device to finish.
pub struct Packet {
    /// The packet's buffer: a `capacity`-byte chunk of one of its pool's arenas.
    chunk: NonNull<u8>,
    /// Where the frame starts in the chunk: 0, or the headroom a device left in front of it.
    start: u16,
    /// The port the frame arrived on (index into the port table).
    pub in_port: u16,
    len: u32,
    capacity: u32,
    /// A partial checksum or a GSO super-packet, as the receiving device reported it
    /// (virtio-net header); plain for a frame complete as it stands.
    pub offload: Offload,
}

// SAFETY: a packet owns its chunk alone, like a Box: a pool hands each chunk to one packet (or
// one device) at a time, and `Packet` is not Clone.
unsafe impl Send for Packet {}

impl Packet {
    /// Which buffer this is: the same for the packet's whole way through the pipeline, whatever
    /// a program does to its bounds (a packet trace follows packets by it).
    #[inline]
    pub fn buffer_id(&self) -> usize {
        self.chunk.as_ptr() as usize
    }

    #[inline]
    pub fn data(&self) -> &[u8] {
        // SAFETY: `start + len <= capacity` (kept by every setter), inside the chunk this packet
        // owns, which stays mapped while any of its packets lives (see `PacketPool`'s Drop).
        unsafe { std::slice::from_raw_parts(self.chunk.as_ptr().add(self.start as usize), self.len as usize) }
    }

    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `data`; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.chunk.as_ptr().add(self.start as usize), self.len as usize) }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunk's size: `BUF_SIZE`, or `LARGE_BUF_SIZE` for a packet taken for a large frame.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// The whole buffer, for a driver filling it from its first byte; follow with `set_len`.
    #[inline]
    pub fn buffer_mut(&mut self) -> &mut [u8] {
        self.start = 0;
        // SAFETY: the chunk is `capacity` bytes, owned by this packet alone.
        unsafe { std::slice::from_raw_parts_mut(self.chunk.as_ptr(), self.capacity as usize) }
    }

    /// The whole buffer and where the frame lies in it (start, length), for a program that may
    /// move the frame's edges into the room around it; follow with `set_bounds`.
    #[inline]
    pub fn room_mut(&mut self) -> (&mut [u8], usize, usize) {
        let (start, len) = (self.start as usize, self.len as usize);
        // SAFETY: the chunk is `capacity` bytes, owned by this packet alone.
        (unsafe { std::slice::from_raw_parts_mut(self.chunk.as_ptr(), self.capacity as usize) }, start, len)
    }

    /// Places the frame at `start..start + len` of its buffer (clamped to it). A start beyond
    /// what the packet can record moves the frame to the buffer's first byte.
    pub fn set_bounds(&mut self, start: usize, len: usize) {
        let start = start.min(self.capacity as usize);
        let len = len.min(self.capacity as usize - start);
        match u16::try_from(start) {
            Ok(s) => self.start = s,
            Err(_) => {
                self.room_mut().0.copy_within(start..start + len, 0);
                self.start = 0;
            }
        }
        self.len = len as u32;
    }

    /// Moves the frame within its buffer so that at least `headroom` bytes lie in front of it,
    /// if the buffer has the room; whether they do.
    pub fn reserve_headroom(&mut self, headroom: usize) -> bool {
        let (start, len) = (self.start as usize, self.len as usize);
        if start >= headroom {
            return true;
        }
        if headroom + len > self.capacity as usize {
            return false;
        }
        self.room_mut().0.copy_within(start..start + len, headroom);
        self.set_bounds(headroom, len);
        true
    }

    /// Follows headers a program put in front of the frame (`grown` bytes; negative: taken
    /// off its front), whose IP header was at `l3`: the offload's offsets move with the head,
    /// and a super-packet that grew is encapsulated, its inner packet where the IP header was
    /// (`tx_offload` cuts it). False if what was put in front of a super-packet is no tunnel's
    /// headers: no one could cut it.
    pub fn follow_head(&mut self, grown: i32, l3: usize) -> bool {
        self.offload.shift(grown);
        if grown <= 0 || !self.offload.is_gso() {
            return true;
        }
        self.offload.encapsulated = (l3 + grown as usize) as u16;
        GsoSegments::of_frame(self.data(), &self.offload).is_ok()
    }

    /// Sets the frame length (clamped to the buffer).
    #[inline]
    pub fn set_len(&mut self, len: usize) {
        self.len = len.min(self.capacity as usize - self.start as usize) as u32;
    }

    /// Replaces the frame with a copy of `frame` (truncated to the buffer), complete as it
    /// stands (no offload state).
    #[inline]
    pub fn fill(&mut self, frame: &[u8]) {
        let n = frame.len().min(self.capacity as usize);
        let (dst, src) = (self.buffer_mut(), &frame[..n]);
        // Minimum-size frames are the common case of a packet rate: two overlapping
        // fixed-size copies inline instead of a call into memcpy's size dispatch.
        match n {
            32..=64 => {
                dst[..32].copy_from_slice(&src[..32]);
                dst[n - 32..n].copy_from_slice(&src[n - 32..]);
            }
            65..=128 => {
                dst[..64].copy_from_slice(&src[..64]);
                dst[n - 64..n].copy_from_slice(&src[n - 64..]);
            }
            _ => dst[..n].copy_from_slice(src),
        }
        self.len = n as u32;
        self.offload = Offload::default();
    }
}
