//! What routed knows of the VR namespace's kernel: links, the routes of the main and local
//! tables, resolved neighbours; and, per prefix, what the mirror has installed. Every change
//! marks what it may affect as dirty; the mirror recomputes only that.

use crate::family::Family;
use crate::hash::FastMap;
use crate::kernel_route::KernelRoute;
use crate::route_list::{Op, RouteList};
use crate::RoutedInterface;
use core::net::IpAddr;
use pearl_lookup::fib::Prefix;
use pearl_netlink::consts::*;
use pearl_netlink::link::{address_family, LinkMsg};
use pearl_netlink::message::{Message, ParseError};
use pearl_netlink::neigh::NeighMsg;
use pearl_netlink::route::RouteMsg;
use std::collections::BTreeMap;

pub type Mac = [u8; 6];

/// `Slot::installed` when the FIB holds nothing of ours for the prefix.
pub const NOT_INSTALLED: u32 = u32::MAX;

/// One prefix: the kernel's routes to it and the mirror's entry for it.
#[derive(Debug)]
pub struct Slot {
    pub routes: RouteList,
    /// The next-hop id the FIB holds for the prefix, or [`NOT_INSTALLED`].
    pub installed: u32,
    /// The route the mirror is forced to leave to the kernel (counted and logged once).
    pub refused: bool,
    /// Left out for lack of FIB room.
    pub over_quota: bool,
    /// Kept in the FIB by the hold-down although the kernel no longer forwards the prefix.
    pub deferred: bool,
    dirty: bool,
}

impl Default for Slot {
    fn default() -> Slot {
        Slot { routes: RouteList::Empty, installed: NOT_INSTALLED, refused: false, over_quota: false, deferred: false, dirty: false }
    }
}

impl Slot {
    /// Holds nothing worth keeping.
    pub fn is_vacant(&self) -> bool {
        self.routes.is_empty() && self.installed == NOT_INSTALLED && !self.refused && !self.over_quota
    }
}

/// One family's prefixes.
pub struct Routes<A> {
    pub slots: FastMap<Prefix<A>, Slot>,
    /// Prefixes to recompute, each once (their slot's `dirty` flag says whether listed).
    pub dirty: Vec<Prefix<A>>,
    /// Kernel routes held (a prefix may have several).
    pub kernel_routes: usize,
}

impl<A: Family> Default for Routes<A> {
    fn default() -> Self {
        Routes { slots: FastMap::default(), dirty: Vec::new(), kernel_routes: 0 }
    }
}

impl<A: Family> Routes<A> {
    pub fn mark(&mut self, p: Prefix<A>) {
        let slot = self.slots.entry(p).or_default();
        if !slot.dirty {
            slot.dirty = true;
            self.dirty.push(p);
        }
    }

    /// Marks every prefix (the FIB is to be rewritten whole).
    pub fn mark_all(&mut self) {
        for (p, slot) in self.slots.iter_mut() {
            if !slot.dirty {
                slot.dirty = true;
                self.dirty.push(*p);
            }
        }
    }

    /// Marks the prefixes the hold-down kept (it was released).
    pub fn mark_deferred(&mut self) {
        let kept: Vec<Prefix<A>> = self.slots.iter().filter(|(_, s)| s.deferred).map(|(p, _)| *p).collect();
        for p in kept {
            self.mark(p);
        }
    }

    /// Takes the dirty list and clears the slots' flags.
    pub fn take_dirty(&mut self) -> Vec<Prefix<A>> {
        let dirty = std::mem::take(&mut self.dirty);
        for p in &dirty {
            if let Some(s) = self.slots.get_mut(p) {
                s.dirty = false;
            }
        }
        dirty
    }

    pub fn apply(&mut self, p: Prefix<A>, r: KernelRoute, op: Op, neighbours: &BTreeMap<(A, u32), Mac>) {
        let slot = match op {
            Op::Del => match self.slots.get_mut(&p) {
                Some(s) => s,
                None => return,
            },
            _ => self.slots.entry(p).or_default(),
        };
        let before = slot.routes.len();
        if !slot.routes.apply(r, op, A::WIDTH == 128) {
            return;
        }
        self.kernel_routes = self.kernel_routes + slot.routes.len() - before;
        self.mark(p);
        // A neighbour's host route depends on the route covering it.
        for (&(a, _), _) in neighbours.range((p.addr(), 0)..=(p.last(), u32::MAX)) {
            self.mark(a.host());
        }
    }

    /// Forgets every kernel route, marking every prefix for recomputation.
    fn forget(&mut self) {
        for slot in self.slots.values_mut() {
            slot.routes = RouteList::Empty;
        }
        self.mark_all();
        self.kernel_routes = 0;
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub name: String,
    pub up: bool,
}

/// What next hops resolve against: links, the VR's interfaces, neighbours.
#[derive(Default)]
pub struct World {
    pub interfaces: Vec<RoutedInterface>,
    pub links: FastMap<u32, Link>,
    /// Resolved neighbours only: (address, ifindex) → MAC.
    pub neigh4: BTreeMap<(u32, u32), Mac>,
    pub neigh6: BTreeMap<(u128, u32), Mac>,
}

impl World {
    /// The VR interface a link is, if it is one.
    pub fn interface(&self, ifindex: u32) -> Option<&RoutedInterface> {
        let name = &self.links.get(&ifindex)?.name;
        self.interfaces.iter().find(|i| i.name == *name)
    }

    pub fn link_name(&self, ifindex: u32) -> Option<&str> {
        self.links.get(&ifindex).map(|l| l.name.as_str())
    }

