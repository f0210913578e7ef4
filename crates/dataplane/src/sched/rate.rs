//! A rate limit, the one value the port's token bucket and a VR's credit shared across workers
//! both take (apart from either, so that neither imports the other for it).

use crate::packet::BUF_SIZE;

pub(super) const NANOS_PER_SECOND: u128 = 1_000_000_000;
/// Refill credit is kept in bit-nanoseconds-per-second units (elapsed ns × bits/s), so that
/// fractions of a byte carry over to the next refill and no rate drifts by rounding.
pub(super) const CREDIT_PER_BYTE: u128 = 8 * NANOS_PER_SECOND;

/// The default burst lasts this long at the configured rate: a worker that misses a few polls
/// (preempted, a slow batch elsewhere) catches up instead of losing the time for good.
pub const DEFAULT_BURST_NS: u64 = 1_000_000;
/// The default burst is never smaller than one rx batch (32 frames) of full-size buffers, so a
/// slow link still sends whole batches.
pub const MIN_DEFAULT_BURST_BYTES: u64 = 32 * BUF_SIZE as u64;

/// A rate and how far above it a short burst may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    pub bits_per_second: u64,
    pub burst_bytes: u64,
}

impl RateLimit {
    /// `bits_per_second` with the default burst: [`DEFAULT_BURST_NS`] worth of traffic, at
    /// least [`MIN_DEFAULT_BURST_BYTES`].
    pub fn new(bits_per_second: u64) -> RateLimit {
        let burst = u128::from(bits_per_second) * u128::from(DEFAULT_BURST_NS) / CREDIT_PER_BYTE;
        let burst_bytes = u64::try_from(burst).unwrap_or(u64::MAX).max(MIN_DEFAULT_BURST_BYTES);
        RateLimit { bits_per_second, burst_bytes }
    }

    pub fn with_burst(bits_per_second: u64, burst_bytes: u64) -> RateLimit {
        RateLimit { bits_per_second, burst_bytes }
    }
}
