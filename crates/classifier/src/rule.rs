//! What a classifier entry is: a value/mask pair over the flow key, a priority and a verdict.

use crate::error::ClassifierError;
pub use crate::ids::{MatchIndex, RuleId, VrId};
use pearl_wire::flow_key::{Field, FlowKey};

/// What a match decides: the VR the frame belongs to, the action/queue id within it, and which
/// of the VR's `match` rules decided, where its program acts by that rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Verdict {
    pub vr: VrId,
    pub rule: Option<MatchIndex>,
    pub action: u32,
}

// Batches hold one per frame.
const _: () = assert!(core::mem::size_of::<Verdict>() == 8);

/// One TCAM entry: a key `k` matches when `k & mask == value`; the highest priority wins.
/// The rule belongs to the partition of `result.vr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rule {
    pub value: FlowKey,
    pub mask: FlowKey,
    pub priority: u32,
    pub result: Verdict,
}

impl Rule {
    /// Refuses a value with bits outside its mask: such a rule could never match, which is
    /// always a configuration mistake worth reporting by field.
    pub(crate) fn validate(&self) -> Result<(), ClassifierError> {
        let stray = FlowKey { words: core::array::from_fn(|i| self.value.words[i] & !self.mask.words[i]) };
        if stray == FlowKey::default() {
            return Ok(());
        }
        let field = Field::ALL.into_iter().find(|&f| stray.get(f) != 0).map_or("reserved bits", Field::name);
        Err(ClassifierError::ValueOutsideMask { field })
    }

    /// True when some key matches both rules.
    pub fn overlaps(&self, other: &Rule) -> bool {
        (0..FlowKey::WORDS).all(|i| (self.value.words[i] ^ other.value.words[i]) & self.mask.words[i] & other.mask.words[i] == 0)
    }

    pub fn matches(&self, key: &FlowKey) -> bool {
        key.matches(&self.value, &self.mask)
    }
}

/// Total order of precedence: priority first, then the lower rule id. Packing both into one
/// integer makes "better match" a single comparison on the lookup path; 0 means "no match".
pub(crate) fn rank(priority: u32, id: RuleId) -> u64 {
    (u64::from(priority) << 32) | u64::from(u32::MAX - id.0)
}
