//! routed against a real kernel (needs root): each test makes a namespace with TAP interfaces,
//! changes its routes and neighbours with `ip`, and checks what the fast path's tables say.

mod common;

use common::{forward, glean, Found, Vr, LOCAL};
use pearl_lookup::fib::{Prefix, RouteUpdate};
use pearl_tables::nexthop::{Adjacency, NextHopTable};
use std::collections::HashSet;

const GW_MAC: [u8; 6] = [2, 0, 0, 0, 0xaa, 2];
const GW_MAC2: [u8; 6] = [2, 0, 0, 0, 0xaa, 3];

#[test]
fn the_first_sync_replaces_the_configured_tables() {
    let mut vr = Vr::new("a", 1);
    {
        let mut t = vr.tables.lock().unwrap();
        let mut hops = NextHopTable::default();
        let id = hops.intern(Adjacency::Glean { port: 0 });
        t.publish_next_hops(hops);
        t.apply4(&[RouteUpdate::Insert(Prefix::containing(0xc000_0200, 24), id)]).unwrap();
    }
    assert_eq!(vr.lookup("192.0.2.1"), glean(0));
    vr.start(1);
    assert_eq!(vr.lookup("192.0.2.1"), Found::Miss, "the configured route is gone");
    assert_eq!(vr.lookup("10.0.0.1"), LOCAL);
    assert_eq!(vr.lookup("10.0.0.200"), glean(0));
    assert_eq!(vr.lookup("2001:db8::1"), LOCAL);
    assert_eq!(vr.lookup("2001:db8::5"), glean(0));
    let s = vr.routed().stats();
    assert!(s.kernel_routes_v4 >= 3 && s.routes_v4 >= 3 && s.batches == 1, "{s:?}");
}

#[test]
fn ipv4_routes_and_neighbours_follow_the_kernel() {
    let mut vr = Vr::new("b", 2);
    vr.start(2);
    vr.ip("route add 10.9.0.0/16 via 10.0.0.2");
    vr.expect("10.9.1.1", glean(0));
    vr.ip("neigh add 10.0.0.2 lladdr 02:00:00:00:aa:02 dev t0");
    vr.expect("10.9.1.1", forward(0, GW_MAC));
    vr.expect("10.0.0.2", forward(0, GW_MAC));
    vr.ip("neigh change 10.0.0.2 lladdr 02:00:00:00:aa:03 dev t0");
    vr.expect("10.9.1.1", forward(0, GW_MAC2));
    vr.ip("route replace 10.9.0.0/16 via 10.1.0.2");
    vr.expect("10.9.1.1", glean(1));
    vr.ip("route add 10.9.5.0/24 via 10.0.0.2 metric 10");
    vr.expect("10.9.5.9", forward(0, GW_MAC2));
    vr.ip("route add 10.9.5.0/24 via 10.1.0.9 metric 5");
    vr.expect("10.9.5.9", glean(1));
    vr.ip("route del 10.9.5.0/24 via 10.1.0.9 metric 5");
    vr.expect("10.9.5.9", forward(0, GW_MAC2));
    vr.ip("route del 10.9.0.0/16");
    vr.ip("route del 10.9.5.0/24");
    vr.expect("10.9.1.1", Found::Miss);
    vr.ip("neigh del 10.0.0.2 dev t0");
    vr.expect("10.0.0.2", glean(0));
    vr.ip("route add default via 10.1.0.254");
    vr.expect("198.51.100.1", glean(1));
    vr.ip("route add unreachable 10.66.0.0/16");
    vr.expect("10.66.0.1", Found::Kernel);
    vr.ip("route add blackhole 10.67.0.0/16");
    vr.expect("10.67.0.1", Found::Kernel);
    let s = vr.routed().stats();
    assert_eq!(s.refused, 0, "{s:?}");
}

#[test]
fn ipv6_routes_and_neighbours_follow_the_kernel() {
    let mut vr = Vr::new("c", 2);
    vr.start(2);
    vr.ip("-6 route add 2001:db8:9::/48 via 2001:db8::2");
    vr.expect("2001:db8:9::1", glean(0));
    vr.ip("-6 neigh add 2001:db8::2 lladdr 02:00:00:00:aa:02 dev t0");
    vr.expect("2001:db8:9::1", forward(0, GW_MAC));
    vr.expect("2001:db8::2", forward(0, GW_MAC));
    vr.ip("-6 route add 2001:db8:7::/48 via fe80::1 dev t1");
    vr.expect("2001:db8:7::1", glean(1));
    vr.ip("-6 route add fe80::/64 dev t1");
    vr.expect("fe80::1", glean(1));
    vr.ip("-6 neigh add fe80::1 lladdr 02:00:00:00:aa:03 dev t1");
    vr.expect("2001:db8:7::1", forward(1, GW_MAC2));
    // A link-local neighbour gets no host route: nothing is routed to it, and multicast that
    // reaches every VR on a link (a host's router solicitation) must not rebuild every FIB.
    assert_eq!(vr.lookup("fe80::1"), glean(1), "fe80::1 is left to the VR's kernel");
    vr.ip("-6 route replace 2001:db8:9::/48 via 2001:db8:1::7");
    vr.expect("2001:db8:9::1", glean(1));
    vr.ip("-6 route del 2001:db8:9::/48");
    vr.expect("2001:db8:9::1", Found::Miss);
    vr.ip("route add 10.44.0.0/16 via inet6 fe80::1 dev t1");
    vr.expect("10.44.0.1", forward(1, GW_MAC2));
}

