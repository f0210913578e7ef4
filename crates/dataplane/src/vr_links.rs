//! What a VR's interface on each port says about a packet leaving or entering there: its MTU
//! and its uRPF mode, read by every forwarded packet. A node has a few ports, so the facts sit
//! in the VR's view itself, on the lines the view's first read brings in; with thousands of
//! VRs a separate allocation per fact was one more cold line per packet.

use pearl_control::Urpf;
use std::sync::Arc;

/// Ports whose facts a view holds inline; a node with more keeps them in one allocation.
const INLINE_PORTS: usize = 4;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VrLink {
    /// 0 on a port the VR has no interface on, so that anything sent there goes to its kernel.
    pub mtu: u32,
    pub urpf: Urpf,
}

/// `[port]`: the VR's link on that port.
#[derive(Clone, Debug)]
pub enum VrLinks {
    Few { links: [VrLink; INLINE_PORTS], len: u8 },
    Many(Arc<[VrLink]>),
}

impl VrLinks {
    pub fn new(links: Vec<VrLink>) -> VrLinks {
        if links.len() <= INLINE_PORTS {
            let mut few = [VrLink::default(); INLINE_PORTS];
            few[..links.len()].copy_from_slice(&links);
            VrLinks::Few { links: few, len: links.len() as u8 }
        } else {
            VrLinks::Many(links.into())
        }
    }

    #[inline]
    fn get(&self, port: usize) -> VrLink {
        let links = match self {
            VrLinks::Few { links, len } => &links[..usize::from(*len)],
            VrLinks::Many(links) => links,
        };
        links.get(port).copied().unwrap_or_default()
    }

    /// The MTU of the VR's interface on `port`; 0 where it has none (or the node no such port).
    #[inline]
    pub fn mtu(&self, port: u16) -> u32 {
        self.get(usize::from(port)).mtu
    }

    #[inline]
    pub fn urpf(&self, port: u16) -> Urpf {
        self.get(usize::from(port)).urpf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Inline or not, each port reads what it was given, and a port beyond reads as none.
        #[test]
        fn every_port_reads_what_it_was_given(mtus in proptest::collection::vec(0u32..10_000, 0..9), probe in 0u16..12) {
            let links: Vec<VrLink> = mtus.iter().enumerate()
                .map(|(i, &mtu)| VrLink { mtu, urpf: [Urpf::Off, Urpf::Loose, Urpf::Strict][i % 3] })
                .collect();
            let p = VrLinks::new(links.clone());
            prop_assert_eq!(matches!(p, VrLinks::Few { .. }), links.len() <= INLINE_PORTS);
            let want = links.get(usize::from(probe)).copied().unwrap_or_default();
            prop_assert_eq!((p.mtu(probe), p.urpf(probe)), (want.mtu, want.urpf));
        }
    }
}
