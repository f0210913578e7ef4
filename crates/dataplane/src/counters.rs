//! Live counters: each worker owns its own and updates them once per batch with plain loads and
//! stores (no locked instructions, no shared cache lines between workers); readers sum across
//! workers whenever they like.

use crate::prefetch::prefetch_bytes;
use std::sync::atomic::{AtomicU64, Ordering};

/// A counter with one writer: `add` is a relaxed load and store, which x86 compiles to plain
/// moves, yet readers on other threads see a value that is never torn.
#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Overwrites the value (for mirrors of totals kept elsewhere by the same writer).
    #[inline]
    pub fn set(&self, v: u64) {
        self.0.store(v, Ordering::Relaxed);
    }
}

/// A list of reasons written once: the enum, `ALL` (every variant, `ALL[r as usize] == r`, so a
/// counter array of `COUNT` is indexed by `r as usize`), `COUNT` and `name` (the word the API and
/// metrics show) all come from it, as VPP's `foreach_ip4_error` makes its error strings.
macro_rules! reasons {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $variant,)+
        }

        impl $name {
            pub const ALL: [$name; $name::COUNT] = [$($name::$variant),+];
            pub const COUNT: usize = [$($text),+].len();

            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }
    };
}

reasons! {
    /// Why a packet left the fast path without being forwarded.
    pub enum Exception {
        /// Addressed to one of the VR's own addresses.
        Local = "local",
        TtlExpired = "ttl_expired",
        Ipv4Options = "ipv4_options",
        NoRoute = "no_route",
        UnresolvedNeighbor = "unresolved_neighbor",
        Arp = "arp",
        NeighborDiscovery = "nd",
        /// Multicast or broadcast IP traffic (routing protocols, DHCP, …).
        Multicast = "multicast",
        /// An IP family the VR's code option does not route.
        UnroutedFamily = "unrouted_family",
        NonIp = "non_ip",
        /// A `kernel` or `shared` VR: its kernel forwards every packet.
        KernelVr = "kernel_vr",
        /// Larger than the egress interface's MTU: the VR's kernel fragments it or answers with
        /// ICMP "fragmentation needed" / ICMPv6 "packet too big" (RFC 1191, 1812, 8201).
        MtuExceeded = "mtu_exceeded",
        /// An IPv6 link-local source on a packet not for the VR: the kernel answers "beyond scope
        /// of source address" (RFC 4443 §3.1) when it may not forward it.
        LinkLocalSource = "link_local_source",
        /// An IPv6 hop-by-hop options header: every router processes its options (RFC 8200 §4.3),
        /// the VR's kernel as Linux does (unknown options, their action bits, the limits on them).
        Ipv6HopByHop = "ipv6_hop_by_hop",
        /// Leaving by the interface it came in on: the kernel forwards it and tells the sender of
        /// the better first hop (ICMP redirect, RFC 1812 §5.2.7.2; RFC 4861 §8.2).
        Redirect = "redirect",
        /// An 802.1Q-tagged frame: a VR's interfaces are untagged in the fast path; its kernel
        /// takes the frame on a VLAN device of the owner's, or drops it as Linux does without one.
        VlanTagged = "vlan_tagged",
        /// Bound out of a VR's NAT interface to a neighbour not resolved yet: the frame is not
        /// handed over (the kernel would send it untranslated, private source and all); the slow
        /// path has the VR's kernel resolve the neighbour with a datagram of its own instead.
        NatUnresolved = "nat_unresolved",
        /// The VR's program handed it to the VR's kernel.
        Program = "program",
    }
}

