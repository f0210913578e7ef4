//! The two address families as the FIB sees them (`u32`, `u128`), with their `IpAddr` spelling.

use core::net::IpAddr;
use pearl_lookup::fib::{AddrBits, Prefix};

pub trait Family: AddrBits {
    fn to_ip(self) -> IpAddr;

    /// The host prefix of `self` (`/32`, `/128`).
    fn host(self) -> Prefix<Self> {
        Prefix::containing(self, Self::WIDTH)
    }

    /// IPv6 link-local (fe80::/10): a neighbour there is a next hop, never a destination.
    fn link_local(self) -> bool {
        false
    }
}

impl Family for u32 {
    fn to_ip(self) -> IpAddr {
        IpAddr::V4(self.into())
    }
}

impl Family for u128 {
    fn to_ip(self) -> IpAddr {
        IpAddr::V6(self.into())
    }

    fn link_local(self) -> bool {
        self >> 118 == 0x3fa
    }
}

/// `prefix` as text (`10.0.0.0/8`), for logs.
pub fn show<A: Family>(prefix: Prefix<A>) -> String {
    format!("{}/{}", prefix.addr().to_ip(), prefix.len())
}
