//! `pearl-bench eval`: the evaluation as FD.io CSIT measures VPP, PEARL beside its peers in the
//! same run, written where a reader finds it: `<out>/<name>.json`, one PNG per figure, and the
//! markdown page (docs/EVALUATION.md). This slice runs one evaluation, `throughput`: NDR and PDR
//! by frame size through a pearld fast VR, the kernel router and the rig alone, taking turns.
//!
//! - `search`: the MLRsearch goals and controller, pure (tested against a brute-force scan);
//! - `trial`: the topology, the peers and one counted trial;
//! - `report`: the JSON's checks and the markdown page, with the seed papers' figures;
//! - `figures`: the PNGs (bench/eval_plot.py) and their well-formedness.
//!
//! `--quick` is the same run at the sizes 64, 512 and 1518 with one trial per load; every run ends
//! by checking its outputs (not its numbers) and fails if one is missing or malformed.

mod figures;
mod report;
mod search;
mod trial;

use crate::args::Args;
use search::{Goal, Settings};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use trial::{Bed, Peer};

const EVALUATIONS: &[&str] = &["throughput"];
const OPTIONS: &[&str] = &["only", "out", "markdown", "pearld", "sizes", "gen-cpu", "router-cpu", "max-pps"];
const QUICK_SIZES: &[usize] = &[64, 512, 1518];
const FULL_SIZES: &[usize] = &[64, 128, 256, 512, 1024, 1280, 1518];
const TRIAL_SECONDS: f64 = 1.0;
/// Seconds of trials a load needs in the full run (RFC 9971's goal duration sum, as CSIT sets it).
const FULL_DURATION_SUM: f64 = 21.0;
const PDR_LOSS: f64 = 0.005;
const EXCEED_RATIO: f64 = 0.5;
const WIDTH: f64 = 0.01;
const MIN_LOAD: f64 = 10_000.0;

pub fn run(argv: &[String]) -> Result<(), String> {
    let quick = argv.iter().any(|a| a == "--quick");
    let rest: Vec<String> = argv.iter().filter(|a| *a != "--quick").cloned().collect();
    let args = Args::parse(&rest, OPTIONS)?;
    let only = args.get::<String>("only", String::new())?;
    if !only.is_empty() && !EVALUATIONS.contains(&only.as_str()) {
        return Err(format!("--only: {only:?} is not one of {}", EVALUATIONS.join(", ")));
    }
    let out = PathBuf::from(args.get::<String>("out", "docs/evaluation".into())?);
    let page = match args.get::<String>("markdown", String::new())? {
        m if !m.is_empty() => PathBuf::from(m),
        _ if args.required("out").is_ok() => out.join("EVALUATION.md"),
        _ => PathBuf::from("docs/EVALUATION.md"),
    };
    let sizes = match args.get::<String>("sizes", String::new())? {
        s if s.is_empty() => (if quick { QUICK_SIZES } else { FULL_SIZES }).to_vec(),
        s => s
            .split(',')
            .map(|x| x.trim().parse::<usize>().ok().filter(|v| (64..=1518).contains(v)))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("--sizes: expected frame sizes in 64..=1518 separated by commas, got {s:?}"))?,
    };
    let max_load: f64 = args.get("max-pps", 1_000_000.0)?;
    if !(max_load > MIN_LOAD && max_load.is_finite()) {
        return Err(format!("--max-pps: {max_load} is not above the minimum load {MIN_LOAD}"));
    }
    let (gen_cpu, router_cpu): (usize, usize) = (args.get("gen-cpu", 0)?, args.get("router-cpu", 1)?);
    if gen_cpu == router_cpu {
        return Err("--gen-cpu and --router-cpu must differ".into());
    }
    let pearld = match args.get::<String>("pearld", String::new())? {
        p if p.is_empty() => std::env::current_exe().map_err(|e| format!("locating pearl-bench: {e}"))?.with_file_name("pearld"),
        p => PathBuf::from(p),
    };
    // SAFETY: geteuid has no memory effects.
    if unsafe { libc::geteuid() } != 0 {
        return Err("eval must run as root: it creates network namespaces and veth pairs".into());
    }
    if !pearld.is_file() {
        return Err(format!("--pearld: no pearld at {} (cargo build --release -p pearld)", pearld.display()));
    }
    std::fs::create_dir_all(&out).map_err(|e| format!("--out {}: {e}", out.display()))?;

    let duration_sum = if quick { TRIAL_SECONDS } else { FULL_DURATION_SUM };
    let goals = [
        Goal { name: "NDR", loss_ratio: 0.0, duration_sum, exceed_ratio: EXCEED_RATIO, width: WIDTH },
        Goal { name: "PDR", loss_ratio: PDR_LOSS, duration_sum, exceed_ratio: EXCEED_RATIO, width: WIDTH },
    ];
    let settings = Settings { min_load: MIN_LOAD, max_load };
    let mut bed = Bed::build(&pearld, gen_cpu, router_cpu)?;
    let mut results = Vec::new();
    for &size in &sizes {
        for peer in Peer::ALL {
            results.push(throughput(&mut bed, peer, size, &settings, &goals)?);
        }
    }
    drop(bed);

    let command = format!("pearl-bench eval {}", argv.join(" ")).trim().to_string();
    let data = json!({
        "name": "throughput",
        "command": command,
        "quick": quick,
        "machine": {
            "cpu": report::cpu_model(),
            "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
            "gen_cpu": gen_cpu,
            "router_cpu": router_cpu,
            "note": "Not a quiet machine unless said: each trial records /proc/loadavg (`loadavg`), the load of everything else running.",
        },
        "settings": {
            "trial_seconds": TRIAL_SECONDS, "duration_sum_seconds": duration_sum, "exceed_ratio": EXCEED_RATIO, "width": WIDTH,
            "ndr_loss_ratio": 0.0, "pdr_loss_ratio": PDR_LOSS, "min_load_pps": MIN_LOAD, "max_load_pps": max_load,
        },
        "results": results,
    });
    let json_path = out.join("throughput.json");
    let text = serde_json::to_string_pretty(&data).expect("a JSON value serialises");
    std::fs::write(&json_path, text + "\n").map_err(|e| format!("{}: {e}", json_path.display()))?;
    for png in figures::draw(&json_path, &out)? {
        eprintln!("eval: figure {}", png.display());
    }
    let md = report::markdown(&data, &figures_link(&page, &out), &command);
    std::fs::write(&page, md).map_err(|e| format!("{}: {e}", page.display()))?;
    report::check(&json_path, &page, &out, &sizes)?;
    eprintln!("eval: wrote {}, {} and the figures; every output checked", json_path.display(), page.display());
    Ok(())
}

