//! When routed's next batch may run: a cell-rate rule over the cost of batches.
//!
//! Each batch books its cost and [`PACE`] times its cost again (at most [`MAX_GAP`]) of wall
//! time on a virtual clock; a batch may run once the clock is less than [`BURST`] ahead of now.
//! Under a steady stream of changes each batch is followed by a gap of eight times its cost, so
//! batches grow with the load and their fixed costs (rebuilding the trie's root, publishing) are
//! paid rarely; after a quiet spell a few changes in a row (a host's first packets resolving two neighbours) are each
//! applied as soon as they are read, instead of the second waiting out the first one's gap.

use std::time::{Duration, Instant};

/// A batch is followed by a gap of this many times its cost.
pub const PACE: u32 = 8;
/// The longest gap one batch books, so one very costly batch never delays the next by more.
pub const MAX_GAP: Duration = Duration::from_millis(50);
/// How far ahead of now the virtual clock may run before batches wait.
pub const BURST: Duration = Duration::from_millis(50);

pub struct Pacer {
    /// Where the booked time ends.
    booked_until: Instant,
}

impl Pacer {
    pub fn new(now: Instant) -> Pacer {
        Pacer { booked_until: now }
    }

    /// The earliest time the next batch may run.
    pub fn due(&self) -> Instant {
        self.booked_until.checked_sub(BURST).unwrap_or(self.booked_until)
    }

    /// Books a batch that began at `start` and took `cost`.
    pub fn spent(&mut self, start: Instant, cost: Duration) {
        self.booked_until = self.booked_until.max(start) + cost + (cost * PACE).min(MAX_GAP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn after_a_quiet_spell_a_few_batches_run_at_once() {
        let t0 = Instant::now() + Duration::from_secs(1);
        let mut p = Pacer::new(t0);
        let mut now = t0;
        for _ in 0..3 {
            assert!(p.due() <= now, "a change after a quiet spell waits for nothing");
            p.spent(now, MS);
            now += MS;
        }
    }

    #[test]
    fn a_steady_stream_spends_at_most_a_ninth_of_the_time_beyond_the_burst() {
        let t0 = Instant::now() + Duration::from_secs(1);
        let mut p = Pacer::new(t0);
        let (mut now, mut busy) = (t0, Duration::ZERO);
        let cost = 3 * MS;
        // Every batch runs as soon as it is due, for ten seconds.
        while now < t0 + Duration::from_secs(10) {
            now = now.max(p.due());
            p.spent(now, cost);
            now += cost;
            busy += cost;
        }
        let allowed = (now - t0 + BURST) / (PACE + 1);
        assert!(busy <= allowed + cost, "busy {busy:?} of {:?}", now - t0);
        assert!(busy * 10 >= allowed * 9, "the pace is not slower than it should be: {busy:?}");
    }

    #[test]
    fn a_costly_batch_delays_the_next_by_at_most_max_gap() {
        let t0 = Instant::now() + Duration::from_secs(1);
        let mut p = Pacer::new(t0);
        let mut now = t0;
        for _ in 0..20 {
            let start = now.max(p.due());
            p.spent(start, Duration::from_secs(2));
            now = start + Duration::from_secs(2);
            assert!(p.due() <= now + MAX_GAP);
        }
    }
}
