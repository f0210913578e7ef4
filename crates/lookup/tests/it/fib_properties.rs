//! The FIB against a naive reference (a linear scan over all routes for the longest match),
//! under random batches of inserts, replacements and removals, in both families.

use pearl_lookup::fib::{AddrBits, Fib, Prefix, RouteUpdate, MISS};
use pearl_lookup::rcu::RcuDomain;
use proptest::prelude::*;

fn reference<A: AddrBits>(routes: &[(Prefix<A>, u32)], addr: A) -> u32 {
    routes.iter().filter(|(p, _)| addr.network(p.len()) == p.addr()).max_by_key(|(p, _)| p.len()).map_or(MISS, |&(_, nh)| nh)
}

/// Addresses clustered under a few top bits so that prefixes nest, share nodes and straddle
/// every stride boundary.
fn addr4() -> impl Strategy<Value = u32> {
    (0u32..4, any::<u32>()).prop_map(|(top, low)| (top << 30) | (low >> 2) & 0x00ff_ffff | (top << 24))
}

fn len4() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..=33, Just(16), Just(24), Just(8), 15u32..=17, 23u32..=25, 31u32..=32].prop_map(|l| l.min(32))
}

fn update4() -> impl Strategy<Value = (bool, u32, u32, u32)> {
    (prop::bool::weighted(0.75), addr4(), len4(), 0u32..1000)
}

fn addr6() -> impl Strategy<Value = u128> {
    (0u128..3, any::<u128>()).prop_map(|(top, low)| (0x2001u128 << 112) | (top << 100) | (low >> 60))
}

fn len6() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..=128, 15u32..=17, 23u32..=25, 31u32..=49, 63u32..=65, 127u32..=128]
}

