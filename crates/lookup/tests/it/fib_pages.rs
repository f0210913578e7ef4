//! Paging through a FIB (`Fib::page`, behind `pearlctl fib`): the pages of any size, joined,
//! are the whole table in order, and a page within a prefix holds exactly the routes in it.

use pearl_lookup::fib::{AddrBits, Fib, Prefix};
use pearl_lookup::rcu::RcuDomain;
use proptest::prelude::*;

fn pages<A: AddrBits>(fib: &Fib<A>, within: Option<Prefix<A>>, size: usize) -> Vec<(Prefix<A>, u32)> {
    let mut all = Vec::new();
    loop {
        let page = fib.page(all.last().map(|&(p, _)| p), within, size);
        assert!(page.len() <= size, "a page holds at most its limit");
        let done = page.len() < size;
        all.extend(page);
        if done {
            return all;
        }
    }
}

fn inside<A: AddrBits>(p: Prefix<A>, w: Prefix<A>) -> bool {
    p.len() >= w.len() && p.addr().network(w.len()) == w.addr()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn pages_joined_are_the_table_and_a_prefix_selects_what_lies_in_it(
        routes in prop::collection::vec((any::<u32>().prop_map(|a| a & 0xc3ff_ff00), prop_oneof![0u32..=32, 15u32..=17, 23u32..=25]), 0..400),
        size in 1usize..40,
        within in (any::<u32>(), 0u32..=20),
    ) {
        let domain = RcuDomain::new();
        let mut fib: Fib<u32> = Fib::new(&domain);
        for (i, &(a, l)) in routes.iter().enumerate() {
            fib.insert(Prefix::containing(a, l), i as u32).unwrap();
        }
        prop_assert_eq!(pages(&fib, None, size), fib.routes());
        let w = Prefix::containing(within.0 & 0xc3ff_ff00, within.1);
        let want: Vec<_> = fib.routes().into_iter().filter(|&(p, _)| inside(p, w)).collect();
        prop_assert_eq!(pages(&fib, Some(w), size), want);
    }
}

#[test]
fn a_page_of_a_large_table_is_bounded_and_ipv6_pages_too() {
    let domain = RcuDomain::new();
    let mut fib: Fib<u128> = Fib::new(&domain);
    for i in 0..20_000u128 {
        fib.insert(Prefix::containing((0x2001_0db8u128 << 96) | (i << 64), 64), 1).unwrap();
    }
    fib.insert("::/0".parse().unwrap(), 2).unwrap();
    let first = fib.page(None, None, 3);
    assert_eq!(first[0], ("::/0".parse().unwrap(), 2), "the default route first");
    assert_eq!(first.len(), 3);
    assert_eq!(pages(&fib, None, 1000).len(), 20_001);
    let w: Prefix<u128> = "2001:db8:0:100::/56".parse().unwrap();
    assert_eq!(fib.page(None, Some(w), 1000).len(), 256, "the 256 /64s of the /56");
}
