//! Why the classifier refused a change; every variant names the field, rule or VR at fault.

use crate::ids::{RuleId, VrId};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassifierError {
    /// The rule's value has bits set where its mask is zero.
    ValueOutsideMask {
        field: &'static str,
    },
    /// The VR's partition already holds `quota` rules.
    QuotaExceeded {
        vr: VrId,
        quota: usize,
    },
    /// A new quota would be below what the partition already holds.
    QuotaBelowUsage {
        vr: VrId,
        quota: usize,
        used: usize,
    },
    /// Same priority and a common matching key as a rule of another VR: a TCAM could return
    /// either, so which VR owns such frames would be ambiguous.
    AmbiguousOverlap {
        vr: VrId,
        other: RuleId,
        other_vr: VrId,
        priority: u32,
    },
    UnknownRule(RuleId),
    /// Rule ids are exhausted (2^32 − 1 inserts over the classifier's life).
    OutOfRuleIds,
}

impl core::fmt::Display for ClassifierError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ClassifierError::ValueOutsideMask { field } => {
                write!(f, "rule value has bits outside its mask in field {field}")
            }
            ClassifierError::QuotaExceeded { vr, quota } => {
                write!(f, "{vr} has reached its quota of {quota} classifier rules")
            }
            ClassifierError::QuotaBelowUsage { vr, quota, used } => {
                write!(f, "quota {quota} for {vr} is below the {used} rules it holds")
            }
            ClassifierError::AmbiguousOverlap { vr, other, other_vr, priority } => {
                write!(f, "rule for {vr} overlaps {other} of {other_vr} at the same priority {priority}")
            }
            ClassifierError::UnknownRule(id) => write!(f, "no such rule: {id}"),
            ClassifierError::OutOfRuleIds => write!(f, "classifier rule ids exhausted"),
        }
    }
}

impl std::error::Error for ClassifierError {}
