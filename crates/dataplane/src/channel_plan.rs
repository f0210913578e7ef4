//! Which slow-path channel carries each VR's exceptions in the next plan: a VR that stays the
//! same VR keeps its channel, a new or replaced one gets a new channel, and the `shared` VRs
//! share one, made again when their set changes. Worked out from the VRs a change touches, so
//! that thousands of VRs that stay cost a copy of the map and nothing per VR.

use crate::slowpath::ChannelId;
use crate::vr_changes::VrChanges;
use pearl_control::{Config, VrChange, VrKind};
use std::collections::BTreeMap;

/// The shared VRs' channel and the VRs (ids) it carries.
pub type SharedChannel = Option<(ChannelId, Vec<u16>)>;

pub struct ChannelPlan {
    /// VR id → its channel; the shared VRs' channel under each shared VR's id.
    pub channels: BTreeMap<u16, ChannelId>,
    pub shared_channel: SharedChannel,
    /// Channels to make: (id, the VRs it carries, shared).
    pub added: Vec<(ChannelId, Vec<u16>, bool)>,
    /// Channels no VR uses any more, in id order.
    pub removed: Vec<ChannelId>,
}

/// The channels of `config`, those of the plan in force being `last` and `last_shared` (made
/// for the configuration `changes` is taken from); new channels take ids from `next_id` on.
pub fn next_channels(
    last: &BTreeMap<u16, ChannelId>,
    last_shared: &SharedChannel,
    next_id: ChannelId,
    config: &Config,
    changes: &VrChanges<'_>,
) -> ChannelPlan {
    let mut channels = last.clone();
    let mut added = Vec::new();
    // Channels whose VR let go of them: gone unless the shared channel they are stays.
    let mut released = Vec::new();
    for id in changes.gone() {
        released.extend(channels.remove(&id));
    }
    for (change, vr) in changes.changed() {
        let same_vr = matches!(change, VrChange::InPlace { old, .. } if old.kind != VrKind::Shared);
        if vr.kind == VrKind::Shared || !same_vr || !channels.contains_key(&vr.id) {
            released.extend(channels.remove(&vr.id));
        }
        if vr.kind != VrKind::Shared && !channels.contains_key(&vr.id) {
            let id = next_id + added.len() as u64;
            added.push((id, vec![vr.id], false));
            channels.insert(vr.id, id);
        }
    }
    let is_shared = |kind: &VrKind| *kind == VrKind::Shared;
    let shared_vrs: Vec<u16> = config.vrs.iter().filter(|v| is_shared(&v.kind)).map(|v| v.id).collect();
    let same_shared = last_shared.as_ref().is_some_and(|(_, vrs)| *vrs == shared_vrs)
        && changes.changed().filter(|(_, n)| is_shared(&n.kind)).all(|(c, _)| c.is_in_place());
    let shared_channel = if shared_vrs.is_empty() {
        None
    } else if same_shared {
        last_shared.clone()
    } else {
        let id = next_id + added.len() as u64;
        added.push((id, shared_vrs.clone(), true));
        Some((id, shared_vrs))
    };
    if let Some((id, vrs)) = &shared_channel {
        for v in vrs {
            channels.insert(*v, *id);
        }
    }
    let (old_shared, new_shared) = (last_shared.as_ref().map(|s| s.0), shared_channel.as_ref().map(|s| s.0));
    let mut removed: Vec<ChannelId> = released.into_iter().filter(|&c| Some(c) != new_shared).collect();
    removed.extend(old_shared.filter(|&c| Some(c) != new_shared));
    removed.sort_unstable();
    removed.dedup();
    ChannelPlan { channels, shared_channel, added, removed }
}