/// One peer's search at one frame size, a progress line per trial.
fn throughput(bed: &mut Bed, peer: Peer, size: usize, settings: &Settings, goals: &[Goal]) -> Result<Value, String> {
    let serving = bed.serve(peer, size)?;
    let mut records = Vec::new();
    let outcome = search::search(settings, goals, |load| {
        let r = bed.trial(&serving, load, TRIAL_SECONDS)?;
        eprintln!(
            "eval: {size} B {:<10} trial {:>3}{}: load {:>9.0} pps, offered {:>9}, received {:>9}, lost {:>8} ({:.3} %), loadavg {:.2}",
            peer.name(),
            records.len(),
            if records.is_empty() { " (warm-up)" } else { "" },
            load,
            r.offered,
            r.received,
            r.lost,
            r.loss_ratio() * 100.0,
            r.loadavg,
        );
        let t = search::Trial { load, duration: r.seconds, loss_ratio: r.loss_ratio() };
        records.push(r);
        Ok(t)
    });
    serving.finish()?;
    let outcome = outcome?;
    let found: Vec<String> = goals
        .iter()
        .zip(&outcome.results)
        .map(|(g, r)| format!("{} {}", g.name, r.map_or("below min".into(), |v| format!("{v:.0} pps"))))
        .collect();
    eprintln!("eval: {size} B {}: {} ({} trials)", peer.name(), found.join(", "), outcome.trials.len());
    Ok(json!({
        "size": size,
        "peer": peer.name(),
        "ndr_pps": outcome.results[0],
        "pdr_pps": outcome.results[1],
        "trials": records.iter().map(trial::Record::json).collect::<Vec<_>>(),
    }))
}

/// The figures' folder as the page links it.
fn figures_link(page: &Path, out: &Path) -> String {
    let (page_dir, out) = (page.parent().unwrap_or(Path::new("")), out.to_path_buf());
    if out == page_dir {
        String::new()
    } else if out.parent() == Some(page_dir) {
        format!("{}/", out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
    } else {
        format!("{}/", std::fs::canonicalize(&out).unwrap_or(out).display())
    }
}
