//! The names the classifier gives VRs and the rules it installs.

/// A virtual router; each has its own partition of the classifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VrId(pub u16);

impl core::fmt::Display for VrId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "VR {}", self.0)
    }
}

/// Which of its VR's `match` rules an entry is, for a program that acts by the rule a frame
/// matched (`code: filter`); two bytes, so that a verdict stays eight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MatchIndex(core::num::NonZeroU16);

impl MatchIndex {
    /// Rule `index` of the VR's `match` list; none beyond the 65,535 a verdict can name.
    pub fn new(index: usize) -> Option<MatchIndex> {
        u16::try_from(index + 1).ok().and_then(core::num::NonZeroU16::new).map(MatchIndex)
    }

    pub fn index(self) -> usize {
        usize::from(self.0.get() - 1)
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

#[cfg(test)]
mod tests {
    use super::MatchIndex;

    #[test]
    fn a_match_index_names_each_of_65535_rules_and_no_more() {
        for i in [0, 7, 65_534] {
            assert_eq!(MatchIndex::new(i).map(MatchIndex::index), Some(i));
        }
        assert_eq!(MatchIndex::new(65_535), None);
        assert_eq!(core::mem::size_of::<Option<MatchIndex>>(), 2);
    }
}
