//! Token buckets: the rate limits of a port and of each VR on it.
//!
//! Tokens are bytes. The bucket is refilled once per batch from the caller's clock, never per
//! packet, and a packet may be sent whenever the bucket holds a positive balance; sending it
//! can push the balance below zero by less than one frame, and that debt is repaid before
//! anything else goes out. This "send then pay" rule means a frame larger than the burst still
//! leaves eventually, and over any interval `[t0, t1]` the bytes sent stay within
//! `rate * (t1 - t0) + burst + one frame`.

use super::rate::{RateLimit, CREDIT_PER_BYTE};
use super::shared_credit::SharedCredit;
use std::sync::Arc;

/// A token bucket in bytes, refilled from a monotonic nanosecond clock supplied by the caller.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    limit: RateLimit,
    /// Bytes that may still be sent; negative while a sent frame's debt is being repaid.
    tokens: i64,
    /// Credit smaller than one byte left over from the last refill.
    carry: u128,
    /// `None` until the first refill: the bucket starts full and the clock starts then.
    last_ns: Option<u64>,
    /// Where a bucket shared by several workers takes its bytes from instead of the clock.
    source: Option<Arc<SharedCredit>>,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(limit: RateLimit) -> TokenBucket {
        TokenBucket { limit, tokens: burst_of(limit), carry: 0, last_ns: None, source: None }
    }

    /// An empty bucket that takes its bytes from `source`, a quantum at a time, whenever it
    /// has spent what it holds.
    pub fn shared(source: Arc<SharedCredit>) -> TokenBucket {
        TokenBucket { limit: source.limit(), tokens: 0, carry: 0, last_ns: None, source: Some(source) }
    }

    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Credits the time since the previous refill. A clock that goes backwards credits
    /// nothing rather than corrupting the balance.
    pub fn refill(&mut self, now_ns: u64) {
        if let Some(source) = &self.source {
            // Only a bucket that has spent what it holds touches the shared credit.
            if self.tokens > 0 {
                return;
            }
            source.refill(now_ns);
            while self.tokens <= 0 {
                match source.take() {
                    0 => break,
                    n => self.tokens += n,
                }
            }
            return;
        }
        let Some(last) = self.last_ns else {
            self.last_ns = Some(now_ns);
            return;
        };
        if now_ns <= last {
            return;
        }
        self.last_ns = Some(now_ns);
        let credit = u128::from(now_ns - last) * u128::from(self.limit.bits_per_second) + self.carry;
        let bytes = credit / CREDIT_PER_BYTE;
        let burst = burst_of(self.limit);
        // `tokens <= burst` always holds, so `room` is not negative.
        let room = (burst - self.tokens) as u128;
        if bytes >= room {
            // A full bucket discards the surplus, fractions included.
            self.tokens = burst;
            self.carry = 0;
        } else {
            self.tokens += bytes as i64;
            self.carry = credit % CREDIT_PER_BYTE;
        }
    }

    /// Whether a packet may be sent now (of any size: see the module comment).
    #[inline]
    pub fn has_tokens(&self) -> bool {
        self.tokens > 0
    }

    /// Charges a sent packet.
    #[inline]
    pub fn consume(&mut self, bytes: u32) {
        self.tokens -= i64::from(bytes);
    }

    /// Changes the rate and burst. The time since the last refill is first credited at the old
    /// rate, so the change applies from `now_ns` on; a balance above the new burst is cut. A
    /// shared bucket becomes this scheduler's own.
    pub fn set_limit(&mut self, limit: RateLimit, now_ns: u64) {
        self.refill(now_ns);
        if self.source.take().is_some() {
            self.last_ns = Some(now_ns);
        }
        self.limit = limit;
        self.tokens = self.tokens.min(burst_of(limit));
    }
}

fn burst_of(limit: RateLimit) -> i64 {
    i64::try_from(limit.burst_bytes).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::rate::{MIN_DEFAULT_BURST_BYTES, NANOS_PER_SECOND};
    use super::*;

    /// Drains the bucket in `frame`-byte packets, as the scheduler would at one instant.
    fn drain(b: &mut TokenBucket, frame: u32) -> u64 {
        let mut sent = 0;
        while b.has_tokens() {
            b.consume(frame);
            sent += u64::from(frame);
        }
        sent
    }

    #[test]
    fn starts_full_and_sends_the_burst() {
        let mut b = TokenBucket::new(RateLimit::with_burst(8_000, 1_000));
        b.refill(0);
        assert_eq!(drain(&mut b, 100), 1_000);
    }

    #[test]
    fn refill_is_exact_over_many_small_steps() {
        // 1.234567 bits per 1 µs step: without the carry every step would round to 0 bytes.
        let mut b = TokenBucket::new(RateLimit::with_burst(1_234_567, 10_000));
        b.refill(0);
        drain(&mut b, 10_000);
        let mut sent = 0;
        for t in 1..=1_000_000u64 {
            b.refill(t * 1_000);
            sent += drain(&mut b, 1);
        }
        assert_eq!(sent, 1_234_567 / 8);
    }

    #[test]
    fn idle_time_is_capped_at_the_burst() {
        let mut b = TokenBucket::new(RateLimit::with_burst(1_000_000_000, 1_500));
        b.refill(0);
        drain(&mut b, 1_500);
        b.refill(3_600 * NANOS_PER_SECOND as u64);
        assert_eq!(drain(&mut b, 1), 1_500);
    }

    #[test]
    fn a_frame_larger_than_the_burst_goes_out_and_is_repaid() {
        let mut b = TokenBucket::new(RateLimit::with_burst(8_000, 100));
        b.refill(0);
        assert!(b.has_tokens());
        b.consume(1_000);
        b.refill(NANOS_PER_SECOND as u64 / 2); // 500 bytes of credit: still 400 in debt
        assert!(!b.has_tokens());
        b.refill(NANOS_PER_SECOND as u64); // debt repaid, 100 to spare (the burst)
        assert!(b.has_tokens());
    }

    #[test]
    fn a_backwards_clock_credits_nothing() {
        let mut b = TokenBucket::new(RateLimit::with_burst(8_000_000, 1_000));
        b.refill(1_000_000);
        drain(&mut b, 1_000);
        b.refill(0);
        assert!(!b.has_tokens());
    }

    #[test]
    fn default_burst_is_a_millisecond_but_at_least_a_batch() {
        assert_eq!(RateLimit::new(10_000_000_000).burst_bytes, 1_250_000);
        assert_eq!(RateLimit::new(100_000_000).burst_bytes, MIN_DEFAULT_BURST_BYTES);
    }

    #[test]
    fn a_new_limit_applies_from_the_change_on() {
        let mut b = TokenBucket::new(RateLimit::with_burst(8_000, 10_000));
        b.refill(0);
        drain(&mut b, 10_000);
        // 1 s at 1000 B/s, then 1 s at 3000 B/s.
        b.set_limit(RateLimit::with_burst(24_000, 10_000), NANOS_PER_SECOND as u64);
        b.refill(2 * NANOS_PER_SECOND as u64);
        assert_eq!(drain(&mut b, 1), 4_000);
    }
}
