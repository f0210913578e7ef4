//! Control-plane policing of the punt path: what the fast path hands to a VR's kernel is
//! sorted into classes, each with its own token bucket per VR (`limits.punt_pps`), so that a
//! flood of packets to a VR's address, with TTL 1, without a route or of ARP/ND takes neither
//! the VR's routing protocols' turn nor more of the slow path than its allowance. Routing
//! protocols also go ahead on the channel: the other classes leave `PRIORITY_RESERVE` bytes of
//! the ring free for them.

use crate::reasons::Exception;
use pearl_wire::{ip_proto, FlowKey};

/// The punt path's classes, in order of precedence.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PuntClass {
    /// BGP, LDP, OSPF, BFD, RIP, VRRP, PIM, IGMP: what keeps sessions and adjacencies up.
    Routing,
    /// ARP and IPv6 neighbour discovery.
    Neighbor,
    Other,
}

/// Bytes of a slow-path ring only `Routing` frames may fill: about 160 full-size frames.
pub const PRIORITY_RESERVE: usize = 256 * 1024;

const ETHERTYPE_ARP: u16 = 0x0806;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const OSPF: u8 = 89;
const VRRP: u8 = 112;
const PIM: u8 = 103;
const IGMP: u8 = 2;
const BGP: u16 = 179;
const LDP: u16 = 646;
const BFD: [u16; 3] = [3784, 3785, 4784];
const RIP: [u16; 2] = [520, 521];

/// ICMPv6 types 133–137: router/neighbour solicitation and advertisement, redirect; the VR's
/// kernel answers them.
pub fn is_neighbor_discovery(key: &FlowKey) -> bool {
    key.ip_proto() == ip_proto::ICMPV6 && (133..=137).contains(&key.l4_src())
}

/// Whether a frame is ARP or IPv6 neighbour discovery, whatever the program decided of it.
pub fn is_neighbor_frame(key: &FlowKey) -> bool {
    match key.ethertype() {
        ETHERTYPE_ARP => true,
        ETHERTYPE_IPV6 => is_neighbor_discovery(key),
        _ => false,
    }
}

/// The class a frame for VR's kernel is policed in, or none. A kernel or shared VR's kernel
/// forwards all its traffic (`Exception::KernelVr`), under its own rate limits; but its ARP and
/// neighbour discovery are policed as a fast VR's are, or a flood of solicitations or
/// advertisements (RFC 6583's attacks; thc-ipv6's flood_solicitate6 took a kernel VR's ping
/// flow to 43 %) fills the VR's channel and crowds out what it forwards.
pub fn punt_policy(key: &FlowKey, reason: Exception, kernel_path: bool) -> Option<PuntClass> {
    match reason {
        Exception::KernelVr if is_neighbor_frame(key) => Some(PuntClass::Neighbor),
        Exception::KernelVr => None,
        _ => {
            let class = punt_class(key, reason);
            (!kernel_path || class == PuntClass::Neighbor).then_some(class)
        }
    }
}

pub fn punt_class(key: &FlowKey, reason: Exception) -> PuntClass {
    if matches!(reason, Exception::Arp | Exception::NeighborDiscovery) {
        return PuntClass::Neighbor;
    }
    let (src, dst) = (key.l4_src(), key.l4_dst());
    let routing = match key.ip_proto() {
        ip_proto::TCP => src == BGP || dst == BGP || src == LDP || dst == LDP,
        ip_proto::UDP => BFD.contains(&dst) || RIP.contains(&dst) || dst == LDP,
        OSPF | VRRP | PIM | IGMP => true,
        _ => false,
    };
    if routing {
        PuntClass::Routing
    } else {
        PuntClass::Other
    }
}

/// One VR's buckets on one worker. Each starts full and holds a quarter second of its rate.
#[derive(Clone, Copy, Default)]
pub struct PuntPolicer {
    buckets: [FrameBucket; 3],
}

impl PuntPolicer {
    /// Whether a frame of `class` may go to the VR's kernel at `now_ns`, `pps` being the VR's
    /// rate per class.
    #[inline]
    pub fn admit(&mut self, class: PuntClass, pps: u32, now_ns: u64) -> bool {
        self.buckets[class as usize].take(pps, f64::from(pps) / 4.0 + 64.0, now_ns)
    }
}

/// A token bucket of frames, filled lazily from one clock reading: what the punt path's
/// classes and the data plane's unresolved-neighbour bound (`unresolved.rs`) police with.
#[derive(Clone, Copy, Default)]
pub struct FrameBucket {
    /// Tokens, in frames.
    tokens: f64,
    /// When it was last filled, in ns since the pipeline started (0: never; it starts full).
    filled_ns: u64,
}

impl FrameBucket {
    /// Whether it has been used yet.
    pub fn is_fresh(&self) -> bool {
        self.filled_ns == 0
    }

