//! Readers on other threads look up while the writer applies batches: they never block, and
//! never see a batch half applied.

use pearl_lookup::fib::{Fib, Prefix, RouteUpdate, MISS};
use pearl_lookup::rcu::RcuDomain;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn readers_see_each_batch_whole() {
    let domain = RcuDomain::new();
    let mut fib: Fib<u32> = Fib::new(&domain);
    // Prefixes in different root slots and depths, so one batch rewrites many separate nodes.
    let watched: Vec<Prefix<u32>> = (0..512u32)
        .map(|i| Prefix::containing(i.wrapping_mul(0x9e37_79b9) & 0x7fff_ffff, [12, 16, 20, 24, 28, 32][i as usize % 6]))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|p| p.len() >= 12)
        .collect();
    let probes: Vec<u32> = watched.iter().map(|p| p.last()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (view, stop, probes, mut reader) = (fib.view(), stop.clone(), probes.clone(), domain.register());
            std::thread::spawn(move || {
                let mut out = vec![0u32; probes.len()];
                let (mut rounds, mut newest) = (0u64, 0u32);
                while !stop.load(Ordering::Relaxed) {
                    let g = reader.read();
                    view.lookup_batch(&g, &probes, &mut out);
                    let first = out[0];
                    assert!(out.iter().all(|&nh| nh == first), "a reader saw a half-applied batch: {out:?}");
                    assert!(first == MISS || first >= newest, "a reader went back to an older version");
                    newest = if first == MISS { newest } else { first };
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    // Filler routes (in the other half of the address space) grow the arena while readers run,
    // forcing storage moves mid-test.
    let mut filler = 0u32;
    for version in 1..=300u32 {
        let mut batch: Vec<_> = watched.iter().map(|&p| RouteUpdate::Insert(p, version)).collect();
        for _ in 0..200 {
            filler = filler.wrapping_add(0x0001_0f01);
            batch.push(RouteUpdate::Insert(Prefix::containing(0x8000_0000 | filler, 29), version));
        }
        fib.apply(&batch).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().expect("reader panicked") > 0);
    }
}

#[test]
fn a_view_keeps_working_after_its_table_is_dropped() {
    let domain = RcuDomain::new();
    let view = {
        let mut fib: Fib<u32> = Fib::new(&domain);
        let routes: Vec<_> = (0..50_000u32).map(|i| RouteUpdate::Insert(Prefix::containing(i << 12, 20), i % 100)).collect();
        fib.apply(&routes).unwrap();
        fib.view()
    };
    // Whatever the allocator does with freed memory, the view's nodes must still be there.
    let churn: Vec<Vec<u32>> = (0..64).map(|i| vec![i; 1 << 16]).collect();
    let mut reader = domain.register();
    let g = reader.read();
    for i in (0..50_000u32).step_by(997) {
        assert_eq!(view.lookup(&g, (i << 12) | 5), Some(i % 100));
    }
    drop(churn);
}
