//! An interface's `impair:`: the fields that are set (none: the link is not impaired).

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct Impairment {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub delay_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub jitter_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub loss_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub duplicate_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub rate_mbps: Option<f64>,
}

impl From<&pearl_control::Impairment> for Impairment {
    fn from(impair: &pearl_control::Impairment) -> Impairment {
        let mut out = Impairment::default();
        for (name, value) in impair.to_fields() {
            let field = match name {
                "delay_ms" => &mut out.delay_ms,
                "jitter_ms" => &mut out.jitter_ms,
                "loss_percent" => &mut out.loss_percent,
                "duplicate_percent" => &mut out.duplicate_percent,
                "rate_mbps" => &mut out.rate_mbps,
                other => unreachable!("impair field {other} is not in the API's Impairment"),
            };
            *field = Some(value);
        }
        out
    }
}

// What `PUT /v1/vrs/{name}/interfaces/{interface}/impair` answers.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImpairReply {
    pub interface: String,
    pub impair: Impairment,
}
