//! How busy each VR is now, for listings sorted by `busiest`: packets received per second over
//! the last interval of at least a second. Only the reads that sort by it take samples, so a
//! node nobody asks spends nothing on it; a read within a second of the last sample ranks by
//! that sample's rates, and until a second sample exists VRs rank by what they received so far.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

const INTERVAL: Duration = Duration::from_secs(1);

#[derive(Default)]
pub struct Activity {
    last: Mutex<Option<Sample>>,
}

struct Sample {
    at: Instant,
    /// Packets received, by VR id.
    counts: Vec<u64>,
    /// What the VRs are ranked by, by VR id.
    ranks: Vec<f64>,
}

impl Activity {
    /// The rank of each VR of `ids` (higher: busier), in their order; `received(id)` reads a
    /// VR's packet counter.
    pub fn ranks(&self, ids: &[u16], received: impl Fn(u16) -> u64) -> Vec<f64> {
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let stale = last.as_ref().is_none_or(|s| now.duration_since(s.at) >= INTERVAL);
        if stale {
            let width = ids.iter().map(|&id| usize::from(id) + 1).max().unwrap_or(0);
            let mut counts = vec![0u64; width];
            for &id in ids {
                counts[usize::from(id)] = received(id);
            }
            let ranks = match last.as_ref() {
                Some(prev) => {
                    let seconds = now.duration_since(prev.at).as_secs_f64();
                    let before = |id: usize| prev.counts.get(id).copied().unwrap_or(0);
                    // A VR deleted and its id reused counts from zero again: no negative rate.
                    counts.iter().enumerate().map(|(id, &c)| c.saturating_sub(before(id)) as f64 / seconds).collect()
                }
                None => counts.iter().map(|&c| c as f64).collect(),
            };
            *last = Some(Sample { at: now, counts, ranks });
        }
        let ranks = &last.as_ref().expect("sampled above").ranks;
        ids.iter().map(|&id| ranks.get(usize::from(id)).copied().unwrap_or(0.0)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn the_first_sample_ranks_by_totals_and_later_ones_by_rates() {
        let a = Activity::default();
        let counts = Cell::new([1000u64, 10, 0]);
        let read = |id: u16| counts.get().get(usize::from(id)).copied().unwrap_or(0);
        assert_eq!(a.ranks(&[0, 1, 2], read), vec![1000.0, 10.0, 0.0]);
        counts.set([1000, 5000, 7]);
        // Within the interval, the sample stands.
        assert_eq!(a.ranks(&[2, 0], read), vec![0.0, 1000.0]);
        a.last.lock().unwrap().as_mut().unwrap().at -= INTERVAL * 2;
        let r = a.ranks(&[0, 1, 2, 9], read);
        assert_eq!(r[0], 0.0, "VR 0 received nothing more");
        assert!(r[1] > r[2] && r[2] > 0.0, "{r:?}");
        assert!((r[1] - 4990.0 / 2.0).abs() < 100.0, "{r:?}");
        assert_eq!(r[3], 0.0, "an id never sampled ranks last");
    }
}
