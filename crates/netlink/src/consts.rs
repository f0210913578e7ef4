//! The rtnetlink numbers this crate speaks (linux/netlink.h, linux/rtnetlink.h,
//! linux/neighbour.h, linux/if_link.h, linux/if_addr.h), named as the kernel names them. The
//! test below holds each against libc's or linux-raw-sys's copy, which those crates generate
//! from or check against the kernel headers; only `NETNSA_*` (linux/net_namespace.h) is in
//! neither.

// Message types.
pub const NLMSG_NOOP: u16 = 1;
pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;
pub const RTM_NEWLINK: u16 = 16;
pub const RTM_DELLINK: u16 = 17;
pub const RTM_GETLINK: u16 = 18;
pub const RTM_NEWADDR: u16 = 20;
pub const RTM_DELADDR: u16 = 21;
pub const RTM_NEWROUTE: u16 = 24;
pub const RTM_DELROUTE: u16 = 25;
pub const RTM_GETROUTE: u16 = 26;
pub const RTM_NEWNEIGH: u16 = 28;
pub const RTM_DELNEIGH: u16 = 29;
pub const RTM_GETNEIGH: u16 = 30;
pub const RTM_NEWNSID: u16 = 88;
pub const RTM_GETNSID: u16 = 90;

// Header flags.
pub const NLM_F_REQUEST: u16 = 0x1;
pub const NLM_F_ACK: u16 = 0x4;
pub const NLM_F_DUMP_INTR: u16 = 0x10;
pub const NLM_F_DUMP: u16 = 0x300;
pub const NLM_F_REPLACE: u16 = 0x100;
pub const NLM_F_CREATE: u16 = 0x400;
pub const NLM_F_APPEND: u16 = 0x800;

// Multicast groups (the legacy bitmask form, enough for these groups).
pub const RTMGRP_LINK: u32 = 0x1;
pub const RTMGRP_NEIGH: u32 = 0x4;
pub const RTMGRP_IPV4_IFADDR: u32 = 0x10;
pub const RTMGRP_IPV4_ROUTE: u32 = 0x40;
pub const RTMGRP_IPV6_IFADDR: u32 = 0x100;
pub const RTMGRP_IPV6_ROUTE: u32 = 0x400;

// Address families.
pub const AF_UNSPEC: u8 = 0;
pub const AF_INET: u8 = 2;
pub const AF_INET6: u8 = 10;

// Route attributes.
pub const RTA_DST: u16 = 1;
pub const RTA_OIF: u16 = 4;
pub const RTA_GATEWAY: u16 = 5;
pub const RTA_PRIORITY: u16 = 6;
pub const RTA_MULTIPATH: u16 = 9;
pub const RTA_TABLE: u16 = 15;
pub const RTA_VIA: u16 = 18;
pub const RTA_ENCAP: u16 = 22;
pub const RTA_NH_ID: u16 = 30;

// Route types.
pub const RTN_UNICAST: u8 = 1;
pub const RTN_LOCAL: u8 = 2;
pub const RTN_BROADCAST: u8 = 3;
pub const RTN_ANYCAST: u8 = 4;
pub const RTN_MULTICAST: u8 = 5;
pub const RTN_BLACKHOLE: u8 = 6;
pub const RTN_UNREACHABLE: u8 = 7;
pub const RTN_PROHIBIT: u8 = 8;
pub const RTN_THROW: u8 = 9;

// Route and next-hop flags.
pub const RTM_F_CLONED: u32 = 0x200;
pub const RTNH_F_DEAD: u8 = 0x1;

pub const RT_TABLE_MAIN: u32 = 254;
pub const RT_TABLE_LOCAL: u32 = 255;
pub const RTPROT_BOOT: u8 = 3;
pub const RT_SCOPE_NOWHERE: u8 = 255;

