//! A fast-path VR's tables: its FIBs and next hops, filled from the configuration and then
//! kept by routed. The control side owns the writable [`VrTables`]; the data plane's workers
//! read them through views of its own.

use crate::local_sources::{LocalRoutes, LocalSources};
use crate::nexthop::{Adjacency, NextHopTable};
use crate::table_watch::TableWatch;
use core::net::IpAddr;
use pearl_control::{ConfigError, IpPrefix, VrConfig};
use pearl_lookup::fib::{ApplyStats, Fib, FibError, NextHopId, Prefix, RouteUpdate};
use pearl_lookup::rcu::{RcuCell, RcuDomain};
use std::sync::Arc;

pub struct VrTables {
    /// Written through [`VrTables::apply4`], which keeps `local_sources` with it.
    fib4: Fib<u32>,
    pub fib6: Fib<u128>,
    pub adjacencies: Arc<RcuCell<NextHopTable>>,
    /// Which IPv4 sources are the VR's own addresses, for workers' martian-source check.
    pub local_sources: Arc<RcuCell<LocalSources>>,
    local_routes: LocalRoutes,
    /// The most routes both FIBs together may hold (`limits.fib_entries`).
    pub fib_limit: usize,
    /// What `adjacencies` holds, for the writer (which reads it without a read section).
    next_hops: NextHopTable,
    domain: Arc<RcuDomain>,
    /// Told after each change published (`published`), while flows are offloaded.
    pub offload_watch: Option<Box<dyn TableWatch>>,
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
        let refused = |e: FibError| ConfigError::at(format!("vrs[{}]", vr.name), e.to_string());
        fib4.apply(&v4).map_err(refused)?;
        fib6.apply(&v6).map_err(refused)?;
        // Cells made afresh, not replaced: no reader can see these tables yet, so no grace
        // period to wait for (thousands of VRs are built at start).
        let mut local_routes = LocalRoutes::default();
        local_routes.apply(&v4, &adj);
        Ok(VrTables {
            fib4,
            fib6,
            adjacencies: Arc::new(RcuCell::new(adj.clone())),
            local_sources: Arc::new(RcuCell::new(local_routes.sources())),
            local_routes,
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
            local_sources: Arc::new(RcuCell::new(LocalRoutes::default().sources())),
            local_routes: LocalRoutes::default(),
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

    pub fn fib4(&self) -> &Fib<u32> {
        &self.fib4
    }

    /// Applies a batch to the IPv4 FIB (all of it or, refused, none), and the VR's local
    /// addresses with it; next-hop ids mean what the table last published says.
    pub fn apply4(&mut self, updates: &[RouteUpdate<u32>]) -> Result<ApplyStats, FibError> {
        let stats = self.fib4.apply(updates)?;
        if self.local_routes.apply(updates, &self.next_hops) {
            self.publish_local_sources();
        }
        Ok(stats)
    }

    /// Publishes a new next-hop table; returns once no reader can still see the old one.
    pub fn publish_next_hops(&mut self, table: NextHopTable) {
        let moved = self.local_routes.next_hops_replaced(&self.next_hops, &table);
        self.next_hops = table.clone();
        drop(self.adjacencies.replace(table, &self.domain));
        if moved {
            self.publish_local_sources();
        }
    }

    fn publish_local_sources(&mut self) {
        drop(self.local_sources.replace(self.local_routes.sources(), &self.domain));
    }

    /// The next hop a worker's longest-prefix lookup of `addr` finds now (through the published
    /// table, as workers read it, not the writer's copy); `None`: no route. For the operator's
    /// `fib lookup`: registering a reader is a control-side cost, paid per question.
    pub fn lookup(&self, addr: IpAddr) -> Option<NextHopId> {
        let mut reader = self.domain.register();
        let guard = reader.read();
        match addr {
            IpAddr::V4(a) => self.fib4.view().lookup(&guard, u32::from(a)),
            IpAddr::V6(a) => self.fib6.view().lookup(&guard, u128::from(a)),
        }
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
}

fn host(ip: IpAddr) -> IpPrefix {
    IpPrefix { addr: ip, len: if ip.is_ipv4() { 32 } else { 128 } }
}
