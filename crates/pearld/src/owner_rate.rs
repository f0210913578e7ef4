//! Each VR's token may make so many requests per second (`api.owner_requests_per_second`):
//! a token bucket per VR, refilled from the clock, so that one owner hammering the API is
//! answered 429 instead of taking the connections and handler time everyone else needs. The
//! admin token is not limited: it is the operator's.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

#[derive(Default)]
pub struct OwnerRates {
    buckets: Mutex<HashMap<String, Bucket>>,
}

/// The allowance as time: a second of it holds a burst of `rate` requests, and each request
/// spends `1 s / rate` (integers, so that nothing drifts by rounding).
struct Bucket {
    allowance_ns: u64,
    at: Instant,
}

const SECOND_NS: u64 = 1_000_000_000;

impl OwnerRates {
    /// Takes one request of VR `vr`'s allowance of `rate` per second (bursts of `rate`); false
    /// when it has none left.
    pub fn admit(&self, vr: &str, rate: u32) -> bool {
        self.admit_at(vr, rate, Instant::now())
    }

    fn admit_at(&self, vr: &str, rate: u32, now: Instant) -> bool {
        let cost = SECOND_NS / u64::from(rate.max(1));
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if !buckets.contains_key(vr) {
            buckets.insert(vr.to_string(), Bucket { allowance_ns: SECOND_NS, at: now });
        }
        let Some(b) = buckets.get_mut(vr) else { return true };
        let earned = u64::try_from(now.saturating_duration_since(b.at).as_nanos()).unwrap_or(u64::MAX);
        b.allowance_ns = b.allowance_ns.saturating_add(earned).min(SECOND_NS);
        b.at = now;
        if b.allowance_ns < cost {
            return false;
        }
        b.allowance_ns -= cost;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_of_the_rate_then_the_rate() {
        let r = OwnerRates::default();
        let t0 = Instant::now();
        assert_eq!((0..15).filter(|_| r.admit_at("red", 10, t0)).count(), 10, "a burst of one second's worth");
        let admitted = (1..=100).filter(|i| r.admit_at("red", 10, t0 + Duration::from_millis(10 * i))).count();
        assert_eq!(admitted, 10, "then 10 per second");
    }

    #[test]
    fn each_vr_has_its_own_allowance() {
        let r = OwnerRates::default();
        let t0 = Instant::now();
        while r.admit_at("red", 5, t0) {}
        assert!(r.admit_at("blue", 5, t0), "red's use leaves blue's alone");
    }
}
