//! A VR's share of the classifier: its rules and the most it may hold.

use crate::rule::RuleId;
use std::collections::BTreeSet;

#[derive(Debug, Clone, Default)]
pub(crate) struct Partition {
    /// `None` until the resource manager grants a quota: unlimited.
    pub quota: Option<usize>,
    pub rules: BTreeSet<RuleId>,
}

impl Partition {
    pub fn is_full(&self) -> bool {
        self.quota.is_some_and(|q| self.rules.len() >= q)
    }
}