reasons! {
    /// Why the fast path dropped a packet a router must not forward (RFC 1812 §5.2.2, §5.3.7,
    /// RFC 3704, RFC 4291), as the Linux router drops it silently.
    pub enum VrDrop {
        /// An IPv4 header whose checksum does not verify.
        BadChecksum = "bad_checksum",
        /// A source no router accepts: unspecified, loopback, multicast, limited broadcast, or one
        /// of the VR's own addresses.
        MartianSource = "martian_source",
        /// A destination no router forwards to: 0.0.0.0, or loopback (127.0.0.0/8, ::1).
        MartianDestination = "martian_destination",
        /// Unicast reverse-path forwarding refused the source (`urpf: strict | loose`).
        Urpf = "urpf",
        /// Leaving by the VR's NAT interface, it could not be translated (not TCP or UDP, a
        /// fragment, or every reserved port in use).
        NatRefused = "nat_refused",
        /// Bound for the VR's kernel beyond its class's `limits.punt_pps`.
        PuntPoliced = "punt_policed",
        /// Beyond the VR's share of a worker that could not keep up (`worker_share`).
        WorkerShare = "worker_share",
        /// The VR's program dropped it (or left it undecided).
        Program = "program",
        /// The VR's program sent it out of a port where the VR has no interface.
        ProgramBadPort = "program_bad_port",
        /// The VR's program trapped on its batch (a plugin's fault: out of bounds, unreachable,
        /// a refused answer); the program restarts after a back-off.
        ProgramTrap = "program_trap",
        /// The VR's program ran out of its budget (`limits.fuel_per_packet`) on its batch.
        ProgramFuel = "program_fuel",
        /// The VR's program asked for memory beyond `limits.memory_mb` on its batch.
        ProgramMemory = "program_memory",
        /// The VR's program was restarting after a fault.
        ProgramDown = "program_down",
        /// The VR's program did not answer its batch in time (a process plugin: within
        /// `PROCESS_BATCH_WAIT`; one that makes no progress for 100 ms is restarted).
        ProgramHang = "program_hang",
        /// A `code: filter` VR's frame that none of its rules matched.
        FilterMiss = "filter_miss",
        /// A copy its program asked for (`Decision::Copies`) when the worker had no buffer left.
        CopyNoBuffer = "copy_no_buffer",
    }
}

/// Counters of one port, as seen by one worker.
#[derive(Default)]
pub struct PortCounters {
    pub rx_packets: Counter,
    pub rx_bytes: Counter,
    pub tx_packets: Counter,
    pub tx_bytes: Counter,
    /// Frames the device refused on transmit.
    pub tx_errors: Counter,
    /// Frames no VR claimed (unicast to an unknown MAC, no matching rule).
    pub unclaimed: Counter,
    /// Frames the port's driver lost before the pipeline saw them (`Port::rx_dropped`).
    pub rx_dropped: Counter,
    /// Receive calls that failed; the worker goes on and tries again next round.
    pub rx_errors: Counter,
    /// Malformed frames, by `pearl_wire::WireError::reason()` (index into `WireError::REASONS`).
    pub malformed: Vec<Counter>,
}

/// Counters of one VR, as seen by one worker. The five a batch adds to lead, on a line of
/// their own (`prefetch_hot`): with thousands of VRs each batch touches many VRs' counters, cold, and loading
/// one line each instead of the struct's three keeps the misses in flight few.
#[derive(Default)]
#[repr(C, align(64))]
pub struct VrCounters {
    pub rx_packets: Counter,
    pub rx_bytes: Counter,
    pub forwarded_packets: Counter,
    pub forwarded_bytes: Counter,
    /// Packets dropped at the output queues (queue full).
    pub queue_drops: Counter,
    /// Exceptions queued to the slow path, by [`Exception`] (index into `Exception::ALL`).
    pub exceptions: Vec<Counter>,
    /// Exceptions dropped because the VR's slow-path channel was full.
    pub exception_drops: Counter,
    /// Packets a router must not forward, dropped, by [`VrDrop`] (index into `VrDrop::ALL`).
    pub drops: Vec<Counter>,
    /// Frames the VR's kernel sent through its TAPs, queued for their port.
    pub injected_packets: Counter,
    /// Frames from the VR's kernel dropped at a full output queue or for want of a buffer.
    pub injected_drops: Counter,
    /// Packets an impaired link out of the VR lost (`impair.loss_percent`).
    pub impaired_lost: Counter,
    /// Second copies an impaired link out of the VR sent (`impair.duplicate_percent`).
    pub impaired_duplicates: Counter,
    /// Of the received and forwarded ones, those the kernel forwarded for the fast path
    /// (`offload`).
    pub offloaded_packets: Counter,
    pub offloaded_bytes: Counter,
}

