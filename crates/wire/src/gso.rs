//! Software segmentation of GSO super-packets: the fallback for an egress device that cannot
//! take them (AF_XDP, pcap, memory ports), with Linux's semantics (`tcp_gso_segment`,
//! `__udp_gso_segment`, `inet_gso_segment`): the payload cut into `gso_size` pieces behind a
//! copy of the headers; IPv4 total length, identification (one more per segment) and header
//! checksum; IPv6 payload length; TCP sequence numbers advanced, FIN and PSH on the last
//! segment only, CWR on the first only; every L4 checksum computed in full.
//!
//! A super-packet behind a tunnel's headers (`Offload::encapsulated`) is cut at its inner packet,
//! and each segment's outer headers are made true for it (`gso_outer`).
//!
//! An iterator that writes each segment into a buffer the caller brings, so that cutting a
//! super-packet allocates nothing.

use crate::checksum::{checksum, fold, sum};
use crate::ethernet::EthernetRepr;
use crate::gso_outer::OuterHeaders;
use crate::numbers::ip_proto;
use crate::offload::{BadOffload, Gso, Offload};

const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// The segments of one super-packet, in order.
pub struct GsoSegments<'a> {
    frame: &'a [u8],
    l3: usize,
    l4: usize,
    /// Where the payload starts (the end of the L4 header).
    payload_at: usize,
    payload_len: usize,
    segment: usize,
    v4: bool,
    tcp: bool,
    /// Payload bytes already cut.
    done: usize,
    index: u16,
    outer: OuterHeaders,
}

impl<'a> GsoSegments<'a> {
    /// The segments of `frame`, whose (outer) IP header starts at `l3_offset`, as `off`
    /// describes it.
    pub fn new(frame: &'a [u8], off: &Offload, l3_offset: usize) -> Result<GsoSegments<'a>, BadOffload> {
        let bad = |field: &'static str, offset: usize| BadOffload { field, offset };
        let (l3, outer) = match off.encapsulated {
            0 => (l3_offset, OuterHeaders::default()),
            inner => (usize::from(inner), OuterHeaders::parse(frame, l3_offset, usize::from(inner))?),
        };
        let version = frame.get(l3).ok_or(bad("l3_offset", l3))? >> 4;
        let (v4, l4, protocol, ip_end) = match version {
            4 if frame.len() >= l3 + 20 => {
                let total = usize::from(u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]));
                (true, l3 + usize::from(frame[l3] & 0xf) * 4, frame[l3 + 9], l3 + total)
            }
            6 if frame.len() >= l3 + 40 => {
                let payload = usize::from(u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]));
                (false, l3 + 40, frame[l3 + 6], l3 + 40 + payload)
            }
            _ => return Err(bad("ip version", l3)),
        };
        let tcp = match (off.gso, protocol) {
            (Gso::TcpV4, ip_proto::TCP) if v4 => true,
            (Gso::TcpV6, ip_proto::TCP) if !v4 => true,
            (Gso::UdpL4, ip_proto::UDP) => false,
            _ => return Err(bad("gso_type", l3)),
        };
        let l4_header = if tcp { usize::from(frame.get(l4 + 12).ok_or(bad("tcp header", l4))? >> 4) * 4 } else { 8 };
        let payload_at = l4 + l4_header;
        // A super-packet's IP length may read 0 when it exceeds 64 KiB (IPv6 jumbograms are
        // not offered by veth); the frame's own end bounds the payload then.
        let end = if ip_end > payload_at && ip_end <= frame.len() { ip_end } else { frame.len() };
        if payload_at > end {
            return Err(bad("hdr_len", payload_at));
        }
        if off.gso_size == 0 {
            return Err(bad("gso_size", 4));
        }
        Ok(GsoSegments {
            frame,
            l3,
            l4,
            payload_at,
            payload_len: end - payload_at,
            segment: usize::from(off.gso_size),
            v4,
            tcp,
            done: 0,
            index: 0,
            outer,
        })
    }

    /// The segments of Ethernet frame `frame` (its VLAN tags included), as `off` describes it.
    pub fn of_frame(frame: &'a [u8], off: &Offload) -> Result<GsoSegments<'a>, BadOffload> {
        let l3 = EthernetRepr::l3_offset(frame).map_err(|_| BadOffload { field: "ethernet header", offset: 0 })?;
        GsoSegments::new(frame, off, l3)
    }

    /// Cuts into smaller segments of `payload` bytes (e.g. for a smaller egress MTU); never
    /// larger than the sender's.
    pub fn with_segment_size(mut self, payload: usize) -> GsoSegments<'a> {
        self.segment = self.segment.min(payload.max(1));
        self
    }

    /// The length of the largest segment: what a buffer must hold.
    pub fn max_segment_len(&self) -> usize {
        self.payload_at + self.segment.min(self.payload_len.max(1))
    }

    /// Segments not yet written.
    pub fn remaining(&self) -> usize {
        if self.payload_len == 0 {
            return usize::from(self.index == 0);
        }
        (self.payload_len - self.done).div_ceil(self.segment)
    }

    /// Writes the next segment, a complete frame, into `out` and returns its length; `None`
    /// when all are written or `out` is too short for it.
    pub fn next_into(&mut self, out: &mut [u8]) -> Option<usize> {
        if self.remaining() == 0 {
            return None;
        }
        let n = self.segment.min(self.payload_len - self.done);
        let len = self.payload_at + n;
        let out = out.get_mut(..len)?;
        let last = self.done + n == self.payload_len;
        out[..self.payload_at].copy_from_slice(&self.frame[..self.payload_at]);
        out[self.payload_at..].copy_from_slice(&self.frame[self.payload_at + self.done..self.payload_at + self.done + n]);
        let (l3, l4) = (self.l3, self.l4);
        if self.v4 {
            let ip = &mut out[l3..l4];
            ip[2..4].copy_from_slice(&((len - l3) as u16).to_be_bytes());
            let id = u16::from_be_bytes([ip[4], ip[5]]).wrapping_add(self.index);
            ip[4..6].copy_from_slice(&id.to_be_bytes());
            ip[10..12].fill(0);
            let c = checksum(ip);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
        } else {
            out[l3 + 4..l3 + 6].copy_from_slice(&((len - l3 - 40) as u16).to_be_bytes());
        }
        let at = if self.tcp {
            let seq = u32::from_be_bytes([out[l4 + 4], out[l4 + 5], out[l4 + 6], out[l4 + 7]]).wrapping_add(self.done as u32);
            out[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
            if !last {
                out[l4 + 13] &= !(TCP_FIN | TCP_PSH);
            }
            if self.index > 0 {
                out[l4 + 13] &= !TCP_CWR;
            }
            l4 + 16
        } else {
            out[l4 + 4..l4 + 6].copy_from_slice(&((len - l4) as u16).to_be_bytes());
            l4 + 6
        };
        out[at..at + 2].fill(0);
        let addrs = if self.v4 { &out[l3 + 12..l3 + 20] } else { &out[l3 + 8..l3 + 40] };
        let protocol = if self.tcp { ip_proto::TCP } else { ip_proto::UDP };
        let c = match !fold(sum(addrs) + u64::from(protocol) + (len - l4) as u64 + sum(&out[l4..])) {
            0 => 0xffff,
            c => c,
        };
        out[at..at + 2].copy_from_slice(&c.to_be_bytes());
        if !self.outer.is_empty() {
            self.outer.fix(out, self.index);
        }
        self.done += n;
        self.index += 1;
        Some(len)
    }
}
