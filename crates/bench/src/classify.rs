//! `pearl-bench classify`: lookups per second of the VR classifier on a synthetic
//! mixed-wildcard rule set (see `pearl_classifier::synth` for the mix), single thread.

use crate::args::Args;
use crate::report::{median, round3, Figure};
use pearl_classifier::{synth, Classifier, Verdict};
use std::time::Instant;

pub fn run(argv: &[String]) -> Result<(), String> {
    let args = Args::parse(argv, &["rules", "seed", "lookups", "repeat"])?;
    let n: usize = args.required("rules")?.parse().map_err(|_| "--rules: not a number".to_string())?;
    let seed = args.get::<u64>("seed", 1)?;
    let lookups = args.get::<usize>("lookups", 1_000_000)?;
    let repeat = args.get::<usize>("repeat", 3)?;
    if repeat == 0 || lookups == 0 {
        return Err("--lookups and --repeat must be positive".into());
    }

    let rules = synth::rules(n, seed);
    let started = Instant::now();
    let mut classifier = Classifier::new();
    for (i, rule) in rules.iter().enumerate() {
        classifier.insert(*rule).map_err(|e| format!("synthetic rule {i}: {e}"))?;
    }
    let build_s = started.elapsed().as_secs_f64();

    let keys = synth::keys(&rules, lookups, seed.wrapping_add(1));
    let mut out: Vec<Option<Verdict>> = vec![None; keys.len()];
    let mut times = Vec::with_capacity(repeat);
    let mut checksum = 0u64;
    let mut matched = 0usize;
    for _ in 0..repeat {
        let t = Instant::now();
        classifier.lookup_batch(&keys, &mut out);
        times.push(t.elapsed().as_secs_f64());
        // Folding every verdict into a printed checksum keeps the lookups observable.
        checksum = out.iter().fold(checksum, |acc, v| {
            let x = v.map_or(u64::MAX, |v| (u64::from(v.vr.0) << 32) | u64::from(v.action));
            acc.rotate_left(5) ^ x
        });
        matched = out.iter().filter(|v| v.is_some()).count();
    }

    Figure::new("classify")
        .set("rules", n)
        .set("table_bytes", classifier.memory_bytes())
        .set("build_s", round3(build_s))
        .rate(lookups as u64, median(times))
        .set("tables", classifier.table_count())
        .set("matched", round3(matched as f64 / lookups as f64))
        .set("seed", seed)
        .set("checksum", format!("{checksum:016x}"))
        .print();
    Ok(())
}