impl VrCounters {
    /// Starts loading the line a batch adds to.
    #[inline(always)]
    pub fn prefetch_hot(&self) {
        prefetch_bytes((self as *const VrCounters).cast(), 1);
    }

    /// Zeroes every counter; for the writer only (a reader's zeroing could race an `add`).
    pub fn reset(&self) {
        let VrCounters {
            rx_packets,
            rx_bytes,
            forwarded_packets,
            forwarded_bytes,
            exceptions,
            exception_drops,
            drops,
            queue_drops,
            injected_packets,
            injected_drops,
            impaired_lost,
            impaired_duplicates,
            offloaded_packets,
            offloaded_bytes,
        } = self;
        let scalars = [
            rx_packets,
            rx_bytes,
            forwarded_packets,
            forwarded_bytes,
            exception_drops,
            queue_drops,
            injected_packets,
            injected_drops,
            impaired_lost,
            impaired_duplicates,
            offloaded_packets,
            offloaded_bytes,
        ];
        for c in scalars.into_iter().chain(exceptions).chain(drops) {
            c.set(0);
        }
    }
}

/// Everything one worker counts.
pub struct WorkerCounters {
    pub ports: Vec<PortCounters>,
    pub vrs: Vec<VrCounters>,
    pub batches: Counter,
    /// Batches that found no packet: with `batches`, how busy the worker is.
    pub idle_polls: Counter,
    /// Rounds that began more than `STALL_NS` after the one before while the worker was not
    /// pausing by choice: time its ports' rings filled unread (the worker was preempted,
    /// blocked in a call, or busy with one long piece of work).
    pub stalls: Counter,
    /// The longest such gap so far, in ns (a maximum, not a sum).
    pub longest_stall_ns: Counter,
}

/// A gap between two rounds counted as a stall: what an rx ring of 255 slots holds at
/// 255,000 frames/s.
pub const STALL_NS: u64 = 1_000_000;

impl WorkerCounters {
    pub fn new(ports: usize, vrs: usize) -> WorkerCounters {
        let port = || PortCounters {
            malformed: (0..pearl_wire::WireError::REASONS.len()).map(|_| Counter::default()).collect(),
            ..Default::default()
        };
        let vr = || VrCounters {
            exceptions: (0..Exception::COUNT).map(|_| Counter::default()).collect(),
            drops: (0..VrDrop::COUNT).map(|_| Counter::default()).collect(),
            ..Default::default()
        };
        WorkerCounters {
            ports: (0..ports).map(|_| port()).collect(),
            vrs: (0..vrs).map(|_| vr()).collect(),
            batches: Counter::default(),
            idle_polls: Counter::default(),
            stalls: Counter::default(),
            longest_stall_ns: Counter::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Exception, VrDrop};
    use std::collections::HashSet;

    /// What the counters and the API rely on: each reason's index is its place in `ALL` (a
    /// counter array of `COUNT`), and each has a name of its own.
    fn check<R: Copy + Eq + std::fmt::Debug>(all: &[R], count: usize, index: impl Fn(R) -> usize, name: impl Fn(R) -> &'static str) {
        assert_eq!(all.len(), count);
        for (i, &r) in all.iter().enumerate() {
            assert_eq!(index(r), i, "{r:?} is not at its index");
            let n = name(r);
            assert!(!n.is_empty() && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'), "{r:?}: {n:?}");
        }
        let names: HashSet<&str> = all.iter().map(|&r| name(r)).collect();
        assert_eq!(names.len(), count, "two reasons share a name");
    }

    #[test]
    fn every_reason_is_counted_at_its_index_and_named_once() {
        check(&Exception::ALL, Exception::COUNT, |e| e as usize, Exception::name);
        check(&VrDrop::ALL, VrDrop::COUNT, |d| d as usize, VrDrop::name);
        assert_eq!((Exception::NeighborDiscovery.name(), VrDrop::FilterMiss.name()), ("nd", "filter_miss"));
    }
}