    /// Whether one frame may pass at `now_ns`, the bucket filling at `pps` up to `burst`.
    #[inline]
    pub fn take(&mut self, pps: u32, burst: f64, now_ns: u64) -> bool {
        let tokens = if self.filled_ns == 0 {
            burst
        } else {
            let elapsed = now_ns.saturating_sub(self.filled_ns) as f64 * 1e-9;
            (self.tokens + elapsed * f64::from(pps)).min(burst)
        };
        self.filled_ns = now_ns.max(1);
        let admitted = tokens >= 1.0;
        self.tokens = if admitted { tokens - 1.0 } else { tokens };
        admitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pearl_wire::{Field, FlowKey};

    fn key(proto: u8, src: u16, dst: u16) -> FlowKey {
        let mut k = FlowKey::default();
        k.set(Field::IpProto, u128::from(proto));
        k.set(Field::L4Src, u128::from(src));
        k.set(Field::L4Dst, u128::from(dst));
        k
    }

    #[test]
    fn routing_protocols_neighbour_discovery_and_the_rest_are_told_apart() {
        let cases = [
            (key(6, 40000, 179), Exception::Local, PuntClass::Routing),
            (key(6, 179, 40000), Exception::Local, PuntClass::Routing),
            (key(17, 49152, 3784), Exception::Local, PuntClass::Routing),
            (key(89, 0, 0), Exception::Multicast, PuntClass::Routing),
            (key(0, 0, 0), Exception::Arp, PuntClass::Neighbor),
            (key(58, 135, 0), Exception::NeighborDiscovery, PuntClass::Neighbor),
            (key(6, 40000, 22), Exception::Local, PuntClass::Other),
            (key(17, 40000, 33434), Exception::TtlExpired, PuntClass::Other),
            (key(1, 8, 0), Exception::NoRoute, PuntClass::Other),
        ];
        for (k, reason, class) in cases {
            assert_eq!(punt_class(&k, reason), class, "{reason:?} proto {} ports {}→{}", k.ip_proto(), k.l4_src(), k.l4_dst());
        }
    }

    #[test]
    fn a_kernel_vrs_neighbour_discovery_is_policed_and_the_rest_it_forwards_is_not() {
        let mut ns = key(58, 135, 0);
        ns.set(Field::EtherType, 0x86dd);
        let mut arp = key(0, 0, 0);
        arp.set(Field::EtherType, 0x0806);
        let mut tcp = key(6, 40000, 80);
        tcp.set(Field::EtherType, 0x86dd);
        let mut icmp_in_v4 = key(58, 135, 0);
        icmp_in_v4.set(Field::EtherType, 0x0800);
        assert_eq!(punt_policy(&ns, Exception::KernelVr, true), Some(PuntClass::Neighbor));
        assert_eq!(punt_policy(&arp, Exception::KernelVr, true), Some(PuntClass::Neighbor));
        assert_eq!(punt_policy(&tcp, Exception::KernelVr, true), None);
        assert_eq!(punt_policy(&icmp_in_v4, Exception::KernelVr, true), None);
        // Multicast copies: a kernel VR's ND is policed, its other multicast is not; a fast
        // VR's every class is.
        assert_eq!(punt_policy(&ns, Exception::NeighborDiscovery, true), Some(PuntClass::Neighbor));
        assert_eq!(punt_policy(&tcp, Exception::Multicast, true), None);
        assert_eq!(punt_policy(&tcp, Exception::Multicast, false), Some(PuntClass::Other));
        assert_eq!(punt_policy(&tcp, Exception::Local, false), Some(PuntClass::Other));
    }

    /// Frames a policer admits when offered `offered_pps` for `seconds`, one at a time.
    fn admitted(p: &mut PuntPolicer, class: PuntClass, pps: u32, offered_pps: u64, seconds: u64, start_ns: u64) -> u64 {
        let gap = 1_000_000_000 / offered_pps;
        (0..offered_pps * seconds).filter(|i| p.admit(class, pps, start_ns + i * gap)).count() as u64
    }

    #[test]
    fn a_flood_gets_the_rate_plus_one_burst_and_leaves_other_classes_whole() {
        let mut p = PuntPolicer::default();
        let pps = 1000;
        let flood = admitted(&mut p, PuntClass::Neighbor, pps, 100_000, 2, 1);
        let burst = u64::from(pps) / 4 + 64;
        assert!((2 * u64::from(pps) + burst - 2..=2 * u64::from(pps) + burst + 2).contains(&flood), "{flood}");
        // The routing class, under its rate, loses nothing meanwhile.
        assert_eq!(admitted(&mut p, PuntClass::Routing, pps, 500, 2, 1), 1000);
    }

    #[test]
    fn under_its_rate_a_class_loses_nothing() {
        let mut p = PuntPolicer::default();
        assert_eq!(admitted(&mut p, PuntClass::Other, 20_000, 19_000, 3, 5_000_000), 57_000);
    }
}
