//! `impair:` of a VR interface: what the link out of it does to packets, as a lab's emulated
//! link would (netem's delay, jitter, loss, duplication and rate, applied in PEARL's fast path
//! output, since netem is not on every kernel).
//!
//! ```yaml
//! interfaces:
//!   - {name: eth0, port: p0, mac: "02:00:00:00:01:00", impair: {delay_ms: 20, jitter_ms: 5, loss_percent: 1}}
//! ```

use crate::at::At;
use crate::error::ConfigError;
use crate::grammar::ImpairSpec;

/// Parameters of an impaired link; every field at zero (or absent) does nothing.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Impairment {
    /// Added to every packet's time on the link.
    pub delay_ns: u64,
    /// The delay varies uniformly within ± this (never below zero), so packets may overtake
    /// one another, as with netem.
    pub jitter_ns: u64,
    /// Chance that a packet is lost, 0..=1.
    pub loss: f64,
    /// Chance that a packet is sent twice, 0..=1.
    pub duplicate: f64,
    /// The link's rate in bits per second; `None`: as fast as the port.
    pub rate_bps: Option<u64>,
}

impl Eq for Impairment {}

const MAX_DELAY_MS: f64 = 10_000.0;
const KEYS: &[&str] = &["delay_ms", "jitter_ms", "loss_percent", "duplicate_percent", "rate_mbps"];

impl Impairment {
    /// Whether it changes nothing.
    pub fn is_none(&self) -> bool {
        *self == Impairment::default()
    }

    /// Sets one parameter by its configuration name (`delay_ms`, …) from a number; `field` names
    /// it in the error.
    pub fn set(&mut self, key: &str, value: f64, field: &str) -> Result<(), ConfigError> {
        let refuse = |why: String| ConfigError::at(field, why);
        if !value.is_finite() || value < 0.0 {
            return Err(refuse(format!("{value} is not a number of at least 0")));
        }
        let ms = |v: f64| -> Result<u64, ConfigError> {
            if v > MAX_DELAY_MS {
                return Err(refuse(format!("{v} ms is above the most a link may hold a packet ({MAX_DELAY_MS} ms)")));
            }
            Ok((v * 1e6).round() as u64)
        };
        let percent = |v: f64| -> Result<f64, ConfigError> {
            if v > 100.0 {
                return Err(refuse(format!("{v} is above 100 %")));
            }
            Ok(v / 100.0)
        };
        match key {
            "delay_ms" => self.delay_ns = ms(value)?,
            "jitter_ms" => self.jitter_ns = ms(value)?,
            "loss_percent" => self.loss = percent(value)?,
            "duplicate_percent" => self.duplicate = percent(value)?,
            "rate_mbps" => {
                if value == 0.0 {
                    return Err(refuse("a link's rate must be above 0 (leave it out for the port's)".to_string()));
                }
                self.rate_bps = Some((value * 1e6).round().max(1.0) as u64);
            }
            other => return Err(refuse(format!("unknown impairment {other:?} (expected one of: {})", KEYS.join(", ")))),
        }
        Ok(())
    }

    /// As the configuration writes it: the fields that are set.
    pub fn to_fields(&self) -> Vec<(&'static str, f64)> {
        let mut fields = Vec::new();
        if self.delay_ns > 0 {
            fields.push(("delay_ms", self.delay_ns as f64 / 1e6));
        }
        if self.jitter_ns > 0 {
            fields.push(("jitter_ms", self.jitter_ns as f64 / 1e6));
        }
        if self.loss > 0.0 {
            fields.push(("loss_percent", self.loss * 100.0));
        }
        if self.duplicate > 0.0 {
            fields.push(("duplicate_percent", self.duplicate * 100.0));
        }
        if let Some(r) = self.rate_bps {
            fields.push(("rate_mbps", r as f64 / 1e6));
        }
        fields
    }
}

pub(crate) fn parse_impairment(spec: &ImpairSpec, at: At<'_>) -> Result<Impairment, ConfigError> {
    let mut imp = Impairment::default();
    let fields = [
        ("delay_ms", spec.delay_ms),
        ("jitter_ms", spec.jitter_ms),
        ("loss_percent", spec.loss_percent),
        ("duplicate_percent", spec.duplicate_percent),
        ("rate_mbps", spec.rate_mbps),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            imp.set(key, value, &at.key(key).to_string())?;
        }
    }
    Ok(imp)
}

#[cfg(test)]
mod tests {
    use crate::parse_config;

    fn with(impair: &str) -> String {
        format!(
            "ports: [{{name: p0, interface: pe0}}]\nvrs:\n  - name: red\n    interfaces:\n      - {{name: eth0, port: p0, mac: \"02:00:00:00:01:00\", impair: {impair}}}\n"
        )
    }

    #[test]
    fn parameters_are_read_in_their_units() {
        let c = parse_config(&with("{delay_ms: 20, jitter_ms: 2.5, loss_percent: 1, duplicate_percent: 0.5, rate_mbps: 10}")).unwrap();
        let i = c.vrs[0].interfaces[0].impair;
        assert_eq!((i.delay_ns, i.jitter_ns, i.rate_bps), (20_000_000, 2_500_000, Some(10_000_000)));
        assert!((i.loss - 0.01).abs() < 1e-12 && (i.duplicate - 0.005).abs() < 1e-12);
        assert_eq!(
            i.to_fields(),
            [("delay_ms", 20.0), ("jitter_ms", 2.5), ("loss_percent", 1.0), ("duplicate_percent", 0.5), ("rate_mbps", 10.0)]
        );
        let none = parse_config(&with("{}")).unwrap().vrs[0].interfaces[0].impair;
        assert!(none.is_none());
    }

    #[test]
    fn errors_name_the_field() {
        for (impair, want) in [
            ("{delay_ms: -1}", "vrs[0].interfaces[0].impair.delay_ms: -1 is not a number of at least 0"),
            ("{delay_ms: 20000}", "vrs[0].interfaces[0].impair.delay_ms: 20000 ms is above"),
            ("{loss_percent: 101}", "vrs[0].interfaces[0].impair.loss_percent: 101 is above 100 %"),
            ("{rate_mbps: 0}", "vrs[0].interfaces[0].impair.rate_mbps: a link's rate must be above 0"),
            ("{delay_ms: 20ms}", "vrs[0].interfaces[0].impair.delay_ms: expected a number"),
            ("{latency_ms: 20}", "vrs[0].interfaces[0].impair.latency_ms: unknown field"),
            ("20", "vrs[0].interfaces[0].impair: expected a mapping"),
        ] {
            let got = parse_config(&with(impair)).expect_err(impair).to_string();
            assert!(got.starts_with(want), "{impair}\nwant {want:?}\n got {got:?}");
        }
    }
}
