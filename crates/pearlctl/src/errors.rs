//! `pearlctl errors [VR]`: which stage drops what, node-wide or for one VR — counts and rates
//! by stage and reason, under the names `/metrics` uses. Text shows the counters that counted
//! something; --json every one.

use crate::client::{segment, Client};
use crate::failure::Failure;
use crate::table::Table;
use serde_json::Value;

/// The pipeline's order, which the rows follow.
const STAGES: &[&str] = &["rx", "extract", "classifier", "program", "slow_path", "queue", "tx", "worker", "offload", "kernel"];

pub fn run(client: &Client, vr: Option<&str>, json: bool) -> Result<(), Failure> {
    let query = vr.map_or(String::new(), |v| format!("?vr={}", segment(v)));
    let v = client.get(&format!("/v1/errors{query}"))?;
    if json {
        println!("{v}");
        return Ok(());
    }
    let mut rows: Vec<&Value> = v["errors"].as_array().into_iter().flatten().filter(|e| e["count"].as_u64() != Some(0)).collect();
    let rank = |e: &Value| STAGES.iter().position(|s| e["stage"] == *s).unwrap_or(STAGES.len());
    rows.sort_by_key(|e| rank(e));
    if rows.is_empty() {
        println!("no drops or exceptions counted{}", vr.map_or(String::new(), |v| format!(" for VR {v}")));
        return Ok(());
    }
    let mut t = Table::new(&["stage", "reason", "where", "metric", "count", "per second"], 4);
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    for e in rows {
        let place = [("port", "port"), ("vr", "vr"), ("worker", "worker")]
            .iter()
            .find_map(|(k, label)| e[k].as_str().map(|x| format!("{label} {x}")))
            .unwrap_or_default();
        let rate = e["per_second"].as_f64().map_or("-".into(), |r| format!("{r:.1}"));
        t.row(vec![text(&e["stage"]), text(&e["reason"]), place, text(&e["metric"]), e["count"].to_string(), rate]);
    }
    print!("{}", t.render());
    Ok(())
}
