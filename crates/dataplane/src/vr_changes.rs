//! Which VRs a change of configuration touches. pearld hands the data plane the whole
//! configuration after every change, which with thousands of VRs is one VR changed among
//! thousands alike: a plan is made from the last one by rebuilding only what belongs to the VRs
//! named here, so that creating a VR costs about as much at 4,096 VRs as at 4.

use crate::plan::MAX_VRS;
use pearl_control::{Config, VrConfig};
use std::sync::Arc;

/// The difference between two configurations, by VR id.
pub struct VrChanges {
    /// The VRs (indices into the new configuration's `vrs`) that are new, or whose
    /// configuration differs in any field.
    pub changed: Vec<usize>,
    /// Ids of VRs that are gone.
    pub gone: Vec<u16>,
    /// `[vr id]`: in `changed` or `gone`.
    touched: Vec<bool>,
    /// `[vr id]`: the VR's index in the old configuration's `vrs`.
    old_at: Vec<Option<u32>>,
}

impl VrChanges {
    pub fn between(old: &Config, new: &Config) -> VrChanges {
        let mut old_at = vec![None; MAX_VRS];
        for (i, vr) in old.vrs.iter().enumerate() {
            old_at[vr.id as usize] = Some(i as u32);
        }
        let mut touched = vec![false; MAX_VRS];
        let mut present = vec![false; MAX_VRS];
        let mut changed = Vec::new();
        for (v, vr) in new.vrs.iter().enumerate() {
            let id = vr.id as usize;
            present[id] = true;
            // pearld hands over the VRs a change leaves alone by pointer: comparing thousands
            // of them field by field costs more than the rest of a one-VR change.
            if old_at[id].is_none_or(|i| !Arc::ptr_eq(&old.vrs[i as usize], vr) && old.vrs[i as usize] != *vr) {
                touched[id] = true;
                changed.push(v);
            }
        }
        let gone: Vec<u16> = old.vrs.iter().map(|vr| vr.id).filter(|&id| !present[id as usize]).collect();
        for &id in &gone {
            touched[id as usize] = true;
        }
        VrChanges { changed, gone, touched, old_at }
    }

    pub fn touches(&self, vr: u16) -> bool {
        self.touched[vr as usize]
    }

    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.gone.is_empty()
    }

    /// VR `vr`'s configuration in `old`, the configuration this difference was taken from.
    pub fn old<'a>(&self, old: &'a Config, vr: u16) -> Option<&'a VrConfig> {
        self.old_at[vr as usize].map(|i| -> &'a VrConfig { &old.vrs[i as usize] })
    }
}
