//! The names the classifier gives VRs and the rules it installs.

/// A virtual router; each has its own partition of the classifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VrId(pub u16);

impl core::fmt::Display for VrId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "VR {}", self.0)
    }
}

/// Handle of an installed rule, issued by the classifier in increasing order; it breaks
/// priority ties (the lower id, i.e. the earlier installed rule, wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(pub u32);

impl core::fmt::Display for RuleId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "rule {}", self.0)
    }
}
