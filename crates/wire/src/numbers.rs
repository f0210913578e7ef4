//! Assigned numbers the views and the extractor branch on (IEEE EtherTypes, IANA protocols).

/// EtherType values (IEEE 802).
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const ARP: u16 = 0x0806;
    pub const IPV6: u16 = 0x86dd;
    /// 802.1Q customer tag (C-TAG).
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service tag (S-TAG), the outer tag of a double-tagged frame.
    pub const QINQ: u16 = 0x88a8;
}

/// IP protocol / IPv6 next-header numbers (IANA).
pub mod ip_proto {
    pub const HOP_BY_HOP: u8 = 0;
    pub const ICMP: u8 = 1;
    /// IPv4 in IP (RFC 2003).
    pub const IPV4_IN_IP: u8 = 4;
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    /// IPv6 in IP (RFC 4213).
    pub const IPV6_IN_IP: u8 = 41;
    pub const IPV6_ROUTING: u8 = 43;
    pub const IPV6_FRAGMENT: u8 = 44;
    pub const GRE: u8 = 47;
    pub const AUTH: u8 = 51;
    pub const ICMPV6: u8 = 58;
    pub const IPV6_NO_NEXT: u8 = 59;
    pub const IPV6_DEST_OPTS: u8 = 60;
}
