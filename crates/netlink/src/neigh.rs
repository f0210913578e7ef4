//! Neighbour messages (`RTM_NEWNEIGH`, `RTM_DELNEIGH`): `struct ndmsg` and its attributes.

use crate::consts::*;
use crate::message::{attributes, bytes, ne_u16, ne_u32, ParseError};
use crate::route::address;
use core::net::IpAddr;

/// `struct ndmsg`.
const NDMSG_LEN: usize = 12;

/// States in which the kernel holds a usable link-layer address. NOARP entries (multicast and
/// broadcast mappings) are not neighbours one forwards to; INCOMPLETE and FAILED have none.
const USABLE: u16 = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeighMsg {
    pub ifindex: u32,
    pub ip: IpAddr,
    /// `NUD_*`.
    pub state: u16,
    /// `NTF_*`.
    pub flags: u8,
    pub lladdr: Option<[u8; 6]>,
}

impl NeighMsg {
    /// Parses an IPv4 or IPv6 neighbour; `None` for other families (bridge FDB entries) and
    /// entries without a destination.
    #[inline]
    pub fn parse(payload: &[u8]) -> Result<Option<NeighMsg>, ParseError> {
        let h = bytes(payload, 0, NDMSG_LEN, "ndmsg")?;
        let family = h[0];
        if family != AF_INET && family != AF_INET6 {
            return Ok(None);
        }
        let (mut ip, mut lladdr) = (None, None);
        for a in attributes(&payload[NDMSG_LEN..]) {
            let (kind, value) = a?;
            match kind {
                NDA_DST => ip = Some(address(family, value, "NDA_DST")?),
                // Ethernet only: other link types have no MAC the fast path could write.
                NDA_LLADDR if value.len() == 6 => lladdr = Some([value[0], value[1], value[2], value[3], value[4], value[5]]),
                _ => {}
            }
        }
        Ok(ip.map(|ip| NeighMsg { ifindex: ne_u32(&h[4..8]), ip, state: ne_u16(&h[8..10]), flags: h[10], lladdr }))
    }

    /// The MAC packets to this neighbour may be sent to, if the kernel has resolved it.
    #[inline]
    pub fn resolved_mac(&self) -> Option<[u8; 6]> {
        (self.state & USABLE != 0 && self.flags & NTF_PROXY == 0).then_some(self.lladdr).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rustfmt::skip]
    fn neigh(state: u16, flags: u8) -> Vec<u8> {
        let s = state.to_ne_bytes();
        vec![
            2, 0, 0, 0, 3, 0, 0, 0, s[0], s[1], flags, 1,  // AF_INET, ifindex 3
            8, 0, 1, 0, 10, 0, 0, 2,                      // NDA_DST 10.0.0.2
            10, 0, 2, 0, 2, 0, 0, 0, 0, 7, 0, 0,          // NDA_LLADDR 02:00:00:00:00:07
        ]
    }

    #[test]
    fn resolved_states_yield_the_mac_and_others_do_not() {
        let m = NeighMsg::parse(&neigh(NUD_STALE, 0)).unwrap().unwrap();
        assert_eq!((m.ifindex, m.ip), (3, "10.0.0.2".parse().unwrap()));
        assert_eq!(m.resolved_mac(), Some([2, 0, 0, 0, 0, 7]));
        for (state, flags) in [(0x01, 0), (0x20, 0), (0x40, 0), (NUD_REACHABLE, NTF_PROXY)] {
            assert_eq!(NeighMsg::parse(&neigh(state, flags)).unwrap().unwrap().resolved_mac(), None, "state {state:#x}");
        }
    }

    #[test]
    fn bridge_entries_are_skipped_and_truncated_ones_refused() {
        let mut fdb = neigh(NUD_REACHABLE, 0);
        fdb[0] = 7; // AF_BRIDGE
        assert_eq!(NeighMsg::parse(&fdb), Ok(None));
        assert!(matches!(NeighMsg::parse(&neigh(0, 0)[..6]), Err(ParseError::Truncated { what: "ndmsg", .. })));
    }
}
