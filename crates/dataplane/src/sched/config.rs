//! What a port's scheduler is built from, and the checks that config must pass first.

use super::rate::RateLimit;
use std::fmt;

/// One port's output scheduler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSchedConfig {
    /// The port's own cap; `None` sends as fast as the caller dequeues.
    pub rate: Option<RateLimit>,
    /// The VRs sending out of this port; their order fixes the [`VrClassId`](super::VrClassId)s.
    pub vrs: Vec<VrClassConfig>,
}

/// One VR's share of a port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VrClassConfig {
    /// The VR's cap on this port; `None` limits it by its weights only.
    pub rate: Option<RateLimit>,
    /// The VR's weight against the other VRs; `None` makes it the sum of its queues' weights.
    /// Either way its queues' weights split what the VR gets among themselves.
    pub share: Option<u32>,
    /// At least one.
    pub queues: Vec<QueueConfig>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueConfig {
    /// Relative share of the port's bandwidth; at least 1.
    pub weight: u32,
    /// Capacity in packets; at least 1. Arrivals beyond it are tail-dropped.
    pub length: usize,
}

/// A rejected setting, naming the field the way the daemon's config errors do
/// (`vrs[1].queues[0].weight: must be at least 1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedConfigError {
    pub field: String,
    pub reason: &'static str,
}

impl fmt::Display for SchedConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for SchedConfigError {}

impl PortSchedConfig {
    /// Checks every field, so that a scheduler is never half-built.
    pub fn validate(&self) -> Result<(), SchedConfigError> {
        check_rate(self.rate.as_ref(), || "rate".to_string())?;
        for (v, vr) in self.vrs.iter().enumerate() {
            check_rate(vr.rate.as_ref(), || format!("vrs[{v}].rate"))?;
            if let Some(share) = vr.share {
                check_weight(share, || format!("vrs[{v}].share"))?;
            }
            if vr.queues.is_empty() {
                return Err(SchedConfigError { field: format!("vrs[{v}].queues"), reason: "needs at least one queue" });
            }
            for (q, queue) in vr.queues.iter().enumerate() {
                check_weight(queue.weight, || format!("vrs[{v}].queues[{q}].weight"))?;
                if queue.length == 0 {
                    return Err(SchedConfigError { field: format!("vrs[{v}].queues[{q}].length"), reason: "must be at least 1" });
                }
            }
        }
        Ok(())
    }
}

pub(super) fn check_weight(weight: u32, field: impl FnOnce() -> String) -> Result<(), SchedConfigError> {
    if weight == 0 {
        return Err(SchedConfigError { field: field(), reason: "must be at least 1" });
    }
    Ok(())
}

/// A zero rate or burst would hold a queue's packets forever; to stop a VR, remove it instead.
pub(super) fn check_rate(rate: Option<&RateLimit>, field: impl Fn() -> String) -> Result<(), SchedConfigError> {
    let Some(rate) = rate else { return Ok(()) };
    if rate.bits_per_second == 0 {
        return Err(SchedConfigError { field: field() + ".bits_per_second", reason: "must be at least 1" });
    }
    if rate.burst_bytes == 0 {
        return Err(SchedConfigError { field: field() + ".burst_bytes", reason: "must be at least 1" });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_vr(queues: Vec<QueueConfig>) -> PortSchedConfig {
        PortSchedConfig { rate: None, vrs: vec![VrClassConfig { rate: None, share: None, queues }] }
    }

    #[test]
    fn errors_name_the_field() {
        let q = QueueConfig { weight: 1, length: 8 };
        let mut c = one_vr(vec![q, QueueConfig { weight: 0, length: 8 }]);
        assert_eq!(c.validate().unwrap_err().to_string(), "vrs[0].queues[1].weight: must be at least 1");
        c = one_vr(vec![QueueConfig { weight: 1, length: 0 }]);
        assert_eq!(c.validate().unwrap_err().field, "vrs[0].queues[0].length");
        c = one_vr(vec![]);
        assert_eq!(c.validate().unwrap_err().field, "vrs[0].queues");
        c = one_vr(vec![q]);
        c.vrs[0].rate = Some(RateLimit::new(0));
        assert_eq!(c.validate().unwrap_err().field, "vrs[0].rate.bits_per_second");
        c.vrs[0].rate = None;
        c.rate = Some(RateLimit::with_burst(1_000, 0));
        assert_eq!(c.validate().unwrap_err().field, "rate.burst_bytes");
        c.rate = Some(RateLimit::new(1_000));
        assert_eq!(c.validate(), Ok(()));
        c.vrs[0].share = Some(0);
        assert_eq!(c.validate().unwrap_err().to_string(), "vrs[0].share: must be at least 1");
    }
}
