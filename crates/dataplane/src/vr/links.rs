//! What a VR's interface on each port says about a packet leaving or entering there: its MTU
//! and its uRPF mode, read by every forwarded packet. A node has a few ports, so the facts sit
//! in the VR's view itself ([`NearLinks`]), on the one line the view's first read brings in;
//! with thousands of VRs a separate allocation per fact was one more cold line per packet.

use pearl_control::Urpf;
use std::sync::Arc;

/// Ports whose facts a view holds inline; a node with more reads them from [`VrLinks`].
const INLINE_PORTS: usize = 4;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VrLink {
    /// 0 on a port the VR has no interface on, so that anything sent there goes to its kernel.
    pub mtu: u32,
    pub urpf: Urpf,
}

/// `[port]`: the VR's link on that port, every port of the node.
#[derive(Clone, Debug)]
pub struct VrLinks(Arc<[VrLink]>);

impl VrLinks {
    pub fn new(links: Vec<VrLink>) -> VrLinks {
        VrLinks(links.into())
    }

    /// The link on `port`; none (MTU 0) where the VR has no interface (or the node no such port).
    #[inline]
    pub fn get(&self, port: u16) -> VrLink {
        self.0.get(usize::from(port)).copied().unwrap_or_default()
    }
}

/// The links of a node of up to [`INLINE_PORTS`] ports whose MTUs fit 16 bits (every Ethernet
/// MTU does), in 13 bytes, so that the view they sit in is one line. Otherwise `FAR`: read
/// the [`VrLinks`].
#[derive(Clone, Copy, Debug)]
pub struct NearLinks {
    mtus: [u16; INLINE_PORTS],
    urpf: [Urpf; INLINE_PORTS],
    /// Ports held, or `FAR`.
    len: u8,
}

const FAR: u8 = u8::MAX;

impl NearLinks {
    pub fn of(links: &VrLinks) -> NearLinks {
        let mut near = NearLinks { mtus: [0; INLINE_PORTS], urpf: [Urpf::Off; INLINE_PORTS], len: FAR };
        if links.0.len() <= INLINE_PORTS && links.0.iter().all(|l| l.mtu <= u32::from(u16::MAX)) {
            for (i, l) in links.0.iter().enumerate() {
                (near.mtus[i], near.urpf[i]) = (l.mtu as u16, l.urpf);
            }
            near.len = links.0.len() as u8;
        }
        near
    }

    /// The link on `port`, if these links hold the VR's (else its [`VrLinks`] do).
    #[inline]
    pub fn get(&self, port: u16) -> Option<VrLink> {
        if self.len == FAR {
            return None;
        }
        let p = usize::from(port);
        Some(if p < usize::from(self.len) { VrLink { mtu: u32::from(self.mtus[p]), urpf: self.urpf[p] } } else { VrLink::default() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Near or far, each port reads what it was given, and a port beyond reads as none.
        #[test]
        fn every_port_reads_what_it_was_given(
            mtus in proptest::collection::vec(prop_oneof![0u32..10_000, Just(65_535), Just(65_536)], 0..9),
            probe in 0u16..12,
        ) {
            let links: Vec<VrLink> = mtus.iter().enumerate()
                .map(|(i, &mtu)| VrLink { mtu, urpf: [Urpf::Off, Urpf::Loose, Urpf::Strict][i % 3] })
                .collect();
            let far = VrLinks::new(links.clone());
            let near = NearLinks::of(&far);
            let inline = links.len() <= INLINE_PORTS && mtus.iter().all(|&m| m <= 65_535);
            prop_assert_eq!(near.get(probe).is_some(), inline);
            let want = links.get(usize::from(probe)).copied().unwrap_or_default();
            prop_assert_eq!(near.get(probe).unwrap_or_else(|| far.get(probe)), want);
            prop_assert_eq!(far.get(probe), want);
        }
    }
}