    pub fn neighbour(&self, ifindex: u32, ip: IpAddr) -> Option<Mac> {
        match ip {
            IpAddr::V4(a) => self.neigh4.get(&(u32::from(a), ifindex)).copied(),
            IpAddr::V6(a) => self.neigh6.get(&(u128::from(a), ifindex)).copied(),
        }
    }

    pub fn neighbour_count(&self) -> usize {
        self.neigh4.len() + self.neigh6.len()
    }
}

pub struct KernelState {
    pub v4: Routes<u32>,
    pub v6: Routes<u128>,
    pub world: World,
    /// Neighbours whose resolution changed: (ifindex, address).
    pub dirty_hops: Vec<(u32, IpAddr)>,
    /// Set when the kernel changed something without saying what (a link went down, an IPv4
    /// address went away): only a dump tells what is left.
    pub needs_resync: Option<&'static str>,
}

impl KernelState {
    pub fn new(interfaces: Vec<RoutedInterface>) -> KernelState {
        KernelState {
            v4: Routes::default(),
            v6: Routes::default(),
            world: World { interfaces, ..World::default() },
            dirty_hops: Vec::new(),
            needs_resync: None,
        }
    }

    pub fn pending(&self) -> bool {
        !self.v4.dirty.is_empty() || !self.v6.dirty.is_empty() || !self.dirty_hops.is_empty()
    }

    /// Applies one message of a notification (`dumping` false) or of a dump.
    pub fn handle(&mut self, m: &Message<'_>, dumping: bool) -> Result<(), ParseError> {
        match m.kind {
            RTM_NEWROUTE | RTM_DELROUTE => {
                let r = RouteMsg::parse(m.payload)?;
                let op = match (m.kind, dumping) {
                    (RTM_DELROUTE, _) => Op::Del,
                    (_, true) => Op::Dump,
                    _ => Op::New { replace: m.flags & NLM_F_REPLACE != 0, append: m.flags & NLM_F_APPEND != 0 },
                };
                self.route(&r, op)
            }
            RTM_NEWNEIGH | RTM_DELNEIGH => {
                if let Some(n) = NeighMsg::parse(m.payload)? {
                    let mac = if m.kind == RTM_NEWNEIGH { n.resolved_mac() } else { None };
                    self.neighbour(n.ifindex, n.ip, mac);
                }
                Ok(())
            }
            RTM_NEWLINK => {
                let l = LinkMsg::parse(m.payload)?;
                let name = l.name.map(str::to_owned);
                let old = self.world.links.get(&l.ifindex).cloned();
                let new = Link { name: name.or_else(|| old.as_ref().map(|o| o.name.clone())).unwrap_or_default(), up: l.up };
                if old.as_ref().is_some_and(|o| *o != new) && !dumping {
                    // IPv4 drops routes through a link that goes down without a word; a
                    // renamed link changes which routes are the VR's.
                    self.needs_resync.get_or_insert("a link changed state or name");
                }
                self.world.links.insert(l.ifindex, new);
                Ok(())
            }
            RTM_DELLINK => {
                let l = LinkMsg::parse(m.payload)?;
                self.world.links.remove(&l.ifindex);
                self.needs_resync.get_or_insert("a link was deleted");
                Ok(())
            }
            RTM_DELADDR => {
                if address_family(m.payload)? == AF_INET {
                    self.needs_resync.get_or_insert("an IPv4 address was removed (its routes go silently)");
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn route(&mut self, m: &RouteMsg<'_>, op: Op) -> Result<(), ParseError> {
        let Some(r) = KernelRoute::from_msg(m)? else { return Ok(()) };
        match m.dst {
            IpAddr::V4(a) => self.v4.apply(Prefix::containing(u32::from(a), u32::from(m.dst_len)), r, op, &self.world.neigh4),
            IpAddr::V6(a) => self.v6.apply(Prefix::containing(u128::from(a), u32::from(m.dst_len)), r, op, &self.world.neigh6),
        }
        Ok(())
    }

    /// Records a neighbour's resolution (`None`: unresolved or gone).
    pub fn neighbour(&mut self, ifindex: u32, ip: IpAddr, mac: Option<Mac>) {
        let changed = match ip {
            IpAddr::V4(a) => set(&mut self.world.neigh4, (u32::from(a), ifindex), mac),
            IpAddr::V6(a) => set(&mut self.world.neigh6, (u128::from(a), ifindex), mac),
        };
        if changed {
            self.dirty_hops.push((ifindex, ip));
            match ip {
                IpAddr::V4(a) => self.v4.mark(u32::from(a).host()),
                IpAddr::V6(a) => self.v6.mark(u128::from(a).host()),
            }
        }
    }

    /// Prepares for a dump that will restate everything: forgets routes, links and neighbours,
    /// marking all they affected.
    pub fn forget(&mut self) {
        self.v4.forget();
        self.v6.forget();
        for ((a, ifindex), _) in std::mem::take(&mut self.world.neigh4) {
            self.dirty_hops.push((ifindex, a.to_ip()));
            self.v4.mark(a.host());
        }
        for ((a, ifindex), _) in std::mem::take(&mut self.world.neigh6) {
            self.dirty_hops.push((ifindex, a.to_ip()));
            self.v6.mark(a.host());
        }
        self.world.links.clear();
        self.needs_resync = None;
    }
}

fn set<K: Ord>(map: &mut BTreeMap<K, Mac>, key: K, mac: Option<Mac>) -> bool {
    match mac {
        Some(m) => map.insert(key, m) != Some(m),
        None => map.remove(&key).is_some(),
    }
}
