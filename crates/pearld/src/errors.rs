//! `GET /v1/errors`: what the operator asks first when traffic goes missing — which stage
//! drops what. Read from the same families `/metrics` serves (so names and labels agree by
//! construction), each counter given its pipeline stage and its rate over the sampler's
//! last interval.

use crate::api_error::ApiError;
use crate::ctx::Ctx;
use crate::http::Response;
use crate::metrics::{self, Family, Sample};
use crate::models::errors::{ErrorCount, Errors};
use crate::router::Call;
use crate::stats;
use std::collections::HashMap;

/// The families that count losses or exceptions; the label that says why.
const COUNTED: &[(&str, &str)] = &[
    ("pearl_port_drops_total", "reason"),
    ("pearl_vr_exceptions_total", "reason"),
    ("pearl_vr_drops_total", "reason"),
    ("pearl_vr_kernel_drops_total", "counter"),
    ("pearl_worker_drops_total", "reason"),
];

pub fn list(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let vr = call.param("vr").as_str().map(str::to_string);
    if let Some(name) = &vr {
        ctx.node.vr_named(name).ok_or_else(|| ApiError::not_found("vr", format!("no VR named {name:?}")))?;
    }
    let counters = metrics::families(&stats::snapshot(&ctx.node));
    let rates = ctx.rates.latest();
    let interval = rates.iter().find(|f| f.name == "pearl_rate_interval_seconds").and_then(|f| f.samples.first()).map_or(0.0, |s| s.value);
    let mut errors = Vec::new();
    for &(name, why) in COUNTED {
        let Some(family) = counters.iter().find(|f| f.name == name) else { continue };
        let per_second = rates_of(&rates, &name.replace("_total", "_per_second"));
        for s in &family.samples {
            let label = |k: &str| s.labels.iter().find(|(l, _)| *l == k).map(|(_, v)| v.clone());
            if vr.is_some() && label("vr") != vr {
                continue;
            }
            let reason = label(why).unwrap_or_default();
            errors.push(ErrorCount {
                stage: stage(name, &reason).into(),
                metric: name.into(),
                port: label("port"),
                vr: label("vr"),
                worker: label("worker"),
                count: s.value as u64,
                per_second: per_second.get(&s.labels[..]).copied(),
                reason,
            });
        }
    }
    Ok(Response::json(200, &Errors { vr, interval_seconds: interval, errors }))
}

fn rates_of<'a>(rates: &'a [Family], gauge: &str) -> HashMap<&'a [(&'static str, String)], f64> {
    let samples = rates.iter().find(|f| f.name == gauge).map_or(&[][..], |f| &f.samples[..]);
    samples.iter().map(|s: &'a Sample| (&s.labels[..], s.value)).collect()
}

/// Where in the pipeline a counter's packets were lost or diverted.
fn stage(metric: &str, reason: &str) -> &'static str {
    match (metric, reason) {
        (_, r) if r.contains("offload") => "offload",
        (_, r) if r.starts_with("malformed") => "extract",
        ("pearl_port_drops_total", "unclaimed") => "classifier",
        ("pearl_port_drops_total", "tx_error") => "tx",
        ("pearl_port_drops_total", _) => "rx",
        ("pearl_vr_exceptions_total", _) => "program",
        ("pearl_vr_drops_total", "queue_full") => "queue",
        ("pearl_vr_drops_total", "slow_path_full" | "to_kernel" | "from_kernel") => "slow_path",
        ("pearl_vr_drops_total", _) => "program",
        ("pearl_vr_kernel_drops_total", _) => "kernel",
        (_, r) if r.contains("tx") => "tx",
        _ => "worker",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_counter_lands_in_its_stage() {
        assert_eq!(stage("pearl_port_drops_total", "malformed_ipv4_ihl"), "extract");
        assert_eq!(stage("pearl_worker_drops_total", "malformed"), "extract");
        assert_eq!(stage("pearl_port_drops_total", "unclaimed"), "classifier");
        assert_eq!(stage("pearl_port_drops_total", "rx_dropped"), "rx");
        assert_eq!(stage("pearl_port_drops_total", "tx_error"), "tx");
        assert_eq!(stage("pearl_vr_drops_total", "queue_full"), "queue");
        assert_eq!(stage("pearl_vr_drops_total", "to_kernel"), "slow_path");
        assert_eq!(stage("pearl_vr_exceptions_total", "ttl_expired"), "program");
        assert_eq!(stage("pearl_vr_kernel_drops_total", "IpInAddrErrors"), "kernel");
    }
}
