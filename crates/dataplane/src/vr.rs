//! A fast-path VR's tables: its FIBs and next hops, filled from the configuration and then
//! kept by routed. The control side owns the writable [`VrTables`]; workers read through
//! [`VrView`]s.

use crate::leak::LeakTable;
use crate::nexthop::{Adjacency, NextHopTable};
use crate::offload::TableWatch;
use crate::program::{self, VrProgram};
use crate::vr_links::{NearLinks, VrLink, VrLinks};
use core::net::IpAddr;
use pearl_classifier::VrId;
pub use pearl_control::Urpf;
use pearl_control::{ConfigError, IpPrefix, VrConfig};
use pearl_lookup::fib::{Fib, FibView, Prefix, RouteUpdate};
use pearl_lookup::rcu::{RcuCell, RcuDomain};
use std::sync::Arc;

/// The verdict of the one classifier rule that claims every `shared` VR's frames; the VR is
/// then read from the destination MAC (02:LO:HI:00:00:IF, `shared_mac`), without a table lookup.
pub const SHARED_VR: VrId = VrId(u16::MAX);

pub struct VrTables {
    pub fib4: Fib<u32>,
    pub fib6: Fib<u128>,
    pub adjacencies: Arc<RcuCell<NextHopTable>>,
    /// The most routes both FIBs together may hold (`limits.fib_entries`).
    pub fib_limit: usize,
    /// What `adjacencies` holds, for the writer (which reads it without a read section).
    next_hops: NextHopTable,
    domain: Arc<RcuDomain>,
    /// Told after each change published (`published`), while flows are offloaded.
    pub offload_watch: Option<TableWatch>,
}

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
}

impl VrView {
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

impl VrTables {
    /// Builds a VR's tables: its own addresses (local), its connected subnets (glean), its
    /// static neighbours (host routes with a known MAC) and its static routes.
    pub fn build(vr: &VrConfig, domain: &Arc<RcuDomain>) -> Result<VrTables, ConfigError> {
        let mut adj = NextHopTable::default();
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        let mut add = |p: IpPrefix, nh: u32| match p.addr {
            IpAddr::V4(a) => v4.push(RouteUpdate::Insert(Prefix::containing(u32::from(a), u32::from(p.len)), nh)),
            IpAddr::V6(a) => v6.push(RouteUpdate::Insert(Prefix::containing(u128::from(a), u32::from(p.len)), nh)),
        };
        // Order matters only among equal prefixes: later wins, so the most specific facts
        // (neighbours, own addresses) come last.
        for r in &vr.routes {
            let iface = &vr.interfaces[r.interface];
            let port = iface.port as u16;
            let a = match vr.neighbors.iter().find(|n| n.ip == r.via) {
                Some(n) => Adjacency::Forward { port, src: iface.mac, dst: n.mac },
                None => Adjacency::Glean { port },
            };
            add(r.prefix, adj.intern(a));
        }
        for iface in &vr.interfaces {
            for a in &iface.addresses {
                add(a.network(), adj.intern(Adjacency::Glean { port: iface.port as u16 }));
            }
        }
        for n in &vr.neighbors {
            let iface = &vr.interfaces[n.interface];
            let a = Adjacency::Forward { port: iface.port as u16, src: iface.mac, dst: n.mac };
            add(host(n.ip), adj.intern(a));
        }
        for iface in &vr.interfaces {
            for a in &iface.addresses {
                add(host(a.addr), adj.intern(Adjacency::Local));
            }
        }
        let mut fib4 = Fib::new(domain);
        let mut fib6 = Fib::new(domain);
        let refused = |e: pearl_lookup::fib::FibError| ConfigError::at(format!("vrs[{}]", vr.name), e.to_string());
        fib4.apply(&v4).map_err(refused)?;
        fib6.apply(&v6).map_err(refused)?;
        Ok(VrTables {
            fib4,
            fib6,
            adjacencies: Arc::new(RcuCell::new(adj.clone())),
            fib_limit: vr.limits.fib_entries,
            next_hops: adj,
            domain: Arc::clone(domain),
            offload_watch: None,
        })
    }

    /// Empty tables (no routes, no next hops) allowing `fib_limit` routes.
    pub fn empty(domain: &Arc<RcuDomain>, fib_limit: usize) -> VrTables {
        VrTables {
            fib4: Fib::new(domain),
            fib6: Fib::new(domain),
            adjacencies: Arc::new(RcuCell::new(NextHopTable::default())),
            fib_limit,
            next_hops: NextHopTable::default(),
            domain: Arc::clone(domain),
            offload_watch: None,
        }
    }

    /// The next hops readers currently see.
    pub fn next_hops(&self) -> &NextHopTable {
        &self.next_hops
    }

    /// Publishes a new next-hop table; returns once no reader can still see the old one.
    pub fn publish_next_hops(&mut self, table: NextHopTable) {
        self.next_hops = table.clone();
        drop(self.adjacencies.replace(table, &self.domain));
    }

    /// Called by the tables' writer after a change it published: flows the kernel forwards
    /// from decisions made with the old tables leave its table. The wait for readers first
    /// makes sure that no worker can still offer one made from them.
    pub fn published(&self) {
        if let Some(watch) = self.offload_watch.as_ref().filter(|w| w.active()) {
            self.domain.synchronize();
            watch.flush();
        }
    }

    pub fn view(&self, vr: &VrConfig, links: VrLinks, leaks: Arc<LeakTable>) -> VrView {
        VrView {
            program: program::built_in(vr, leaks),
            fib4: self.fib4.view(),
            fib6: self.fib6.view(),
            adjacencies: Arc::clone(&self.adjacencies),
            near_links: NearLinks::of(&links),
            offload: false,
            facts: Arc::new(VrFacts {
                links,
                interface_ports: vr.interfaces.iter().map(|i| i.port as u16).collect(),
                punt_pps: vr.limits.punt_pps,
                share: vr.port_share(),
            }),
        }
    }
}

fn host(ip: IpAddr) -> IpPrefix {
    IpPrefix { addr: ip, len: if ip.is_ipv4() { 32 } else { 128 } }
}
