//! Where a run-time change spends its time, phase by phase, for the debug log: API latency
//! with thousands of VRs is a sum of phases whose shares move with N, and this says which.

use std::fmt::Write;
use std::time::Instant;

pub struct Stopwatch {
    last: Instant,
    started: Instant,
    laps: String,
}

impl Stopwatch {
    pub fn start() -> Stopwatch {
        let now = Instant::now();
        Stopwatch { last: now, started: now, laps: String::new() }
    }

    /// Ends the phase called `name`.
    pub fn lap(&mut self, name: &str) {
        let now = Instant::now();
        let sep = if self.laps.is_empty() { "" } else { ", " };
        let _ = write!(self.laps, "{sep}{name} {:.1} ms", (now - self.last).as_secs_f64() * 1e3);
        self.last = now;
    }

    /// "T ms (phase t ms, …)".
    pub fn summary(&self) -> String {
        format!("{:.1} ms ({})", self.started.elapsed().as_secs_f64() * 1e3, self.laps)
    }
}
