//! A rate shared by several workers' schedulers.
//!
//! Each worker schedules its own traffic, so a rate split evenly over N workers gave a VR whose
//! traffic is one flow (hashed to one worker) 1/N of its rate. Instead the workers' buckets
//! for one cap draw on one `SharedCredit`: it is refilled from the clock by whichever worker
//! comes first (one compare-and-swap of the refill time), and a worker's bucket, once it has
//! spent what it holds, takes another `quantum` from it — an atomic operation per quantum, not
//! per packet. Over any interval the bytes sent by all workers stay within
//! `rate * t + burst + workers * (quantum + one frame)`: each worker may hold one quantum it
//! has not spent yet.

use super::rate::{RateLimit, CREDIT_PER_BYTE};
use crate::packet::BUF_SIZE;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// `last_ns` before the first refill: the credit starts full and its clock starts then.
const UNSTARTED: u64 = u64::MAX;

#[derive(Debug)]
pub struct SharedCredit {
    limit: RateLimit,
    quantum: i64,
    /// Bytes the workers may still take; negative never (takes are capped at what is there).
    tokens: AtomicI64,
    last_ns: AtomicU64,
}

impl SharedCredit {
    /// A full credit of `limit`'s burst, taken from in quanta of the burst split over
    /// `workers` (at least one packet buffer).
    pub fn new(limit: RateLimit, workers: usize) -> SharedCredit {
        let burst = i64::try_from(limit.burst_bytes).unwrap_or(i64::MAX);
        let quantum = (burst / workers.max(1) as i64).max(BUF_SIZE as i64);
        SharedCredit { limit, quantum, tokens: AtomicI64::new(burst), last_ns: AtomicU64::new(UNSTARTED) }
    }

    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Credits the time since the last refill, once whichever worker calls first. The clock is
    /// advanced by the time the whole bytes credited took, so fractions carry over.
    pub fn refill(&self, now_ns: u64) {
        let last = self.last_ns.load(Ordering::Relaxed);
        if last == UNSTARTED {
            let _ = self.last_ns.compare_exchange(UNSTARTED, now_ns, Ordering::Relaxed, Ordering::Relaxed);
            return;
        }
        if now_ns <= last || self.limit.bits_per_second == 0 {
            return;
        }
        let bps = u128::from(self.limit.bits_per_second);
        let burst = u128::from(self.limit.burst_bytes);
        let credit = u128::from(now_ns - last) * bps;
        let bytes = credit / CREDIT_PER_BYTE;
        if bytes == 0 {
            return;
        }
        // A long idle time credits at most a burst; the clock then starts over from now.
        let next = if bytes >= burst { now_ns } else { last + (bytes * CREDIT_PER_BYTE).div_ceil(bps) as u64 };
        if self.last_ns.compare_exchange(last, next, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return; // another worker credited this time
        }
        let cap = burst.min(i64::MAX as u128) as i64;
        let add = bytes.min(burst) as i64;
        let _ = self.tokens.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| Some((t + add).min(cap)));
    }

    /// Takes up to a quantum; returns the bytes taken (0 when nothing is left).
    pub fn take(&self) -> i64 {
        match self.tokens.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| (t > 0).then(|| t - t.min(self.quantum))) {
            Ok(before) => before.min(self.quantum),
            Err(_) => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_full_and_hands_out_quanta_until_empty() {
        let c = SharedCredit::new(RateLimit::with_burst(8_000_000, 10 * BUF_SIZE as u64), 2);
        let mut taken = 0;
        let mut takes = 0;
        loop {
            let t = c.take();
            if t == 0 {
                break;
            }
            taken += t;
            takes += 1;
        }
        assert_eq!((taken, takes), (10 * BUF_SIZE as i64, 2));
    }

    #[test]
    fn refills_at_the_rate_whoever_calls_and_however_often() {
        // 8 Mb/s: 1,000 bytes per ms. Two callers refill every 1 µs, interleaved.
        let c = SharedCredit::new(RateLimit::with_burst(8_000_000, 1_000_000), 2);
        while c.take() > 0 {}
        c.refill(0);
        let mut taken = 0;
        for t in 1..=1_000_000u64 {
            c.refill(t * 1_000);
            c.refill(t * 1_000);
            if t % 1_000 == 0 {
                while let n @ 1.. = c.take() {
                    taken += n;
                }
            }
        }
        assert_eq!(taken, 1_000_000, "one second at 1,000,000 B/s");
    }

    #[test]
    fn idle_time_credits_at_most_the_burst() {
        let c = SharedCredit::new(RateLimit::with_burst(8_000_000_000, 4 * BUF_SIZE as u64), 1);
        while c.take() > 0 {}
        c.refill(0);
        c.refill(3_600_000_000_000);
        let mut taken = 0;
        while let n @ 1.. = c.take() {
            taken += n;
        }
        assert_eq!(taken, 4 * BUF_SIZE as i64);
    }
}
