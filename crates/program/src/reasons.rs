//! Why a packet left the fast path unforwarded: the exceptions (to the VR's kernel) and the
//! drops, each list written once.

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
        /// Bound for a neighbour not resolved yet beyond a few per neighbour or the VR's rate per
        /// port (pearl-dataplane's `unresolved.rs`), before the punt path.
        UnresolvedPoliced = "unresolved_policed",
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
