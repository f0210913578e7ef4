//! Rules grouped by priority, to find the rules a new one could tie with.
//!
//! Two rules of different VRs that share a priority and a matching key would make a TCAM's
//! answer (and so the frame's VR) depend on insertion order, so the classifier refuses them.
//! Within one priority, rules are grouped by mask and hashed on their value: when a group's
//! mask is covered by the new rule's mask, the only rules it can overlap are those with the
//! new value projected on that mask, a single hash lookup. Other groups are scanned; real
//! configurations put few masks at one priority, so those scans stay short.

use crate::hash_mask::covered_by;
use crate::rule::{Rule, RuleId, VrId};
use pearl_wire::flow_key::FlowKey;
use std::collections::HashMap;

#[derive(Debug, Clone, Default)]
pub(crate) struct SamePriorityIndex {
    levels: HashMap<u32, Vec<MaskGroup>>,
}

#[derive(Debug, Clone)]
struct MaskGroup {
    mask: FlowKey,
    by_value: HashMap<FlowKey, Vec<(RuleId, VrId)>>,
}

impl SamePriorityIndex {
    /// A rule of another VR than `rule`'s that has its priority and overlaps it.
    pub fn conflict(&self, rule: &Rule) -> Option<(RuleId, VrId)> {
        let groups = self.levels.get(&rule.priority)?;
        let other_vr = |&&(_, vr): &&(RuleId, VrId)| vr != rule.result.vr;
        for group in groups {
            if covered_by(&group.mask, &rule.mask) {
                let hit = group.by_value.get(&rule.value.masked(&group.mask));
                if let Some(found) = hit.and_then(|rules| rules.iter().find(other_vr)) {
                    return Some(*found);
                }
            } else {
                for (value, rules) in &group.by_value {
                    let probe = Rule { value: *value, mask: group.mask, ..*rule };
                    if probe.overlaps(rule) {
                        if let Some(found) = rules.iter().find(other_vr) {
                            return Some(*found);
                        }
                    }
                }
            }
        }
        None
    }

    pub fn insert(&mut self, id: RuleId, rule: &Rule) {
        let groups = self.levels.entry(rule.priority).or_default();
        let at = match groups.iter().position(|g| g.mask == rule.mask) {
            Some(at) => at,
            None => {
                groups.push(MaskGroup { mask: rule.mask, by_value: HashMap::new() });
                groups.len() - 1
            }
        };
        groups[at].by_value.entry(rule.value).or_default().push((id, rule.result.vr));
    }

    pub fn remove(&mut self, id: RuleId, rule: &Rule) {
        let Some(groups) = self.levels.get_mut(&rule.priority) else { return };
        if let Some(at) = groups.iter().position(|g| g.mask == rule.mask) {
            let by_value = &mut groups[at].by_value;
            if let Some(rules) = by_value.get_mut(&rule.value) {
                rules.retain(|&(r, _)| r != id);
                if rules.is_empty() {
                    by_value.remove(&rule.value);
                }
            }
            if by_value.is_empty() {
                groups.swap_remove(at);
            }
        }
        if groups.is_empty() {
            self.levels.remove(&rule.priority);
        }
    }
}
