//! `pearl-bench scale`: many VRs on one node (issue 15). For each N: the node as its user meets
//! it ([`scale_node`](crate::scale_node), with an iproute2 peer), the in-memory pipeline's
//! rate with N VRs against 4 ([`scale_forwarding`](crate::scale_forwarding)), and what the data
//! plane takes to add and remove one VR ([`scale_update`](crate::scale_update)). One JSON line per
//! N; `--out OUT` also writes OUT.json and a table in OUT.md.

use crate::args::Args;
use crate::report::round3;
use crate::scale_forwarding::{self, ROUTES_PER_VR};
use crate::scale_node::{self, Ports, Settings};
use crate::scale_update;
use crate::scale_validate;
use serde_json::{json, Value};
use std::time::Duration;

const OPTIONS: &[&str] =
    &["vrs", "kind", "idle-seconds", "settle-seconds", "creates", "pearld", "seconds", "repeat", "parts", "changes", "out"];
const KINDS: &[&str] = &["fast", "kernel", "shared"];
/// The forwarding peer: a node of a few VRs.
const FEW_VRS: usize = 4;

pub fn run(argv: &[String]) -> Result<(), String> {
    let args = Args::parse(argv, OPTIONS)?;
    let counts = args
        .get::<String>("vrs", "256,1024".into())?
        .split(',')
        .map(|n| n.trim().parse::<usize>().ok().filter(|&n| (1..=8192).contains(&n)))
        .collect::<Option<Vec<usize>>>()
        .ok_or("--vrs: a comma-separated list of VR counts, each 1..=8192")?;
    let kind = args.get::<String>("kind", "fast".into())?;
    if !KINDS.contains(&kind.as_str()) {
        return Err(format!("--kind: expected one of {KINDS:?}, got {kind:?}"));
    }
    let pearld = match args.get::<String>("pearld", String::new())? {
        p if p.is_empty() => std::env::current_exe().map_err(|e| format!("locating pearl-bench: {e}"))?.with_file_name("pearld"),
        p => p.into(),
    };
    let secs = |name, default| args.get::<f64>(name, default).map(Duration::from_secs_f64);
    let settings = Settings {
        pearld,
        kind: kind.clone(),
        settle: secs("settle-seconds", 20.0)?,
        idle: secs("idle-seconds", 60.0)?,
        creates: args.get("creates", 9)?,
    };
    let (seconds, repeat) = (args.get::<f64>("seconds", 2.0)?, args.get::<usize>("repeat", 3)?);
    if seconds <= 0.0 || repeat == 0 {
        return Err("--seconds and --repeat must be positive".into());
    }
    let parts = args.get::<String>("parts", "node,forwarding".into())?;
    let parts: Vec<&str> = parts.split(',').map(str::trim).collect();
    if let Some(bad) = parts.iter().find(|p| !["node", "forwarding", "update", "validate"].contains(p)) {
        return Err(format!("--parts: expected node, forwarding, update and/or validate, got {bad:?}"));
    }
    let changes = args.get::<usize>("changes", 21)?;
    if changes == 0 {
        return Err("--changes must be positive".into());
    }
    // The forwarding figure is the fast path's; kernel and shared VRs forward in kernels.
    let forwarding = kind == "fast" && parts.contains(&"forwarding");
    // The veth pair pearld's VRs sit on; the in-memory pipeline needs none.
    let ports = if parts.contains(&"node") { Some(Ports::make()?) } else { None };
    let mut points = Vec::new();
    for &n in &counts {
        let mut p = if parts.contains(&"node") { scale_node::point(n, &settings)? } else { json!({"vrs": n, "kind": kind}) };
        if forwarding {
            let f = scale_forwarding::paired(n, FEW_VRS, seconds, repeat)?;
            p["forwarding"] = json!({
                "routes_per_vr": ROUTES_PER_VR, "mpps": round3(f.mpps), "cpu_share": round3(f.cpu_share),
                "refused_by_worker_share": round3(f.refused),
                "mpps_at_4_vrs": round3(f.peer_mpps), "vs_4_vrs": round3(f.ratio),
            });
        }
        if kind == "fast" && parts.contains(&"update") {
            let u = scale_update::timed(n, changes)?;
            p["update"] =
                json!({"changes": changes, "add_ms": round3(u.add_ms), "remove_ms": round3(u.remove_ms), "drop_ms": round3(u.drop_ms)});
        }
        if kind == "fast" && parts.contains(&"validate") {
            let v = scale_validate::timed(n, changes)?;
            p["validate"] = json!({
                "changes": changes, "add_ms": round3(v.add_ms), "remove_ms": round3(v.remove_ms),
                "indexed_add_ms": round3(v.indexed_add_ms), "indexed_remove_ms": round3(v.indexed_remove_ms),
                "index_update_ms": round3(v.index_update_ms), "index_build_ms": round3(v.index_build_ms),
            });
        }
        println!("{p}");
        points.push(p);
    }
    drop(ports);
    if let Ok(out) = args.required("out") {
        write(out, &points, argv)?;
    }
    Ok(())
}