#[test]
fn ecmp_keeps_each_flow_on_one_path_and_uses_both() {
    for v6 in [false, true] {
        let mut vr = Vr::new(if v6 { "e6" } else { "e4" }, 2);
        vr.start(2);
        let (route, dst) = if v6 {
            vr.ip("-6 neigh add 2001:db8::2 lladdr 02:00:00:00:aa:02 dev t0");
            vr.ip("-6 neigh add 2001:db8:1::2 lladdr 02:00:00:00:aa:03 dev t1");
            ("-6 route add 2001:db8:9::/48 nexthop via 2001:db8::2 nexthop via 2001:db8:1::2", "2001:db8:9::5")
        } else {
            vr.ip("neigh add 10.0.0.2 lladdr 02:00:00:00:aa:02 dev t0");
            vr.ip("neigh add 10.1.0.2 lladdr 02:00:00:00:aa:03 dev t1");
            ("route add 10.9.0.0/16 nexthop via 10.0.0.2 nexthop via 10.1.0.2", "10.9.0.5")
        };
        vr.ip(route);
        vr.expect_with(dst, |f| f != Found::Miss);
        let mut used = HashSet::new();
        for sport in 0..1000 {
            let first = vr.lookup_flow(dst, sport);
            assert_eq!(first, vr.lookup_flow(dst, sport), "flow {sport} changed path");
            assert!(first == forward(0, GW_MAC) || first == forward(1, GW_MAC2), "{first:?}");
            used.insert(first == forward(0, GW_MAC));
        }
        assert_eq!(used.len(), 2, "1000 flows all took one path (v6 {v6})");
    }
}

#[test]
fn routes_through_links_that_are_not_the_vrs_are_refused_and_counted() {
    let mut vr = Vr::new("f", 2);
    // Only t0 is the VR's; t1 is a link the user made in the namespace.
    vr.start(1);
    vr.ip("route add 10.68.0.0/16 dev lo");
    vr.ip("route add 10.69.0.0/16 via 10.1.0.2");
    vr.expect("10.68.0.1", Found::Kernel);
    vr.expect("10.69.0.1", Found::Kernel);
    vr.expect("10.1.0.9", Found::Kernel);
    // Also t1's connected subnets, 10.1.0.0/24 and 2001:db8:1::/64.
    vr.wait_stats(5, |s| s.refused == 4);
    vr.ip("route del 10.69.0.0/16");
    vr.expect("10.69.0.1", Found::Miss);
    vr.wait_stats(5, |s| s.refused == 3);
}

#[test]
fn a_link_going_down_takes_its_routes_along() {
    let mut vr = Vr::new("g", 2);
    vr.start(2);
    vr.ip("route add 10.9.0.0/16 via 10.1.0.2");
    vr.expect("10.9.0.1", glean(1));
    // IPv4 drops these routes without a notification: only a resync finds out.
    vr.ip("link set t1 down");
    vr.expect("10.9.0.1", Found::Miss);
    vr.expect("10.1.0.5", Found::Miss);
    assert!(vr.routed().stats().resyncs >= 1);
    vr.ip("link set t1 up");
    vr.expect("10.1.0.5", glean(1));
}

/// One socket hears every VR namespace: each mirror must take only its own namespace's news,
/// also when a new namespace gets the id of one just deleted.
#[test]
fn each_mirror_follows_its_own_namespace_only() {
    let mut a = Vr::new("n1", 1);
    let mut b = Vr::new("n2", 1);
    a.start(1);
    b.start(1);
    a.ip("route add 10.77.0.0/16 via 10.0.0.2");
    b.ip("route add 10.78.0.0/16 via 10.0.0.3");
    a.expect("10.77.0.1", glean(0));
    b.expect("10.78.0.1", glean(0));
    a.expect("10.78.0.1", Found::Miss);
    b.expect("10.77.0.1", Found::Miss);
    // Deleting `a` tells the socket about its routes going; a namespace made next may take
    // its id and must not inherit that news (nor its routes).
    a.ip("route add 10.79.0.0/16 via 10.0.0.2");
    drop(a);
    let mut c = Vr::new("n3", 1);
    c.start(1);
    c.ip("route add 10.80.0.0/16 via 10.0.0.4");
    c.expect("10.80.0.1", glean(0));
    c.expect("10.77.0.1", Found::Miss);
    c.expect("10.79.0.1", Found::Miss);
    b.expect("10.80.0.1", Found::Miss);
    assert_eq!(c.settle().resyncs, 0);
}

#[test]
fn the_fib_quota_is_counted_and_routes_fit_again_when_room_returns() {
    let mut vr = Vr::new("q", 1);
    vr.start(1);
    // Room for ten more routes.
    let base = vr.settle();
    let limit = (base.routes_v4 + base.routes_v6) as usize + 10;
    vr.tables.lock().unwrap().fib_limit = limit;
    for i in 0..15 {
        vr.ip(&format!("route add 10.50.{i}.0/24 via 10.0.0.2"));
    }
    let s = vr.wait_stats(5, |s| s.over_quota == 5);
    assert_eq!((s.routes_v4 + s.routes_v6) as usize, limit, "{s:?}");
    for i in 0..5 {
        vr.ip(&format!("route del 10.50.{i}.0/24"));
    }
    let s = vr.wait_stats(5, |s| s.over_quota == 0);
    assert_eq!((s.routes_v4 + s.routes_v6) as usize, limit, "{s:?}");
    vr.expect("10.50.14.1", glean(0));
}

#[test]
fn a_missing_namespace_is_named_in_the_error() {
    let domain = pearl_lookup::rcu::RcuDomain::new();
    let tables = std::sync::Arc::new(std::sync::Mutex::new(pearl_tables::VrTables::empty(&domain, 10)));
    let e = pearl_routed::Routed::start("rtd-no-such-ns", vec![], tables).err().expect("no such namespace");
    assert!(e.to_string().contains("/run/netns/rtd-no-such-ns"), "{e}");
}
