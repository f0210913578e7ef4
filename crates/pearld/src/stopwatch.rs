//! Where a run-time change spends its time, phase by phase, for the debug log: API latency
//! with thousands of VRs is a sum of phases whose shares move with N, and this says which.

use std::time::{Duration, Instant};

pub struct Stopwatch {
    last: Instant,
    started: Instant,
    laps: Vec<(&'static str, Duration)>,
}

impl Stopwatch {
    pub fn start() -> Stopwatch {
        let now = Instant::now();
        Stopwatch { last: now, started: now, laps: Vec::with_capacity(12) }
    }

    /// Ends the phase called `name`.
    pub fn lap(&mut self, name: &'static str) {
        let now = Instant::now();
        self.laps.push((name, now - self.last));
        self.last = now;
    }

    /// "T ms (phase t ms, …)", written only when the log asks for it.
    pub fn summary(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let laps: Vec<String> = self.laps.iter().map(|(name, d)| format!("{name} {:.1} ms", ms(*d))).collect();
        format!("{:.1} ms ({})", ms(self.started.elapsed()), laps.join(", "))
    }
}
