//! The rtnetlink numbers this crate speaks (linux/netlink.h, linux/rtnetlink.h,
//! linux/neighbour.h, linux/if_link.h), named as the kernel names them.

// Message types.
pub const NLMSG_NOOP: u16 = 1;
pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;
pub const RTM_NEWLINK: u16 = 16;
pub const RTM_DELLINK: u16 = 17;
pub const RTM_GETLINK: u16 = 18;
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
pub const IFLA_IFNAME: u16 = 3;
pub const IFF_UP: u32 = 0x1;
