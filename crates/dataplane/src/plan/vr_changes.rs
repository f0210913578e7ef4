//! Which VRs a change of configuration touches, as the data plane asks it: pearld hands the
//! data plane the whole configuration after every change, which with thousands of VRs is one
//! VR changed among thousands alike. A plan is made from the last one by rebuilding only what
//! belongs to the VRs of the change's `ConfigDiff`, so that creating a VR costs about as much
//! at 4,096 VRs as at 4; the plan's passes over every VR ask `touches` by id.

use crate::plan::MAX_VRS;
use pearl_control::{ConfigDiff, VrChange, VrConfig};
use std::sync::Arc;

/// A change's `ConfigDiff` with its VRs flagged by id.
pub struct VrChanges<'a> {
    diff: &'a ConfigDiff,
    /// `[vr id]`: in the diff.
    touched: Vec<bool>,
}

impl<'a> VrChanges<'a> {
    pub fn of(diff: &'a ConfigDiff) -> VrChanges<'a> {
        let mut touched = vec![false; MAX_VRS];
        for c in &diff.vrs {
            touched[c.id() as usize] = true;
        }
        VrChanges { diff, touched }
    }

    pub fn touches(&self, vr: u16) -> bool {
        self.touched[vr as usize]
    }

    pub fn is_empty(&self) -> bool {
        self.diff.is_empty()
    }

    /// The VRs that are new or changed, as they are now, in the new configuration's order.
    pub fn changed(&self) -> impl Iterator<Item = (&'a VrChange, &'a Arc<VrConfig>)> {
        self.diff.vrs.iter().filter_map(|c| Some((c, c.after()?)))
    }

    /// Ids of VRs that are gone.
    pub fn gone(&self) -> impl Iterator<Item = u16> + 'a {
        self.diff.vrs.iter().filter(|c| c.after().is_none()).map(VrChange::id)
    }
}