// Neighbours.
pub const NDA_DST: u16 = 1;
pub const NDA_LLADDR: u16 = 2;
pub const NUD_REACHABLE: u16 = 0x02;
pub const NUD_STALE: u16 = 0x04;
pub const NUD_DELAY: u16 = 0x08;
pub const NUD_PROBE: u16 = 0x10;
pub const NUD_PERMANENT: u16 = 0x80;
pub const NTF_PROXY: u8 = 0x08;

// Namespace ids (linux/net_namespace.h).
pub const NETNSA_NSID: u16 = 1;
pub const NETNSA_FD: u16 = 3;
pub const NETNSA_NSID_NOT_ASSIGNED: i32 = -1;

// Socket options (linux/netlink.h).
pub const SOL_NETLINK: i32 = 270;
pub const NETLINK_LISTEN_ALL_NSID: i32 = 8;

// Links.
pub const IFLA_ADDRESS: u16 = 1;
pub const IFLA_IFNAME: u16 = 3;
pub const IFLA_MTU: u16 = 4;
pub const IFLA_XDP: u16 = 43;
pub const IFF_UP: u32 = 0x1;
// Inside IFLA_XDP.
pub const IFLA_XDP_ATTACHED: u16 = 2;
pub const IFLA_XDP_PROG_ID: u16 = 4;
pub const IFLA_XDP_DRV_PROG_ID: u16 = 5;
pub const IFLA_XDP_SKB_PROG_ID: u16 = 6;
pub const IFLA_XDP_HW_PROG_ID: u16 = 7;
pub const XDP_ATTACHED_NONE: u8 = 0;

// Addresses.
pub const IFA_ADDRESS: u16 = 1;
pub const IFA_LOCAL: u16 = 2;
pub const IFA_F_NODAD: u8 = 0x02;

#[cfg(test)]
mod tests {
    use super::*;
    use linux_raw_sys::netlink as lrs;

