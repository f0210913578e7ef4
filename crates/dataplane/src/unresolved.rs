//! Packets bound for a neighbour not resolved yet (a glean adjacency) cost a bounded, cheap
//! amount each (RFC 6583): a flood to random addresses of a connected subnet, IPv6 ND or IPv4
//! ARP alike, would otherwise hand the VR's kernel one neighbour to resolve per packet, at the
//! punt path's whole rate, and fill its neighbour table. Linux bounds the same work with a
//! queue per unresolved neighbour (`unres_qlen`) and a solicitation per second per neighbour
//! (`retrans_time`); here a destination gets `PER_NEIGHBOR` frames per `NEIGHBOR_WINDOW_NS`
//! (its kernel then holds them while it solicits, at that pace), and each VR's interface
//! `UNRESOLVED_PPS`, decided before the frame is copied anywhere. Beyond either →
//! `unresolved_policed`. Resolved neighbours never come here: their adjacency forwards.

use crate::punt::FrameBucket;

/// Frames per second one VR hands its kernel for unresolved destinations out of one port:
/// with Linux's 3 s of solicitations per incomplete entry, ~770 such entries at a time, within
/// the default `gc_thresh3` (1,024), so a flood does not push resolved entries out of the
/// VR's neighbour table.
pub const UNRESOLVED_PPS: u32 = 256;
/// Frames one unresolved destination may take per window, queued in the VR's kernel while it
/// solicits: enough that a short burst to a new neighbour is answered whole as Linux answers it
/// (alive6's four probes to an address nobody holds get four "address unreachable"; with 3,
/// the fourth was policed), few enough that the port's bucket, not one destination, bounds a
/// flood.
pub const PER_NEIGHBOR: u32 = 8;
/// Linux's `retrans_time`: one solicitation per unresolved neighbour per second.
pub const NEIGHBOR_WINDOW_NS: u64 = 1_000_000_000;
/// Ports of one VR with a bucket of their own; further ones share them (by port number).
const PORTS_PER_VR: usize = 4;
/// Destinations remembered per worker; a destination whose slot another took starts afresh,
/// still within its port's bucket.
const NEIGHBOR_SLOTS: usize = 1024;
/// A bucket holds a quarter second of its rate.
const BURST: f64 = UNRESOLVED_PPS as f64 / 4.0;

#[derive(Clone, Copy, Default)]
struct PortBucket {
    port: u16,
    bucket: FrameBucket,
}

#[derive(Clone, Copy, Default)]
struct NeighborSlot {
    /// A hash of (VR, destination); 0: empty.
    tag: u64,
    since_ns: u64,
    frames: u32,
}

/// One worker's account of unresolved destinations, for all its VRs.
pub struct UnresolvedPolicer {
    /// `[vr id]`.
    ports: Vec<[PortBucket; PORTS_PER_VR]>,
    neighbors: Box<[NeighborSlot]>,
}

impl Default for UnresolvedPolicer {
    fn default() -> UnresolvedPolicer {
        UnresolvedPolicer { ports: Vec::new(), neighbors: vec![NeighborSlot::default(); NEIGHBOR_SLOTS].into_boxed_slice() }
    }
}

impl UnresolvedPolicer {
    /// Makes room for `vrs` VR ids (between batches).
    pub fn resize(&mut self, vrs: usize) {
        self.ports.resize(vrs, [PortBucket::default(); PORTS_PER_VR]);
    }

    /// Whether VR `vr` may hand its kernel one more frame for unresolved destination `dst`
    /// (an IP address as the flow key holds it) out of `port`, at `now_ns` (> 0).
    #[inline]
    pub fn admit(&mut self, vr: u16, port: u16, dst: u128, now_ns: u64) -> bool {
        let slot = self.neighbor_slot(vr, dst, now_ns);
        // A destination is charged only for what the port lets through: a frame its port's bucket
        // refuses never reaches the VR's kernel, and must not spend the destination's window.
        if self.neighbors[slot].frames >= PER_NEIGHBOR || !self.port_admits(vr, port, now_ns) {
            return false;
        }
        self.neighbors[slot].frames += 1;
        true
    }

