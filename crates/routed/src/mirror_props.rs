//! The mirror against a reference: random route and neighbour changes, published at random
//! points, must leave FIB lookups resolving to what a plain longest-prefix scan over a map of
//! routes says; under the hold-down, no prefix the FIB forwards may go or fall to the kernel,
//! and after the release the lookups must match the reference again.

use crate::kernel_route::{Hop, KernelRoute, Table, Target};
use crate::mirror::Mirror;
use crate::route_list::Op;
use crate::state::Link;
use crate::RoutedInterface;
use core::net::{IpAddr, Ipv4Addr};
use pearl_lookup::fib::Prefix;
use pearl_lookup::rcu::RcuDomain;
use pearl_tables::nexthop::{Adjacency, NextHop, NextHopTable};
use pearl_tables::VrTables;
use pearl_wire::{Field, FlowKey};
use proptest::prelude::*;
use std::collections::{BTreeSet, HashMap};

const T0: u32 = 2;
const T1: u32 = 3;
/// A link in the namespace that is not a VR interface.
const LO: u32 = 1;
const MAC: [[u8; 6]; 2] = [[2, 0, 0, 0, 0, 0x10], [2, 0, 0, 0, 0, 0x11]];

const PREFIXES: [(u32, u32); 8] = [
    (0x0000_0000, 0),
    (0x0a00_0000, 8),
    (0x0a01_0000, 16),
    (0x0a01_0200, 24),
    (0x0a01_0280, 25),
    (0x0a01_0203, 32),
    (0xc0a8_0000, 24),
    (0xc0a8_0002, 32),
];
const GATEWAYS: [u32; 3] = [0xc0a8_0002, 0xc0a8_0003, 0x0a01_0203];
const NEIGHBOURS: [u32; 4] = [0xc0a8_0002, 0xc0a8_0003, 0x0a01_0203, 0x0a01_02c8];

/// A route of the reference, also the mirror's input.
#[derive(Debug, Clone, PartialEq)]
enum R {
    Dev(u32),
    Via(u32, u32),
    Ecmp(u32, u32),
    Unreachable,
    Local,
}

#[derive(Debug, Clone)]
enum Change {
    Route(usize, R),
    Unroute(usize),
    Neighbour(u32, u32, Option<u8>),
    Hold(bool),
    Publish,
}

fn link() -> impl Strategy<Value = u32> {
    prop_oneof![4 => prop_oneof![Just(T0), Just(T1)], 1 => Just(LO)]
}

fn route() -> impl Strategy<Value = R> {
    prop_oneof![
        link().prop_map(R::Dev),
        (link(), prop::sample::select(&GATEWAYS[..])).prop_map(|(l, g)| R::Via(l, g)),
        (prop::sample::select(&GATEWAYS[..]), prop::sample::select(&GATEWAYS[..])).prop_map(|(a, b)| R::Ecmp(a, b)),
        Just(R::Unreachable),
        Just(R::Local),
    ]
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        4 => (0..PREFIXES.len(), route()).prop_map(|(p, r)| Change::Route(p, r)),
        2 => (0..PREFIXES.len()).prop_map(Change::Unroute),
        3 => (prop::sample::select(&NEIGHBOURS[..]), prop_oneof![Just(T0), Just(T1)], prop::option::of(0u8..2))
            .prop_map(|(ip, l, mac)| Change::Neighbour(ip, l, mac)),
        1 => any::<bool>().prop_map(Change::Hold),
        1 => Just(Change::Publish),
    ]
}

