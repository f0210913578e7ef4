//! `pearl-bench placement-sim`: the FPGA substrate's allocation experiment (seeds/002, §5.4,
//! Figure 10) driven through PEARL's allocator (`pearl_control::Allocator`): virtual networks
//! arrive (Poisson, a mean of `--arrival-hours` apart) and live an exponential lifetime (mean
//! `--lifetime-hours`); every hour each one asks for its initial bandwidth changed by a uniform
//! amount within ±`variance`; an increase that cannot be met leaves the bandwidth as it was. Software (the
//! kernel) offers `--software-mbps` in all, hardware (the fast path) `--hardware-mbps` over
//! `--slots` VRs; additions prefer software, as in the paper. Each variance runs twice on the
//! same workload, with and without migration. The paper's bandwidths are a PlanetLab sample it
//! does not list: a log-normal distribution (`--median-mbps`, `--sigma`) stands in.
//!
//! Prints one JSON object per variance and policy: revisions asked and granted, migrations,
//! additions refused.

use crate::args::Args;
use pearl_control::{Allocator, Engine, Pool};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const OPTIONS: &[&str] =
    &["vns", "seed", "variances", "software-mbps", "hardware-mbps", "slots", "arrival-hours", "lifetime-hours", "median-mbps", "sigma"];

struct Vn {
    arrives: f64,
    leaves: f64,
    mbps: f64,
}

pub fn run(argv: &[String]) -> Result<(), String> {
    let args = Args::parse(argv, OPTIONS)?;
    let vns: usize = args.get("vns", 1000)?;
    let seed: u64 = args.get("seed", 1)?;
    let variances: String = args.get("variances", "10,25,50,75,100".to_string())?;
    let software: f64 = args.get("software-mbps", 100.0)?;
    let hardware: f64 = args.get("hardware-mbps", 1000.0)?;
    let slots: usize = args.get("slots", 20)?;
    let arrival: f64 = args.get("arrival-hours", 2.0)?;
    let lifetime: f64 = args.get("lifetime-hours", 64.0)?;
    let median: f64 = args.get("median-mbps", 20.0)?;
    let sigma: f64 = args.get("sigma", 1.0)?;
    let variances: Vec<f64> = variances
        .split(',')
        .map(|v| v.trim().parse::<f64>().map_err(|_| format!("--variances: {v:?} is not a percentage")))
        .collect::<Result<_, _>>()?;

    let mut rng = StdRng::seed_from_u64(seed);
    let mut at = 0.0;
    let workload: Vec<Vn> = (0..vns)
        .map(|_| {
            at += exponential(&mut rng, arrival);
            let mbps = (median.ln() + sigma * normal(&mut rng)).exp();
            Vn { arrives: at, leaves: at + exponential(&mut rng, lifetime), mbps }
        })
        .collect();
    for &variance in &variances {
        for migrate in [false, true] {
            let allocator =
                Allocator::new(Pool { mbps: hardware, slots: Some(slots) }, Pool { mbps: software, slots: None }, Engine::Kernel, migrate);
            let r = simulate(&workload, allocator, variance / 100.0, seed);
            println!(
                "{}",
                serde_json::json!({
                    "variance_percent": variance, "migration": migrate, "revisions": r.revisions, "granted": r.granted,
                    "granted_percent": 100.0 * r.granted as f64 / r.revisions.max(1) as f64,
                    "increases": r.increases, "increases_granted": r.increases_granted,
                    "migrations": r.migrations, "additions_refused": r.refused, "vns": vns,
                })
            );
        }
    }
    Ok(())
}

#[derive(Default)]
struct Outcome {
    revisions: u64,
    granted: u64,
    increases: u64,
    increases_granted: u64,
    migrations: u64,
    refused: u64,
}

/// Hour by hour: departures and arrivals of the hour, then every active network's revision.
/// The revisions' random amounts depend on the network and the hour only, so both policies
/// see the same requests.
fn simulate(workload: &[Vn], mut a: Allocator, variance: f64, seed: u64) -> Outcome {
    let mut out = Outcome::default();
    let end = workload.iter().map(|v| v.leaves).fold(0.0, f64::max).ceil() as u64;
    let mut active: Vec<usize> = Vec::new();
    let mut next = 0;
    for hour in 1..=end {
        let now = hour as f64;
        active.retain(|&v| {
            let stays = workload[v].leaves > now;
            if !stays {
                a.remove(v as u32);
            }
            stays
        });
        while next < workload.len() && workload[next].arrives <= now {
            if workload[next].leaves > now {
                match a.add(next as u32, workload[next].mbps) {
                    Some(_) => active.push(next),
                    None => out.refused += 1,
                }
            }
            next += 1;
        }
        for &v in &active {
            let mut rng =
                StdRng::seed_from_u64(seed ^ (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ hour.wrapping_mul(0xc2b2_ae3d_27d4_eb4f));
            let change = rng.gen_range(-variance..=variance);
            let had = a.bandwidth_of(v as u32).expect("active");
            // Fluctuations "from their initial bandwidth assignments" (§5.4).
            let wanted = (workload[v].mbps * (1.0 + change)).max(0.01);
            let revision = a.revise(v as u32, wanted);
            out.revisions += 1;
            out.granted += u64::from(revision.granted);
            if wanted > had {
                out.increases += 1;
                out.increases_granted += u64::from(revision.granted);
            }
            out.migrations += revision.moves.len() as u64;
        }
    }
    out
}

fn exponential(rng: &mut StdRng, mean: f64) -> f64 {
    -mean * (1.0 - rng.gen::<f64>()).ln()
}

/// A standard normal deviate (Box–Muller).
fn normal(rng: &mut StdRng) -> f64 {
    let (u, v): (f64, f64) = (1.0 - rng.gen::<f64>(), rng.gen());
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}