    /// Each constant beside the kernel's value as another crate spells it; the casts only
    /// widen or match the types those crates chose (a mismatch in value still fails).
    #[test]
    fn every_constant_is_the_kernels() {
        let ours: &[(&str, i64, i64)] = &[
            ("NLMSG_NOOP", NLMSG_NOOP.into(), libc::NLMSG_NOOP.into()),
            ("NLMSG_ERROR", NLMSG_ERROR.into(), libc::NLMSG_ERROR.into()),
            ("NLMSG_DONE", NLMSG_DONE.into(), libc::NLMSG_DONE.into()),
            ("RTM_NEWLINK", RTM_NEWLINK.into(), libc::RTM_NEWLINK.into()),
            ("RTM_DELLINK", RTM_DELLINK.into(), libc::RTM_DELLINK.into()),
            ("RTM_GETLINK", RTM_GETLINK.into(), libc::RTM_GETLINK.into()),
            ("RTM_NEWADDR", RTM_NEWADDR.into(), libc::RTM_NEWADDR.into()),
            ("RTM_DELADDR", RTM_DELADDR.into(), libc::RTM_DELADDR.into()),
            ("RTM_NEWROUTE", RTM_NEWROUTE.into(), libc::RTM_NEWROUTE.into()),
            ("RTM_DELROUTE", RTM_DELROUTE.into(), libc::RTM_DELROUTE.into()),
            ("RTM_GETROUTE", RTM_GETROUTE.into(), libc::RTM_GETROUTE.into()),
            ("RTM_NEWNEIGH", RTM_NEWNEIGH.into(), libc::RTM_NEWNEIGH.into()),
            ("RTM_DELNEIGH", RTM_DELNEIGH.into(), libc::RTM_DELNEIGH.into()),
            ("RTM_GETNEIGH", RTM_GETNEIGH.into(), libc::RTM_GETNEIGH.into()),
            ("RTM_NEWNSID", RTM_NEWNSID.into(), libc::RTM_NEWNSID.into()),
            ("RTM_GETNSID", RTM_GETNSID.into(), libc::RTM_GETNSID.into()),
            ("NLM_F_REQUEST", NLM_F_REQUEST.into(), libc::NLM_F_REQUEST.into()),
            ("NLM_F_ACK", NLM_F_ACK.into(), libc::NLM_F_ACK.into()),
            ("NLM_F_DUMP_INTR", NLM_F_DUMP_INTR.into(), libc::NLM_F_DUMP_INTR.into()),
            ("NLM_F_DUMP", NLM_F_DUMP.into(), libc::NLM_F_DUMP.into()),
            ("NLM_F_REPLACE", NLM_F_REPLACE.into(), libc::NLM_F_REPLACE.into()),
            ("NLM_F_CREATE", NLM_F_CREATE.into(), libc::NLM_F_CREATE.into()),
            ("NLM_F_APPEND", NLM_F_APPEND.into(), libc::NLM_F_APPEND.into()),
            ("RTMGRP_LINK", RTMGRP_LINK.into(), libc::RTMGRP_LINK.into()),
            ("RTMGRP_NEIGH", RTMGRP_NEIGH.into(), libc::RTMGRP_NEIGH.into()),
            ("RTMGRP_IPV4_IFADDR", RTMGRP_IPV4_IFADDR.into(), libc::RTMGRP_IPV4_IFADDR.into()),
            ("RTMGRP_IPV4_ROUTE", RTMGRP_IPV4_ROUTE.into(), libc::RTMGRP_IPV4_ROUTE.into()),
            ("RTMGRP_IPV6_IFADDR", RTMGRP_IPV6_IFADDR.into(), libc::RTMGRP_IPV6_IFADDR.into()),
            ("RTMGRP_IPV6_ROUTE", RTMGRP_IPV6_ROUTE.into(), libc::RTMGRP_IPV6_ROUTE.into()),
            ("AF_UNSPEC", AF_UNSPEC.into(), libc::AF_UNSPEC.into()),
            ("AF_INET", AF_INET.into(), libc::AF_INET.into()),
            ("AF_INET6", AF_INET6.into(), libc::AF_INET6.into()),
            ("RTA_DST", RTA_DST.into(), libc::RTA_DST.into()),
            ("RTA_OIF", RTA_OIF.into(), libc::RTA_OIF.into()),
            ("RTA_GATEWAY", RTA_GATEWAY.into(), libc::RTA_GATEWAY.into()),
            ("RTA_PRIORITY", RTA_PRIORITY.into(), libc::RTA_PRIORITY.into()),
            ("RTA_MULTIPATH", RTA_MULTIPATH.into(), libc::RTA_MULTIPATH.into()),
            ("RTA_TABLE", RTA_TABLE.into(), libc::RTA_TABLE.into()),
            ("RTA_VIA", RTA_VIA.into(), libc::RTA_VIA.into()),
            ("RTA_ENCAP", RTA_ENCAP.into(), libc::RTA_ENCAP.into()),
            ("RTA_NH_ID", RTA_NH_ID.into(), lrs::rtattr_type_t::RTA_NH_ID as i64),
            ("RTN_UNICAST", RTN_UNICAST.into(), libc::RTN_UNICAST.into()),
            ("RTN_LOCAL", RTN_LOCAL.into(), libc::RTN_LOCAL.into()),
            ("RTN_BROADCAST", RTN_BROADCAST.into(), libc::RTN_BROADCAST.into()),
            ("RTN_ANYCAST", RTN_ANYCAST.into(), libc::RTN_ANYCAST.into()),
            ("RTN_MULTICAST", RTN_MULTICAST.into(), libc::RTN_MULTICAST.into()),
            ("RTN_BLACKHOLE", RTN_BLACKHOLE.into(), libc::RTN_BLACKHOLE.into()),
            ("RTN_UNREACHABLE", RTN_UNREACHABLE.into(), libc::RTN_UNREACHABLE.into()),
            ("RTN_PROHIBIT", RTN_PROHIBIT.into(), libc::RTN_PROHIBIT.into()),
            ("RTN_THROW", RTN_THROW.into(), libc::RTN_THROW.into()),
            ("RTM_F_CLONED", RTM_F_CLONED.into(), libc::RTM_F_CLONED.into()),
            ("RTNH_F_DEAD", RTNH_F_DEAD.into(), lrs::RTNH_F_DEAD.into()),
            ("RT_TABLE_MAIN", RT_TABLE_MAIN.into(), libc::RT_TABLE_MAIN.into()),
            ("RT_TABLE_LOCAL", RT_TABLE_LOCAL.into(), libc::RT_TABLE_LOCAL.into()),
            ("RTPROT_BOOT", RTPROT_BOOT.into(), libc::RTPROT_BOOT.into()),
            ("RT_SCOPE_NOWHERE", RT_SCOPE_NOWHERE.into(), libc::RT_SCOPE_NOWHERE.into()),
            ("NDA_DST", NDA_DST.into(), libc::NDA_DST.into()),
            ("NDA_LLADDR", NDA_LLADDR.into(), libc::NDA_LLADDR.into()),
            ("NUD_REACHABLE", NUD_REACHABLE.into(), libc::NUD_REACHABLE.into()),
            ("NUD_STALE", NUD_STALE.into(), libc::NUD_STALE.into()),
            ("NUD_DELAY", NUD_DELAY.into(), libc::NUD_DELAY.into()),
            ("NUD_PROBE", NUD_PROBE.into(), libc::NUD_PROBE.into()),
            ("NUD_PERMANENT", NUD_PERMANENT.into(), libc::NUD_PERMANENT.into()),
            ("NTF_PROXY", NTF_PROXY.into(), libc::NTF_PROXY.into()),
            ("SOL_NETLINK", SOL_NETLINK.into(), libc::SOL_NETLINK.into()),
            ("NETLINK_LISTEN_ALL_NSID", NETLINK_LISTEN_ALL_NSID.into(), libc::NETLINK_LISTEN_ALL_NSID.into()),
            ("IFLA_ADDRESS", IFLA_ADDRESS.into(), libc::IFLA_ADDRESS.into()),
            ("IFLA_IFNAME", IFLA_IFNAME.into(), libc::IFLA_IFNAME.into()),
            ("IFLA_MTU", IFLA_MTU.into(), libc::IFLA_MTU.into()),
            ("IFLA_XDP", IFLA_XDP.into(), libc::IFLA_XDP.into()),
            ("IFLA_XDP_ATTACHED", IFLA_XDP_ATTACHED.into(), lrs::IFLA_XDP_ATTACHED as i64),
            ("IFLA_XDP_PROG_ID", IFLA_XDP_PROG_ID.into(), lrs::IFLA_XDP_PROG_ID as i64),
            ("IFLA_XDP_DRV_PROG_ID", IFLA_XDP_DRV_PROG_ID.into(), lrs::IFLA_XDP_DRV_PROG_ID as i64),
            ("IFLA_XDP_SKB_PROG_ID", IFLA_XDP_SKB_PROG_ID.into(), lrs::IFLA_XDP_SKB_PROG_ID as i64),
            ("IFLA_XDP_HW_PROG_ID", IFLA_XDP_HW_PROG_ID.into(), lrs::IFLA_XDP_HW_PROG_ID as i64),
            ("XDP_ATTACHED_NONE", XDP_ATTACHED_NONE.into(), lrs::XDP_ATTACHED_NONE as i64),
            ("IFF_UP", IFF_UP.into(), libc::IFF_UP.into()),
            ("IFA_ADDRESS", IFA_ADDRESS.into(), libc::IFA_ADDRESS.into()),
            ("IFA_LOCAL", IFA_LOCAL.into(), libc::IFA_LOCAL.into()),
            ("IFA_F_NODAD", IFA_F_NODAD.into(), libc::IFA_F_NODAD.into()),
        ];
        let wrong: Vec<_> = ours.iter().filter(|(_, a, b)| a != b).collect();
        assert!(wrong.is_empty(), "constants that differ from the kernel's: {wrong:?}");
    }
}