fn write(out: &str, points: &[Value], argv: &[String]) -> Result<(), String> {
    let command = format!("pearl-bench scale {}", argv.join(" "));
    let uname = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let doc = json!({"command": command, "kernel": uname, "cpus": cpus, "points": points});
    let path = |ext: &str| format!("{out}.{ext}");
    std::fs::write(path("json"), serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())? + "\n")
        .map_err(|e| format!("{}: {e}", path("json")))?;
    let mut md = format!("# Many VRs on one node\n\n`{command}` ({cpus} CPUs, kernel {uname})");
    if points.iter().all(|p| p["start_s"].is_null()) {
        md += ": the in-memory pipeline alone, each point's rate and its median ratio to the 4-VR peer run right before it.\n\n";
        md += "| VRs | forwarding | 4-VR peer | vs 4 VRs |\n|---|---|---|---|\n";
        for p in points {
            let f = &p["forwarding"];
            md += &format!("| {} | {} Mpps | {} Mpps | {} |\n", p["vrs"], f["mpps"], f["mpps_at_4_vrs"], f["vs_4_vrs"]);
        }
        return std::fs::write(path("md"), md).map_err(|e| format!("{}: {e}", path("md")));
    }
    md += &format!("; idle CPU over {} s, pearld's own.\n\n", points.first().map_or(Value::Null, |p| p["idle_seconds"].clone()));
    md += "| VRs | kind | start | kernel peer start | ratio | threads | RSS | RSS/VR | idle CPU | /v1/stats | API create p50 | API delete p50 | stop | kernel peer stop | left behind | forwarding | vs 4 VRs |\n";
    md += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for p in points {
        let f = &p["forwarding"];
        let (mpps, ratio) =
            if f.is_null() { ("–".to_string(), "–".to_string()) } else { (format!("{} Mpps", f["mpps"]), f["vs_4_vrs"].to_string()) };
        md += &format!(
            "| {} | {} | {} s | {} s | {} | {} | {} MiB | {} KiB | {} % | {} ms | {} ms | {} ms | {} s | {} s | {} ns, {} cgroups | {mpps} | {ratio} |\n",
            p["vrs"], p["kind"].as_str().unwrap_or(""), p["start_s"], p["kernel_peer"]["start_s"], p["start_vs_kernel"], p["threads"],
            p["rss_mib"], p["rss_per_vr_kib"], p["idle_cpu_percent"], p["stats_ms_p50"], p["create_ms_p50"], p["delete_ms_p50"],
            p["stop_s"], p["kernel_peer"]["stop_s"], p["left_behind"]["namespaces"], p["left_behind"]["cgroups"],
        );
    }
    std::fs::write(path("md"), md).map_err(|e| format!("{}: {e}", path("md")))
}