/// Applies `ops` in batches of `batch` to the FIB and to the reference, checking both agree on
/// `probes` plus the first and last address of every prefix ever used, after every batch.
fn check<A: AddrBits>(ops: Vec<(bool, A, u32, u32)>, batch: usize, probes: Vec<A>)
where
    Prefix<A>: Copy,
{
    let domain = RcuDomain::new();
    let mut fib: Fib<A> = Fib::new(&domain);
    let view = fib.view();
    let mut reader = domain.register();
    let mut model: Vec<(Prefix<A>, u32)> = Vec::new();
    let mut probes = probes;
    for chunk in ops.chunks(batch) {
        let updates: Vec<RouteUpdate<A>> = chunk
            .iter()
            .map(|&(insert, a, len, nh)| {
                let p = Prefix::containing(a, len);
                if insert {
                    RouteUpdate::Insert(p, nh)
                } else {
                    RouteUpdate::Remove(p)
                }
            })
            .collect();
        fib.apply(&updates).unwrap();
        for u in &updates {
            match *u {
                RouteUpdate::Insert(p, nh) => {
                    model.retain(|(q, _)| *q != p);
                    model.push((p, nh));
                    probes.extend([p.addr(), p.last()]);
                }
                RouteUpdate::Remove(p) => model.retain(|(q, _)| *q != p),
            }
        }
        assert_eq!(fib.len(), model.len());
        let g = reader.read();
        let mut batch_out = vec![0u32; probes.len()];
        view.lookup_batch(&g, &probes, &mut batch_out);
        for (i, &a) in probes.iter().enumerate() {
            let want = reference(&model, a);
            assert_eq!(view.lookup(&g, a).unwrap_or(MISS), want, "single lookup of {a:?}");
            assert_eq!(batch_out[i], want, "batch lookup of {a:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn ipv4_matches_linear_scan(
        ops in prop::collection::vec(update4(), 1..300),
        batch in 1usize..50,
        probes in prop::collection::vec(addr4(), 64),
    ) {
        check(ops, batch, probes);
    }

    /// Tables around the small table's size (16 routes besides the default), going to the trie
    /// and back, with default and host routes among them.
    #[test]
    fn small_ipv4_tables_match_linear_scan(
        ops in prop::collection::vec((prop::bool::weighted(0.7), addr4(), prop_oneof![len4(), Just(0), Just(32)], 0u32..1000), 1..60),
        batch in 1usize..6,
        probes in prop::collection::vec(addr4(), 64),
    ) {
        check(ops, batch, probes);
    }

    #[test]
    fn small_ipv6_tables_match_linear_scan(
        ops in prop::collection::vec((prop::bool::weighted(0.7), addr6(), prop_oneof![len6(), Just(0), Just(128)], 0u32..1000), 1..60),
        batch in 1usize..6,
        probes in prop::collection::vec(addr6(), 64),
    ) {
        check(ops, batch, probes);
    }

    #[test]
    fn ipv6_matches_linear_scan(
        ops in prop::collection::vec((prop::bool::weighted(0.75), addr6(), len6(), 0u32..1000), 1..200),
        batch in 1usize..40,
        probes in prop::collection::vec(addr6(), 64),
    ) {
        check(ops, batch, probes);
    }
}

#[test]
fn removing_everything_returns_to_an_empty_table_and_reuses_memory() {
    let domain = RcuDomain::new();
    let mut fib: Fib<u32> = Fib::new(&domain);
    let empty = fib.live_bytes();
    let prefixes: Vec<Prefix<u32>> = (0..5000u32).map(|i| Prefix::containing(i.wrapping_mul(2_654_435_761), 16 + i % 17)).collect();
    for round in 0..3 {
        let ins: Vec<_> = prefixes.iter().map(|&p| RouteUpdate::Insert(p, round)).collect();
        fib.apply(&ins).unwrap();
        let allocated = fib.table_bytes();
        let del: Vec<_> = prefixes.iter().map(|&p| RouteUpdate::Remove(p)).collect();
        fib.apply(&del).unwrap();
        assert!(fib.is_empty());
        assert_eq!(fib.live_bytes(), empty, "round {round}: nodes leaked");
        if round > 0 {
            assert_eq!(fib.table_bytes(), allocated, "round {round}: freed nodes were not reused");
        }
    }
    let mut r = domain.register();
    assert_eq!(fib.view().lookup(&r.read(), 0x0a00_0001), None);
}

#[test]
fn a_refused_batch_changes_nothing() {
    let domain = RcuDomain::new();
    let mut fib: Fib<u32> = Fib::new(&domain);
    let p: Prefix<u32> = "10.0.0.0/8".parse().unwrap();
    fib.insert(p, 1).unwrap();
    let q: Prefix<u32> = "10.1.0.0/16".parse().unwrap();
    let err = fib.apply(&[RouteUpdate::Insert(q, 2), RouteUpdate::Insert(p, u32::MAX)]).unwrap_err();
    assert_eq!(err.to_string(), format!("update 1: next hop {} exceeds the maximum {}", u32::MAX, MISS - 1));
    assert_eq!(fib.get(q), None);
    assert_eq!(fib.get(p), Some(1));
    let mut r = domain.register();
    assert_eq!(fib.view().lookup(&r.read(), 0x0a01_0101), Some(1));
}

#[test]
fn default_route_applies_only_where_nothing_longer_matches() {
    let domain = RcuDomain::new();
    let mut fib: Fib<u128> = Fib::new(&domain);
    let view = fib.view();
    let mut r = domain.register();
    fib.insert("2001:db8::/32".parse().unwrap(), 7).unwrap();
    assert_eq!(view.lookup(&r.read(), 1), None);
    fib.insert("::/0".parse().unwrap(), 9).unwrap();
    assert_eq!(view.lookup(&r.read(), 1), Some(9));
    assert_eq!(view.lookup(&r.read(), 0x2001_0db8u128 << 96), Some(7));
    fib.remove("::/0".parse().unwrap());
    assert_eq!(view.lookup(&r.read(), 1), None);
}

#[test]
fn a_small_vr_costs_at_most_16_kib() {
    let domain = RcuDomain::new();
    let mut v4: Fib<u32> = Fib::new(&domain);
    let mut v6: Fib<u128> = Fib::new(&domain);
    for i in 0..10u32 {
        v4.insert(Prefix::containing(0x0a00_0000 | (i << 12), 20 + i), i).unwrap();
        let a = (0x2001_0db8u128 << 96) | (u128::from(i) << 80);
        v6.insert(Prefix::containing(a, 48 + 4 * i), i).unwrap();
    }
    let total = v4.total_bytes() + v6.total_bytes();
    eprintln!("a VR with 10 IPv4 + 10 IPv6 routes: {total} bytes ({} v4 + {} v6)", v4.total_bytes(), v6.total_bytes());
    assert!(total <= 16 * 1024, "10 + 10 routes cost {total} bytes");
}

#[test]
fn a_table_grows_into_a_trie_past_sixteen_routes_and_back_below_nine_answering_throughout() {
    let domain = RcuDomain::new();
    let mut fib: Fib<u32> = Fib::new(&domain);
    let view = fib.view();
    let mut r = domain.register();
    let nets: Vec<Prefix<u32>> = (0..24u32).map(|i| Prefix::containing(0x0a00_0000 | (i << 8), 24)).collect();
    let check = |fib: &Fib<u32>, r: &mut pearl_lookup::rcu::RcuReader, n: usize| {
        for (i, p) in nets.iter().enumerate() {
            let want = (i < n).then_some(i as u32);
            assert_eq!(view.lookup(&r.read(), p.addr() | 7), want, "{n} routes, {p:?}");
        }
        let mut out = vec![0; nets.len()];
        view.lookup_batch(&r.read(), &nets.iter().map(|p| p.addr()).collect::<Vec<_>>(), &mut out);
        assert!(out.iter().enumerate().all(|(i, &nh)| nh == if i < n { i as u32 } else { MISS }), "{n}: {out:?}");
        fib.live_bytes()
    };
    assert_eq!(check(&fib, &mut r, 0), 0, "an empty table has no trie");
    for (i, &p) in nets.iter().enumerate() {
        fib.insert(p, i as u32).unwrap();
        let live = check(&fib, &mut r, i + 1);
        assert_eq!(live > 0, i + 1 > 16, "{} routes: {live} bytes of trie", i + 1);
    }
    for n in (0..nets.len()).rev() {
        fib.remove(nets[n]);
        let live = check(&fib, &mut r, n);
        assert_eq!(live > 0, n > 8, "{n} routes: {live} bytes of trie");
    }
}
