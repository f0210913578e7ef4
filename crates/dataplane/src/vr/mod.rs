//! A fast-path VR as workers see it: [`VrView`]s of the tables the control side writes
//! ([`VrTables`]), with the VR's program and links.

pub mod links;

use crate::leak::LeakTable;
use crate::program::{self, VrProgram};
use links::{NearLinks, VrLink, VrLinks};
use pearl_classifier::VrId;
pub use pearl_control::Urpf;
use pearl_control::VrConfig;
use pearl_lookup::fib::FibView;
use pearl_lookup::rcu::RcuCell;
use pearl_tables::nexthop::NextHopTable;
use pearl_tables::{LocalSources, VrTables};
use std::sync::Arc;

/// The verdict of the one classifier rule that claims every `shared` VR's frames; the VR is
/// then read from the destination MAC (02:LO:HI:00:00:IF, `shared_mac`), without a table lookup.
pub const SHARED_VR: VrId = VrId(u16::MAX);

/// What a worker needs of a VR. One line: with thousands of VRs every packet's view is cold,
/// so what only exceptions and rare decisions read is behind `facts`.
#[derive(Clone)]
#[repr(align(64))]
pub struct VrView {
    /// What decides the VR's packets.
    pub program: Arc<dyn VrProgram>,
    pub fib4: FibView<u32>,
    pub fib6: FibView<u128>,
    pub adjacencies: Arc<RcuCell<NextHopTable>>,
    /// `facts.links` as the view holds them, when they fit.
    near_links: NearLinks,
    /// The fast path may offer the VR's TCP flows to the kernel (`offload`).
    pub offload: bool,
    pub facts: Arc<VrFacts>,
}

// The promise above: one line.
const _: () = assert!(std::mem::size_of::<VrView>() == 64);

/// What a worker reads of a VR beyond its packets' common path.
pub struct VrFacts {
    /// `[port]`: the MTU and uRPF mode of the VR's interface on that port.
    pub links: VrLinks,
    /// `[VR interface]`: its port, for programs that name interfaces (`Decision::Copies`).
    pub interface_ports: Box<[u16]>,
    /// Frames per second and punt class handed to the VR's kernel (`limits.punt_pps`).
    pub punt_pps: u32,
    /// The VR's weight against the others for a worker's time, as on its ports.
    pub share: u64,
    /// Which IPv4 sources are the VR's own addresses, as its tables' writer keeps them.
    pub local_sources: Arc<RcuCell<LocalSources>>,
}

impl VrView {
    /// A view of VR `vr` through its `tables`, running its built-in program.
    pub fn new(tables: &VrTables, vr: &VrConfig, links: VrLinks, leaks: Arc<LeakTable>) -> VrView {
        VrView {
            program: program::built_in(vr, leaks),
            fib4: tables.fib4().view(),
            fib6: tables.fib6.view(),
            adjacencies: Arc::clone(&tables.adjacencies),
            near_links: NearLinks::of(&links),
            offload: false,
            facts: Arc::new(VrFacts {
                links,
                interface_ports: vr.interfaces.iter().map(|i| i.port as u16).collect(),
                punt_pps: vr.limits.punt_pps,
                share: vr.port_share(),
                local_sources: Arc::clone(&tables.local_sources),
            }),
        }
    }

    /// The MTU of the VR's interface on `port`; 0 where it has none (or the node no such port).
    #[inline]
    pub fn mtu(&self, port: u16) -> u32 {
        self.link(port).mtu
    }

    #[inline]
    pub fn urpf(&self, port: u16) -> Urpf {
        self.link(port).urpf
    }

    #[inline]
    fn link(&self, port: u16) -> VrLink {
        self.near_links.get(port).unwrap_or_else(|| self.facts.links.get(port))
    }
}