fn ip(a: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

fn kernel_route(r: &R) -> KernelRoute {
    let hop = |l, g: Option<u32>| Hop { ifindex: l, gateway: g.map(ip), weight: 1 };
    let target = match *r {
        R::Dev(l) => Target::One(hop(l, None)),
        R::Via(l, g) => Target::One(hop(l, Some(g))),
        R::Ecmp(a, b) if a == b => Target::One(hop(T0, Some(a))),
        R::Ecmp(a, b) => Target::Multi(vec![hop(T0, Some(a)), hop(T1, Some(b))].into_boxed_slice()),
        R::Unreachable => Target::Kernel,
        R::Local => Target::Local,
    };
    KernelRoute { table: Table::Main, tos: 0, metric: 0, target }
}

/// What a lookup should find.
#[derive(Debug, Clone, PartialEq)]
enum Want {
    Miss,
    Kernel,
    One(Adjacency),
    /// A group: any of these for a given flow, and every one for some flow.
    AnyOf(BTreeSet<(u16, [u8; 6])>),
}

struct Reference {
    routes: HashMap<usize, R>,
    neighbours: HashMap<(u32, u32), [u8; 6]>,
}

impl Reference {
    fn port(l: u32) -> u16 {
        if l == T0 {
            0
        } else {
            1
        }
    }

    fn hop(&self, l: u32, g: u32) -> Adjacency {
        match self.neighbours.get(&(g, l)) {
            Some(&dst) => Adjacency::Forward { port: Self::port(l), src: MAC[Self::port(l) as usize], dst },
            None => Adjacency::Glean { port: Self::port(l) },
        }
    }

    fn longest(&self, x: u32, below: u32) -> Option<(u32, &R)> {
        self.routes
            .iter()
            .filter(|(&i, _)| PREFIXES[i].1 < below && Prefix::containing(x, PREFIXES[i].1).addr() == PREFIXES[i].0)
            .map(|(&i, r)| (PREFIXES[i].1, r))
            .max_by_key(|(len, _)| *len)
    }

    fn want(&self, x: u32) -> Want {
        let route = self.longest(x, 33);
        if route.is_none_or(|(len, _)| len < 32) {
            // A resolved neighbour on the link its covering connected route is on.
            let covering = self.longest(x, 32);
            for l in [T0, T1] {
                if let (Some(&dst), Some((_, R::Dev(d)))) = (self.neighbours.get(&(x, l)), covering) {
                    if *d == l {
                        return Want::One(Adjacency::Forward { port: Self::port(l), src: MAC[Self::port(l) as usize], dst });
                    }
                }
            }
        }
        match route {
            None => Want::Miss,
            Some((_, r)) => match *r {
                R::Dev(LO) | R::Via(LO, _) | R::Unreachable => Want::Kernel,
                R::Dev(l) => Want::One(Adjacency::Glean { port: Self::port(l) }),
                R::Via(l, g) => Want::One(self.hop(l, g)),
                R::Ecmp(a, b) if a == b => Want::One(self.hop(T0, a)),
                R::Ecmp(a, b) => Want::AnyOf([self.hop(T0, a), self.hop(T1, b)].iter().map(key_of).collect()),
                R::Local => Want::One(Adjacency::Local),
            },
        }
    }
}

fn key_of(a: &Adjacency) -> (u16, [u8; 6]) {
    match *a {
        Adjacency::Forward { port, dst, .. } => (port, dst),
        Adjacency::Glean { port } => (port, [0; 6]),
        Adjacency::Local => (u16::MAX, [0; 6]),
    }
}

fn flow(dst: u32, sport: u16) -> FlowKey {
    FlowKey::default().with(Field::IpDst, u128::from(dst)).with(Field::IpProto, 6).with(Field::L4Src, u128::from(sport))
}

fn probes() -> Vec<u32> {
    let mut p: Vec<u32> = PREFIXES.iter().flat_map(|&(a, len)| [a, Prefix::containing(a, len).last(), a | 1]).collect();
    p.extend(NEIGHBOURS);
    p.push(0x0a01_02c9);
    p
}

fn check(tables: &VrTables, domain: &std::sync::Arc<RcuDomain>, reference: &Reference) -> Result<(), TestCaseError> {
    let mut reader = domain.register();
    let g = reader.read();
    let view = tables.fib4().view();
    let table: &NextHopTable = tables.adjacencies.load(&g);
    for x in probes() {
        let want = reference.want(x);
        let got = view.lookup(&g, x);
        let at = Ipv4Addr::from(x);
        match (&want, got) {
            (Want::Miss, None) => {}
            (Want::Kernel, Some(nh)) => prop_assert_eq!(table.get(nh), Some(&NextHop::Kernel), "{}", at),
            (Want::One(a), Some(nh)) => prop_assert_eq!(table.resolve(nh, &flow(x, 1)), Some(a), "{}", at),
            (Want::AnyOf(set), Some(nh)) => {
                let seen: BTreeSet<_> = (0..64).map(|s| key_of(table.resolve(nh, &flow(x, s)).expect("a member"))).collect();
                prop_assert_eq!(&seen, set, "{}", at);
            }
            (want, got) => prop_assert!(false, "{}: want {:?}, the FIB has {:?}", at, want, got),
        }
    }
    Ok(())
}

/// The prefixes the FIB forwards (its entry is not "to the kernel"), each with its next-hop id
/// and how well that is resolved (forward 2, glean 1, else 0).
fn forwarded(tables: &VrTables, domain: &std::sync::Arc<RcuDomain>) -> HashMap<Prefix<u32>, (u32, u8)> {
    let mut reader = domain.register();
    let g = reader.read();
    let table: &NextHopTable = tables.adjacencies.load(&g);
    let rank = |nh| match table.get(nh) {
        Some(NextHop::One(Adjacency::Forward { .. })) => 2,
        Some(NextHop::One(Adjacency::Glean { .. })) => 1,
        _ => 0,
    };
    tables
        .fib4()
        .routes()
        .into_iter()
        .filter(|&(_, nh)| table.get(nh) != Some(&NextHop::Kernel))
        .map(|(p, nh)| (p, (nh, rank(nh))))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn lookups_match_a_longest_prefix_scan_of_the_kernel_routes(changes in prop::collection::vec(change(), 1..60)) {
        let domain = RcuDomain::new();
        let mut tables = VrTables::empty(&domain, 1000);
        let interfaces = vec![
            RoutedInterface { name: "t0".into(), port: 0, mac: MAC[0] },
            RoutedInterface { name: "t1".into(), port: 1, mac: MAC[1] },
        ];
        let mut mirror = Mirror::new(interfaces, &NextHopTable::default());
        for (i, name) in [(LO, "lo"), (T0, "t0"), (T1, "t1")] {
            mirror.state.world.links.insert(i, Link { name: name.into(), up: true });
        }
        let mut reference = Reference { routes: HashMap::new(), neighbours: HashMap::new() };
        let publish = |mirror: &mut Mirror, tables: &mut VrTables| {
            let batch = mirror.prepare(tables.fib_limit);
            mirror.commit(tables, batch);
        };
        let mut held = None;
        for c in changes.iter().chain([&Change::Hold(false), &Change::Publish]) {
            match c {
                Change::Route(i, r) => {
                    let (a, len) = PREFIXES[*i];
                    let op = Op::New { replace: true, append: false };
                    mirror.state.v4.apply(Prefix::containing(a, len), kernel_route(r), op, &mirror.state.world.neigh4);
                    reference.routes.insert(*i, r.clone());
                }
                Change::Unroute(i) => {
                    let (a, len) = PREFIXES[*i];
                    if let Some(r) = reference.routes.remove(i) {
                        mirror.state.v4.apply(Prefix::containing(a, len), kernel_route(&r), Op::Del, &mirror.state.world.neigh4);
                    }
                }
                Change::Neighbour(a, l, mac) => {
                    let mac = mac.map(|m| [2, 0, 0, 0, 0xee, m]);
                    mirror.state.neighbour(*l, ip(*a), mac);
                    match mac {
                        Some(m) => reference.neighbours.insert((*a, *l), m),
                        None => reference.neighbours.remove(&(*a, *l)),
                    };
                }
                Change::Hold(on) => {
                    mirror.set_hold(*on);
                    held = on.then(|| forwarded(&tables, &domain));
                }
                Change::Publish => {
                    publish(&mut mirror, &mut tables);
                    match &mut held {
                        None => check(&tables, &domain, &reference)?,
                        Some(before) => {
                            let now = forwarded(&tables, &domain);
                            for (p, (nh, rank)) in before.iter() {
                                let got = now.get(p);
                                prop_assert!(got.is_some(), "held, yet {:?} is no longer forwarded", p);
                                // The same id is the same next hop: it may not lose resolution.
                                prop_assert!(got.is_none_or(|(n, r)| n != nh || r >= rank), "held, yet {:?} lost resolution", p);
                            }
                            *before = now;
                        }
                    }
                }
            }
        }
        // Everything gone: no route, no next hop left behind.
        for (i, r) in std::mem::take(&mut reference.routes) {
            let (a, len) = PREFIXES[i];
            mirror.state.v4.apply(Prefix::containing(a, len), kernel_route(&r), Op::Del, &mirror.state.world.neigh4);
        }
        for (a, l) in std::mem::take(&mut reference.neighbours).into_keys() {
            mirror.state.neighbour(l, ip(a), None);
        }
        publish(&mut mirror, &mut tables);
        prop_assert_eq!(tables.fib4().len(), 0);
        prop_assert_eq!(mirror.next_hops_live(), 0);
        prop_assert_eq!(mirror.counts().refused, 0);
    }
}
