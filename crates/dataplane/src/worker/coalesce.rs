//! Adaptive receive coalescing for ports that trickle (AF_XDP in copy mode hands frames over as
//! the kernel copies them, so a worker polling flat out finds one or two per round and pays a
//! round, and a `sendto`, for each). After a round that emptied its rings, the worker pauses for
//! as long as the recent receive rate takes to bring `TARGET_FRAMES` more, like a NIC's
//! adaptive interrupt moderation: the busier the ports, the shorter the pause, and never longer
//! than `MAX_PAUSE_NS`. Below `MIN_RATE_PPS` nothing is gained worth a pause, so none is taken
//! and light traffic keeps the lowest latency.

use std::time::Duration;

/// Frames the next round should find waiting.
const TARGET_FRAMES: f64 = 128.0;
/// The longest pause, which is also the most latency coalescing adds to a frame.
const MAX_PAUSE_NS: f64 = 100_000.0;
/// Below this receive rate a round never pauses.
const MIN_RATE_PPS: f64 = 50_000.0;
/// How often the rate estimate is renewed.
const WINDOW_NS: u64 = 1_000_000;

#[derive(Default)]
pub struct RxCoalescer {
    window_start_ns: u64,
    window_frames: u64,
    /// Frames per nanosecond over the last complete window.
    rate: f64,
}

impl RxCoalescer {
    /// Records a round that took `received` frames, finishing at `now_ns`; `drained` is true
    /// when no port filled its batch (a full one likely left more waiting). Returns the pause
    /// to take before the next round, if any.
    pub fn after_round(&mut self, now_ns: u64, received: usize, drained: bool) -> Option<Duration> {
        self.window_frames += received as u64;
        let elapsed = now_ns.saturating_sub(self.window_start_ns);
        if elapsed >= WINDOW_NS {
            self.rate = self.window_frames as f64 / elapsed as f64;
            self.window_start_ns = now_ns;
            self.window_frames = 0;
        }
        if received == 0 || !drained || self.rate * 1e9 < MIN_RATE_PPS {
            return None;
        }
        let pause_ns = (TARGET_FRAMES / self.rate).min(MAX_PAUSE_NS);
        Some(Duration::from_nanos(pause_ns as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds 3 ms of rounds of `per_round` frames every `round_ns`, returning the last answer.
    fn steady(c: &mut RxCoalescer, per_round: usize, round_ns: u64, drained: bool) -> Option<Duration> {
        let mut answer = None;
        for i in 1..=3_000_000 / round_ns {
            answer = c.after_round(i * round_ns, per_round, drained);
        }
        answer
    }

    #[test]
    fn the_pause_is_the_time_a_target_batch_takes_at_the_recent_rate() {
        // 16 frames every 8 µs: 2 Mpps, so 128 frames take 64 µs.
        let pause = steady(&mut RxCoalescer::default(), 16, 8_000, true).expect("a pause at 2 Mpps");
        assert!((63_000..=65_000).contains(&pause.as_nanos()), "{pause:?}");
    }

    #[test]
    fn slower_traffic_pauses_longer_but_never_beyond_the_cap() {
        // 200 kpps: 128 frames would take 640 µs.
        let pause = steady(&mut RxCoalescer::default(), 2, 10_000, true).expect("a pause at 200 kpps");
        assert_eq!(pause.as_nanos(), MAX_PAUSE_NS as u128);
    }

    #[test]
    fn light_traffic_and_full_batches_never_pause() {
        assert_eq!(steady(&mut RxCoalescer::default(), 1, 100_000, true), None, "10 kpps keeps its latency");
        assert_eq!(steady(&mut RxCoalescer::default(), 32, 10_000, false), None, "frames are still waiting");
        let mut c = RxCoalescer::default();
        steady(&mut c, 8, 8_000, true);
        assert_eq!(c.after_round(3_008_000, 0, true), None, "nothing came: the worker goes idle instead");
    }
}
