//! `pearl-bench lpm`: longest-prefix-match lookups and updates on a real route table.

use crate::args::Args;
use crate::report::{median, round3, Figure};
use crate::table::{self, BenchAddr, Order};
use pearl_lookup::fib::{Fib, Prefix, RouteUpdate, BATCH};
use pearl_lookup::rcu::RcuDomain;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const OPTIONS: &[&str] = &["family", "table", "lookups", "repeat", "seed", "order", "dump-addresses", "update-batch"];

pub fn run(argv: &[String]) -> Result<(), String> {
    let args = Args::parse(argv, OPTIONS)?;
    let family = args.required("family")?;
    if family != "v4" && family != "v6" {
        return Err(format!("--family: expected v4 or v6, got {family:?}"));
    }
    let list = table::load(args.required("table")?)?;
    if family == "v4" {
        bench(&list.v4, &args)
    } else {
        bench(&list.v6, &args)
    }
}

fn bench<A: BenchAddr>(prefixes: &[Prefix<A>], args: &Args) -> Result<(), String> {
    if prefixes.is_empty() {
        return Err(format!("--table holds no {} prefixes", A::FAMILY));
    }
    let lookups: usize = args.get("lookups", 10_000_000)?;
    let repeat: usize = args.get("repeat", 3)?;
    let order: Order = args.get("order", Order::Uniform)?;
    let update_batch: usize = args.get("update-batch", 10_000)?;
    let mut rng = SmallRng::seed_from_u64(args.get("seed", 1)?);
    let routes: Vec<RouteUpdate<A>> = prefixes.iter().map(|p| RouteUpdate::Insert(*p, table::next_hop_of(p))).collect();

    let domain = RcuDomain::new();
    let mut builds = Vec::new();
    let mut fib = Fib::new(&domain);
    for _ in 0..repeat.max(1) {
        fib = Fib::new(&domain);
        let t = Instant::now();
        fib.apply(&routes).map_err(|e| e.to_string())?;
        builds.push(t.elapsed().as_secs_f64());
    }
    let build_s = round3(median(builds));
    let addrs = table::addresses(prefixes, lookups, order, &mut rng);
    if let Ok(path) = args.required("dump-addresses") {
        dump(path, &addrs)?;
    }
    let view = fib.view();
    let mut reader = domain.register();
    let figure = |mode: &str| {
        Figure::new("lpm")
            .set("family", A::FAMILY)
            .set("mode", mode)
            .set("order", if order == Order::Uniform { "uniform" } else { "cyclic" })
            .set("prefixes", prefixes.len())
            .set("table_bytes", fib.table_bytes())
            .set("total_bytes", fib.total_bytes())
            .set("build_s", build_s)
    };

    let mut out = vec![0u32; addrs.len()];
    let mut times = Vec::new();
    for _ in 0..repeat {
        let t = Instant::now();
        for (a, o) in addrs.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            let g = reader.read();
            view.lookup_batch(&g, a, o);
        }
        times.push(t.elapsed().as_secs_f64());
    }
    let checksum = out.iter().fold(0u64, |s, &nh| s.wrapping_mul(31).wrapping_add(u64::from(nh)));
    figure("batch").set("batch", BATCH).set("checksum", checksum).rate(lookups as u64, median(times)).print();

    let mut times = Vec::new();
    let mut sum = 0u64;
    for _ in 0..repeat {
        let t = Instant::now();
        for a in addrs.chunks(BATCH) {
            let g = reader.read();
            for &x in a {
                sum = sum.wrapping_add(u64::from(view.lookup(&g, x).unwrap_or(0)));
            }
        }
        times.push(t.elapsed().as_secs_f64());
    }
    figure("single").set("checksum", sum).rate(lookups as u64, median(times)).print();
    drop(reader);

    if update_batch > 0 {
        updates(prefixes, &routes, &addrs, update_batch, repeat, &mut rng, build_s);
    }
    Ok(())
}

