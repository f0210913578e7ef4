//! Which slow-path channel carries each VR's exceptions in the next plan: a VR that stays the
//! same VR keeps its channel, a new or replaced one gets a new channel, and the `shared` VRs
//! share one, made again when their set changes. Worked out from the VRs a change touches, so
//! that thousands of VRs that stay cost a copy of the map and nothing per VR.

use crate::plan::vr_changes::VrChanges;
use crate::slowpath::ChannelId;
use pearl_control::{VrChange, VrKind};
use std::collections::BTreeMap;

/// The shared VRs' channel and the VRs (ids, ascending) it carries.
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

/// The channels after `changes`, those of the plan in force being `last` and `last_shared` (made
/// for the configuration `changes` is taken from); new channels take ids from `next_id` on.
pub fn next_channels(
    last: &BTreeMap<u16, ChannelId>,
    last_shared: &SharedChannel,
    next_id: ChannelId,
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
    let shared_vrs = shared_after(last_shared, changes);
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

/// The shared VRs (ids, ascending) after `changes`, those of `last` edited by the VRs the
/// change touches rather than the configuration's thousands of VRs searched.
fn shared_after(last: &SharedChannel, changes: &VrChanges<'_>) -> Vec<u16> {
    let mut vrs = last.as_ref().map_or_else(Vec::new, |(_, vrs)| vrs.clone());
    let now = changes.gone().map(|id| (id, false)).chain(changes.changed().map(|(_, vr)| (vr.id, vr.kind == VrKind::Shared)));
    for (id, shared) in now {
        match (vrs.binary_search(&id), shared) {
            (Err(at), true) => vrs.insert(at, id),
            (Ok(at), false) => {
                vrs.remove(at);
            }
            _ => {}
        }
    }
    vrs
}

#[cfg(test)]
mod tests {
    use super::*;
    use pearl_control::{parse_config, Config, ConfigDiff};
    use std::sync::Arc;

    /// VRs by (id, shared or else fast), each with one interface on one port.
    fn config(vrs: &[(u16, bool)]) -> Arc<Config> {
        let vrs: String = vrs
            .iter()
            .map(|(id, shared)| {
                let kind = if *shared { "shared" } else { "fast" };
                format!("  - {{name: v{id}, id: {id}, kind: {kind}, interfaces: [{{name: eth0, port: p0, mac: \"02:{id:02x}:00:00:00:00\"}}]}}\n")
            })
            .collect();
        Arc::new(parse_config(&format!("ports: [{{name: p0, interface: a}}]\nvrs:\n{vrs}")).unwrap())
    }

    #[test]
    fn the_shared_vrs_follow_the_changes_and_keep_their_channel_while_they_stay() {
        let mut last = Arc::new(config(&[(1, false)]).without_vrs());
        let (mut channels, mut shared, mut next_id) = (BTreeMap::new(), None, 0);
        // (the VRs, whether the shared channel is kept)
        for (vrs, kept) in [
            (&[(1, false), (2, true), (3, true)][..], false),
            (&[(1, false), (2, true), (3, true), (4, true)], false),
            (&[(2, true), (3, true), (4, true)], true),
            (&[(2, true), (3, false), (4, true)], false),
            (&[(3, false)], false),
        ] {
            let next = config(vrs);
            let diff = ConfigDiff::between(&last, &next);
            let plan = next_channels(&channels, &shared, next_id, &VrChanges::of(&diff));
            let expected: Vec<u16> = next.vrs.iter().filter(|v| v.kind == VrKind::Shared).map(|v| v.id).collect();
            assert_eq!(plan.shared_channel.as_ref().map(|(_, vrs)| vrs.clone()).unwrap_or_default(), expected, "{vrs:?}");
            assert_eq!(plan.shared_channel.is_some() && plan.shared_channel == shared, kept, "{vrs:?}");
            for (id, c) in plan.shared_channel.iter().flat_map(|(c, vrs)| vrs.iter().map(move |v| (v, c))) {
                assert_eq!(plan.channels.get(id), Some(c), "VR {id} on the shared channel");
            }
            next_id += plan.added.len() as u64;
            (channels, shared, last) = (plan.channels, plan.shared_channel, next);
        }
    }
}