    /// The slot of (`vr`, `dst`), started afresh if another destination held it or its window
    /// has passed.
    fn neighbor_slot(&mut self, vr: u16, dst: u128, now_ns: u64) -> usize {
        let tag = mix(dst ^ (u128::from(vr) << 112)) | 1;
        let i = (tag >> 32) as usize % NEIGHBOR_SLOTS;
        let slot = &mut self.neighbors[i];
        if slot.tag != tag || now_ns.saturating_sub(slot.since_ns) >= NEIGHBOR_WINDOW_NS {
            *slot = NeighborSlot { tag, since_ns: now_ns, frames: 0 };
        }
        i
    }

    fn port_admits(&mut self, vr: u16, port: u16, now_ns: u64) -> bool {
        let buckets = &mut self.ports[vr as usize];
        let i = buckets.iter().position(|b| b.port == port && !b.bucket.is_fresh());
        let b = match i.or_else(|| buckets.iter().position(|b| b.bucket.is_fresh())) {
            Some(i) => &mut buckets[i],
            None => &mut buckets[port as usize % PORTS_PER_VR],
        };
        if b.bucket.is_fresh() {
            b.port = port;
        }
        b.bucket.take(UNRESOLVED_PPS, BURST, now_ns)
    }
}

/// A 64-bit mix of a 128-bit key (the high half folded into the low, then a multiply-xorshift).
#[inline]
fn mix(k: u128) -> u64 {
    let x = (k as u64) ^ ((k >> 64) as u64).rotate_left(29);
    let x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^ (x >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn policer() -> UnresolvedPolicer {
        let mut p = UnresolvedPolicer::default();
        p.resize(4);
        p
    }

    #[test]
    fn a_flood_of_random_destinations_gets_the_rate_plus_one_burst() {
        let mut p = policer();
        // 100,000 frames/s for 2 s, each to another address of the subnet.
        let admitted = (0..200_000u64)
            .filter(|&i| p.admit(1, 0, 0x2001_0db8_0002_0000_0000_0000_0000_0000 | u128::from(i), 1 + i * 10_000))
            .count() as u32;
        let expected = 2 * UNRESOLVED_PPS + BURST as u32;
        assert!((expected - 2..=expected + 2).contains(&admitted), "{admitted}");
    }

    #[test]
    fn one_destination_gets_a_few_frames_per_second_and_others_theirs() {
        let mut p = policer();
        let to = |p: &mut UnresolvedPolicer, dst: u128, at: u64| (0..100).filter(|k| p.admit(0, 1, dst, at + k)).count();
        assert_eq!(to(&mut p, 7, MS), PER_NEIGHBOR as usize);
        assert_eq!(to(&mut p, 8, 2 * MS), PER_NEIGHBOR as usize, "another destination is not charged for the first");
        assert_eq!(to(&mut p, 7, 500 * MS), 0, "within the window: nothing more");
        assert_eq!(to(&mut p, 7, 1001 * MS + 1), PER_NEIGHBOR as usize, "the next window: a few more");
        let other_vr = (0..100).filter(|k| p.admit(1, 1, 7, 500 * MS + k)).count();
        assert_eq!(other_vr, PER_NEIGHBOR as usize, "another VR's neighbour of the same address is its own");
    }

    #[test]
    fn one_vr_or_port_flooded_leaves_another_its_whole_rate() {
        let mut p = policer();
        let mut at = 1;
        for i in 0..50_000u128 {
            p.admit(2, 0, i, at);
            at += 10_000;
        }
        let other_port = (0..BURST as u128).filter(|&i| p.admit(2, 1, 1 << 40 | i, at)).count();
        let other_vr = (0..BURST as u128).filter(|&i| p.admit(3, 0, 1 << 41 | i, at)).count();
        assert_eq!((other_port, other_vr), (BURST as usize, BURST as usize));
    }

    #[test]
    fn a_frame_the_port_refuses_is_not_charged_to_its_destination() {
        let mut p = policer();
        let burst = (0..BURST as u128).filter(|&i| p.admit(0, 0, 1 << 40 | i, MS)).count();
        assert_eq!(burst, BURST as usize, "the port's burst, one frame each to other destinations");
        let refused = (0..100).filter(|k| p.admit(0, 0, 7, MS + k)).count();
        assert_eq!(refused, 0, "the port's bucket is empty");
        // 100 ms later the port has refilled ~25 frames; the destination has taken none of its own.
        let later = (0..100).filter(|k| p.admit(0, 0, 7, 101 * MS + k)).count();
        assert_eq!(later, PER_NEIGHBOR as usize);
    }
}
