//! Timing helpers and the one-JSON-object-per-figure output every benchmark shares.

use serde_json::{Map, Value};

/// Median of a non-empty sample.
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// One figure: the fields every benchmark prints, plus any extras.
pub struct Figure {
    fields: Map<String, Value>,
}

impl Figure {
    pub fn new(bench: &str) -> Figure {
        let mut fields = Map::new();
        fields.insert("bench".into(), bench.into());
        Figure { fields }
    }

    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Figure {
        self.fields.insert(key.into(), value.into());
        self
    }

    /// Sets `ops`, `ns_per_op` and `mops` from a median time per run of `ops` operations.
    pub fn rate(self, ops: u64, median_secs: f64) -> Figure {
        let ns = median_secs * 1e9 / ops as f64;
        self.set("ops", ops).set("ns_per_op", round3(ns)).set("mops", round3(1e3 / ns))
    }

    /// Prints the figure as one line; a closed pipe (`| head`) is not an error worth a panic.
    pub fn print(self) {
        use std::io::Write;
        let _ = writeln!(std::io::stdout().lock(), "{}", Value::Object(self.fields));
    }
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
