//! A worker's plan: everything a worker runs with that follows from the configuration (the
//! classifier, the VRs' views and kinds, the output schedulers, the slow-path channels). A
//! change of configuration is a new plan that each worker takes between two batches, so a
//! change never stops forwarding, and a worker never sees half of one.
//!
//! A plan is made from the last one and the change (`vr_changes`): the VRs' views (`views`) and
//! their table cells (`table_cells`), the classifier (`vid_rules`), the output schedulers
//! (`schedulers`), the slow-path channels (`channels`) and what the workers know of every VR
//! besides its view (`vr_roster`).

pub mod channels;
pub mod schedulers;
pub mod table_cells;
pub mod vid_rules;
pub mod views;
pub mod vr_changes;
pub mod vr_roster;

use crate::impair::LinkImpairment;
use crate::output::{QueueCounters, QueueMirror, Schedulers};
use crate::port::steering::Insn;
use crate::slowpath::FrameProducer;
use crate::vr::VrView;
use pearl_classifier::Classifier;
use pearl_control::{NatConfig, MAX_VR_ID};
use std::sync::Arc;
use table_cells::TableCells;

/// VR ids index per-VR arrays directly.
pub const MAX_VRS: usize = MAX_VR_ID as usize + 1;

use crate::slowpath::ChannelId;

/// What a worker replaced when it took a plan (the VRs' old views, with their programs; the old
/// classifier and queue mirror). Dropping them can take a fraction of a millisecond (a plugin's
/// memory given back to the kernel, thousands of views), which a worker would spend not
/// forwarding: the control side drops them once the plan is in force.
pub type Retired = Box<dyn Send>;

pub struct WorkerPlan {
    pub generation: u64,
    pub classifier: Arc<Classifier>,
    /// `[vr id]`, shared by the workers (a worker reads it through its own reference, as it
    /// would a vector of its own: no more indirection per packet).
    pub views: Arc<[Option<VrView>]>,
    /// The views' table cells, dense (shared by the workers, read only).
    pub cells: Arc<TableCells>,
    /// `[port]`: the VRs with an interface there (multicast goes to each).
    pub port_vrs: Vec<Vec<u16>>,
    /// `[vr id]`: the channel of the VR's exceptions.
    pub vr_channel: Vec<Option<ChannelId>>,
    /// `[vr id]`: a `shared` VR.
    pub shared: Vec<bool>,
    pub schedulers: Schedulers,
    pub queues: Arc<QueueCounters>,
    /// This worker's exception rings of new channels, and the ids of channels that are gone
    /// (in id order).
    pub add_channels: Vec<(ChannelId, FrameProducer)>,
    pub drop_channels: Vec<ChannelId>,
    /// Ids of VRs new in this plan (created, or replacing another VR of the same id): their
    /// counters start from zero, not from what an earlier holder of the id counted.
    pub fresh_vrs: Vec<u16>,
    /// The impaired VR interfaces (`impair:`).
    pub impairments: Vec<LinkImpairment>,
    /// VRs with `nat:`: (VR id, reservation, the outside interface's port).
    pub nat: Vec<(u16, NatConfig, u16)>,
    /// `[port]`: the program that spreads its frames over the workers (`steering`), if it has one.
    pub steering: Vec<Option<Arc<[Insn]>>>,
}

/// Readers' mirror of a worker's queue statistics, shaped like `schedulers`.
pub fn queue_mirror(schedulers: &Schedulers) -> Arc<QueueCounters> {
    Arc::new(QueueCounters {
        ports: schedulers.ports.iter().map(|s| (0..s.queue_count()).map(|_| QueueMirror::default()).collect()).collect(),
    })
}

/// Carries a worker's queue totals from the mirror of its previous plan into the new one, for
/// the VRs and queues both have, so that counters never run backwards.
pub fn carry_queue_totals(
    old: &QueueCounters,
    old_first: &[Vec<Option<u32>>],
    new: &QueueCounters,
    new_first: &[Vec<Option<u32>>],
    queues_per_vr: &[u32],
    fresh_vrs: &[u16],
) {
    for (p, (olds, news)) in old_first.iter().zip(new_first).enumerate() {
        for (vr, (o, n)) in olds.iter().zip(news).enumerate() {
            let (Some(o), Some(n)) = (o, n) else { continue };
            if fresh_vrs.contains(&(vr as u16)) {
                continue;
            }
            for q in 0..queues_per_vr[vr] {
                let (Some(from), Some(to)) = (old.ports[p].get((o + q) as usize), new.ports[p].get((n + q) as usize)) else {
                    continue;
                };
                to.carry_from(from);
            }
        }
    }
}
