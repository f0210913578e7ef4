//! `GET /v1/errors`: every drop and exception counter, by pipeline stage and reason, with its
//! rate; the metric and its labels as `/metrics` names them.

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Errors {
    /// the VR asked for; null: the whole node
    pub vr: Option<String>,
    /// seconds the rates were measured over (the `/metrics` sampler's interval)
    pub interval_seconds: f64,
    pub errors: Vec<ErrorCount>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorCount {
    /// where in the pipeline: rx, extract, classifier, program, slow_path, queue, tx, worker,
    /// kernel (the VR's own kernel) or offload
    pub stage: String,
    /// the `/metrics` family counting it, e.g. pearl_port_drops_total
    pub metric: String,
    /// its `reason` (or, for the VR's kernel, `counter`) label
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    pub count: u64,
    /// over the last interval; null until the sampler has two samplings
    pub per_second: Option<f64>,
}
