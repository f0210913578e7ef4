//! The FIB loaded with the real 2025 BGP table (901,899 IPv4 + 160,147 IPv6 prefixes) agrees
//! with a simple reference — one hash map per prefix length, probed longest first — on 1,000,000
//! random in-table addresses per family, before and after deleting a random half of the table.

use flate2::read::MultiGzDecoder;
use pearl_lookup::fib::{read_prefix_list, AddrBits, Fib, Prefix, RouteUpdate, MISS};
use pearl_lookup::rcu::RcuDomain;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::io::BufReader;

fn table_path() -> String {
    std::env::var("PEARL_BGP_TABLE")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/bgp-full-table-2025.txt.gz").to_string())
}

struct Reference<A> {
    by_len: Vec<(u32, HashMap<A, u32>)>,
}

impl<A: AddrBits> Reference<A> {
    fn new(routes: &[(Prefix<A>, u32)]) -> Self {
        let mut maps: HashMap<u32, HashMap<A, u32>> = HashMap::new();
        for (p, nh) in routes {
            maps.entry(p.len()).or_default().insert(p.addr(), *nh);
        }
        let mut by_len: Vec<_> = maps.into_iter().collect();
        by_len.sort_by_key(|(len, _)| std::cmp::Reverse(*len));
        Reference { by_len }
    }

    fn lookup(&self, a: A) -> u32 {
        self.by_len.iter().find_map(|(len, m)| m.get(&a.network(*len)).copied()).unwrap_or(MISS)
    }
}

fn random_in<A>(p: &Prefix<A>, rng: &mut SmallRng, host: impl Fn(&mut SmallRng) -> A) -> A
where
    A: AddrBits + std::ops::BitOr<Output = A> + std::ops::BitAnd<Output = A> + std::ops::BitXor<Output = A>,
{
    p.addr() | (host(rng) & (p.last() ^ p.addr()))
}

fn check_family<A>(prefixes: &[Prefix<A>], host: impl Fn(&mut SmallRng) -> A + Copy)
where
    A: AddrBits + std::ops::BitOr<Output = A> + std::ops::BitAnd<Output = A> + std::ops::BitXor<Output = A>,
{
    let mut rng = SmallRng::seed_from_u64(2025);
    let routes: Vec<(Prefix<A>, u32)> = prefixes.iter().enumerate().map(|(i, p)| (*p, i as u32)).collect();
    let domain = RcuDomain::new();
    let mut fib: Fib<A> = Fib::new(&domain);
    let inserts: Vec<_> = routes.iter().map(|&(p, nh)| RouteUpdate::Insert(p, nh)).collect();
    let stats = fib.apply(&inserts).unwrap();
    assert_eq!(stats.inserted, prefixes.len(), "the table holds no duplicates");
    let view = fib.view();
    let mut reader = domain.register();

    let mut compare = |live: &[(Prefix<A>, u32)], probe_from: &[(Prefix<A>, u32)], rng: &mut SmallRng| {
        let reference = Reference::new(live);
        let addrs: Vec<A> = (0..1_000_000).map(|_| random_in(&probe_from[rng.gen_range(0..probe_from.len())].0, rng, host)).collect();
        let mut out = vec![0u32; addrs.len()];
        let g = reader.read();
        view.lookup_batch(&g, &addrs, &mut out);
        let mut misses = 0;
        for (i, &a) in addrs.iter().enumerate() {
            let want = reference.lookup(a);
            assert_eq!(out[i], want, "batch lookup of {a:?}");
            if i % 16 == 0 {
                assert_eq!(view.lookup(&g, a).unwrap_or(MISS), want, "single lookup of {a:?}");
            }
            misses += usize::from(want == MISS);
        }
        misses
    };
    assert_eq!(compare(&routes, &routes, &mut rng), 0, "every in-table address has a route");

    let mut shuffled = routes.clone();
    shuffled.shuffle(&mut rng);
    let (kept, deleted) = shuffled.split_at(routes.len() / 2);
    let removals: Vec<_> = deleted.iter().map(|&(p, _)| RouteUpdate::Remove(p)).collect();
    for chunk in removals.chunks(50_000) {
        fib.apply(chunk).unwrap();
    }
    assert_eq!(fib.len(), kept.len());
    let misses = compare(kept, deleted, &mut rng);
    assert!(misses > 0, "addresses of deleted prefixes must be able to miss");
    compare(kept, kept, &mut rng);
}

#[test]
fn full_bgp_table_matches_the_reference_before_and_after_deleting_half() {
    let path = table_path();
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e} (set PEARL_BGP_TABLE)"));
    let list = read_prefix_list(BufReader::new(MultiGzDecoder::new(file))).unwrap();
    assert_eq!((list.v4.len(), list.v6.len()), (901_899, 160_147));
    check_family(&list.v4, |r| r.gen::<u32>());
    check_family(&list.v6, |r| r.gen::<u128>());
}

/// `pearlctl fib` pages through the full table: every route once, in order, each page (the
/// API's largest, 10,000 routes) costing a bounded time under the tables' lock.
#[test]
fn the_full_bgp_table_pages_through_in_bounded_pages() {
    let path = table_path();
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e} (set PEARL_BGP_TABLE)"));
    let list = read_prefix_list(BufReader::new(MultiGzDecoder::new(file))).unwrap();
    let domain = RcuDomain::new();
    let mut fib: Fib<u32> = Fib::new(&domain);
    let inserts: Vec<_> = list.v4.iter().enumerate().map(|(i, &p)| RouteUpdate::Insert(p, i as u32 % 1000)).collect();
    fib.apply(&inserts).unwrap();
    let (mut all, mut longest, mut pages) = (Vec::with_capacity(fib.len()), std::time::Duration::ZERO, 0);
    let start = std::time::Instant::now();
    loop {
        let t = std::time::Instant::now();
        let page = fib.page(all.last().map(|&(p, _)| p), None, 10_000);
        longest = longest.max(t.elapsed());
        pages += 1;
        let last = page.len() < 10_000;
        all.extend(page);
        if last {
            break;
        }
    }
    eprintln!(
        "{} IPv4 routes in {pages} pages of 10,000: {:.0} ms in all, the longest page {:.2} ms",
        all.len(),
        start.elapsed().as_secs_f64() * 1e3,
        longest.as_secs_f64() * 1e3
    );
    assert_eq!(all, fib.routes());
    assert!(longest < std::time::Duration::from_millis(100), "a page held the writer {longest:?}");
}
