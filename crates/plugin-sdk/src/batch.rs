//! A batch as the plugin sees it: frames with their interface and verdict, in the area pearld
//! wrote them to.

use crate::abi::*;

pub struct Batch<'a> {
    /// The header and descriptors.
    head: &'a mut [u8],
    /// The frames, from `FRAMES_AT` on.
    frames: &'a mut [u8],
    count: usize,
}

impl<'a> Batch<'a> {
    /// The batch of `count` frames pearld wrote into `area`.
    pub fn new(area: &'a mut [u8], count: usize) -> Batch<'a> {
        let (head, frames) = area.split_at_mut(FRAMES_AT);
        Batch { head, frames, count: count.min(MAX_BATCH) }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// When pearld took the batch, in nanoseconds of a monotonic clock.
    pub fn time_ns(&self) -> u64 {
        u64::from_le_bytes(self.head[HEADER_TIME_NS..HEADER_TIME_NS + 8].try_into().unwrap_or_default())
    }

    /// Frame `i` of the batch (`i < len()`).
    pub fn frame(&mut self, i: usize) -> Frame<'_> {
        assert!(i < self.count, "frame {i} of a batch of {}", self.count);
        let desc = &mut self.head[HEADER_LEN + i * DESCRIPTOR_LEN..][..DESCRIPTOR_LEN];
        let word = |at: usize| u32::from_le_bytes([desc[at], desc[at + 1], desc[at + 2], desc[at + 3]]) as usize;
        let (offset, cap) = (word(DESC_OFFSET), word(DESC_CAP));
        let data = &mut self.frames[offset - FRAMES_AT..][..cap];
        Frame { desc, data }
    }
}

/// One frame: its bytes (rewritable in place, up to its capacity) and its verdict.
pub struct Frame<'a> {
    desc: &'a mut [u8],
    data: &'a mut [u8],
}

impl Frame<'_> {
    /// The VR interface it came in on (in the configuration's order).
    pub fn interface(&self) -> u16 {
        u16::from_le_bytes([self.desc[DESC_INTERFACE], self.desc[DESC_INTERFACE + 1]])
    }

    pub fn len(&self) -> usize {
        u32::from_le_bytes([self.desc[DESC_LEN], self.desc[DESC_LEN + 1], self.desc[DESC_LEN + 2], self.desc[DESC_LEN + 3]]) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frame (Ethernet header first): PEARL's `read_packet`.
    pub fn data(&self) -> &[u8] {
        let len = self.len();
        &self.data[..len]
    }

    pub fn data_mut(&mut self) -> &mut [u8] {
        let len = self.len();
        &mut self.data[..len]
    }

    /// How long the frame may become (its length and [`HEADROOM`] at least).
    pub fn capacity(&self) -> usize {
        self.data.len()
    }

    /// Makes the frame `len` bytes long (at most `capacity()`; false if longer). New bytes
    /// are what the area held there: write them.
    pub fn set_len(&mut self, len: usize) -> bool {
        if len > self.data.len() {
            return false;
        }
        self.desc[DESC_LEN..DESC_LEN + 4].copy_from_slice(&(len as u32).to_le_bytes());
        true
    }

    /// Out of VR interface `interface`, as the frame stands: PEARL's `send_packet`.
    pub fn send(&mut self, interface: u16) {
        self.set_verdict(VERDICT_SEND | (interface & !VERDICT_SEND));
    }

    /// A copy also leaves by VR interface `interface` (0–63), besides the verdict's own fate
    /// (`send`, `to_kernel` or none): every copy is the frame as the plugin left it.
    pub fn also_send(&mut self, interface: u16) {
        let bit = 1u64.checked_shl(u32::from(interface)).unwrap_or(0);
        let copies = u64::from_le_bytes(self.desc[DESC_COPIES..DESC_COPIES + 8].try_into().unwrap_or_default()) | bit;
        self.desc[DESC_COPIES..DESC_COPIES + 8].copy_from_slice(&copies.to_le_bytes());
    }

    /// To the VR's kernel, as it arrived.
    pub fn to_kernel(&mut self) {
        self.set_verdict(VERDICT_SLOW);
    }

    pub fn drop_it(&mut self) {
        self.set_verdict(VERDICT_DROP);
    }

    fn set_verdict(&mut self, v: u16) {
        self.desc[DESC_VERDICT..DESC_VERDICT + 2].copy_from_slice(&v.to_le_bytes());
    }
}