/// Inserts half of the table into a table holding the other half, in batches, while another
/// thread looks up continuously; then removes that half again. Reports update rates and the
/// reader's rate before and during the updates.
fn updates<A: BenchAddr>(
    prefixes: &[Prefix<A>],
    routes: &[RouteUpdate<A>],
    addrs: &[A],
    batch: usize,
    repeat: usize,
    rng: &mut SmallRng,
    build_s: f64,
) {
    let mut shuffled = routes.to_vec();
    let mut table_bytes = 0;
    let (mut ins, mut del, mut idle, mut busy) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeat {
        shuffled.shuffle(rng);
        let (preload, added) = shuffled.split_at(shuffled.len() / 2);
        let removals: Vec<RouteUpdate<A>> = added
            .iter()
            .map(|u| match *u {
                RouteUpdate::Insert(p, _) | RouteUpdate::Remove(p) => RouteUpdate::Remove(p),
            })
            .collect();
        let domain = RcuDomain::new();
        let mut fib = Fib::new(&domain);
        fib.apply(preload).expect("valid routes");
        let (view, done, count) = (fib.view(), Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let mut reader = domain.register();
        let worker = {
            let (done, count, addrs) = (done.clone(), count.clone(), addrs.to_vec());
            std::thread::spawn(move || {
                let mut out = [0u32; BATCH];
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) {
                    for (k, a) in addrs.chunks_exact(BATCH).enumerate() {
                        let g = reader.read();
                        view.lookup_batch(&g, a, &mut out);
                        if k % 1024 == 1023 {
                            n += (1024 * BATCH) as u64;
                            count.store(n, Ordering::Relaxed);
                            if done.load(Ordering::Relaxed) {
                                break;
                            }
                        }
                    }
                }
            })
        };
        let rate = |c0: u64, t0: Instant| (count.load(Ordering::Relaxed) - c0) as f64 / t0.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_millis(100));
        let (c0, t0) = (count.load(Ordering::Relaxed), Instant::now());
        std::thread::sleep(Duration::from_millis(400));
        idle.push(rate(c0, t0));
        let (c0, t0) = (count.load(Ordering::Relaxed), Instant::now());
        for chunk in added.chunks(batch) {
            fib.apply(chunk).expect("valid routes");
        }
        ins.push(added.len() as f64 / t0.elapsed().as_secs_f64());
        busy.push(rate(c0, t0));
        let t = Instant::now();
        for chunk in removals.chunks(batch) {
            fib.apply(chunk).expect("valid routes");
        }
        del.push(removals.len() as f64 / t.elapsed().as_secs_f64());
        done.store(true, Ordering::Relaxed);
        worker.join().expect("reader thread");
        assert_eq!(fib.len(), preload.len());
        table_bytes = fib.table_bytes();
    }
    let (idle, busy, insert_rate) = (median(idle), median(busy), median(ins));
    let inserts = (prefixes.len() / 2) as u64;
    // The figure's ops are the inserts; ns_per_op and mops describe them.
    Figure::new("lpm_update")
        .set("family", A::FAMILY)
        .set("prefixes", prefixes.len())
        .set("table_bytes", table_bytes)
        .set("build_s", build_s)
        .set("updates", prefixes.len() / 2)
        .set("update_batch", batch)
        .set("insert_mops", round3(insert_rate / 1e6))
        .set("remove_mops", round3(median(del) / 1e6))
        .set("reader_idle_mops", round3(idle / 1e6))
        .set("reader_during_mops", round3(busy / 1e6))
        .rate(inserts, inserts as f64 / insert_rate)
        .set("reader_ratio", round3(busy / idle))
        .print();
}

fn dump<A: BenchAddr>(path: &str, addrs: &[A]) -> Result<(), String> {
    let err = |e: std::io::Error| format!("--dump-addresses {path}: {e}");
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).map_err(err)?);
    for a in addrs {
        writeln!(w, "{}", a.text()).map_err(err)?;
    }
    w.flush().map_err(err)
}
