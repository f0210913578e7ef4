//! A worker's plan: everything a worker runs with that follows from the configuration (the
//! classifier, the VRs' views and kinds, the output schedulers, the slow-path channels). A
//! change of configuration is a new plan that each worker takes between two batches, so a
//! change never stops forwarding, and a worker never sees half of one.

use crate::batch::TX_BATCH;
use crate::impair::LinkImpairment;
use crate::output::{QueueCounters, QueueMirror, Schedulers};
use crate::packet::Packet;
use crate::sched::{PortSchedConfig, PortScheduler, QueueConfig, RateLimit, SharedCredit, VrClassConfig, VrClassId};
use crate::slowpath::FrameProducer;
use crate::steering::Insn;
use crate::table_cells::TableCells;
use crate::vr::VrView;
use pearl_classifier::Classifier;
use pearl_control::{Config, ConfigError, NatConfig, VrKind, MAX_VR_ID};
use std::sync::Arc;

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
    /// This worker's exception rings of new channels, and the ids of channels that are gone.
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

/// Every VR interface's `impair:` that does something, by port and VR.
pub fn link_impairments(config: &Config) -> Vec<LinkImpairment> {
    config
        .vrs
        .iter()
        .flat_map(|vr| vr.interfaces.iter().map(move |i| LinkImpairment { port: i.port as u16, vr: vr.id, params: i.impair }))
        .filter(|l| !l.params.is_none())
        .collect()
}

/// Each `nat:` reservation, by VR id.
pub fn nat_reservations(config: &Config) -> Vec<(u16, NatConfig, u16)> {
    config.vrs.iter().filter_map(|v| v.nat.map(|n| (v.id, n, v.interfaces[n.interface].port as u16))).collect()
}

/// For each port, the ids of the VRs with an interface on it.
pub fn port_vrs(config: &Config) -> Vec<Vec<u16>> {
    (0..config.ports.len())
        .map(|p| config.vrs.iter().filter(|v| v.interfaces.iter().any(|i| i.port == p)).map(|v| v.id).collect())
        .collect()
}

/// `[vr id]`: whether the VR is a `shared` one.
pub fn shared_flags(config: &Config) -> Vec<bool> {
    let mut shared = vec![false; MAX_VRS];
    for vr in &config.vrs {
        shared[vr.id as usize] = vr.kind == VrKind::Shared;
    }
    shared
}

/// The caps of one plan, each shared by every worker's scheduler of its port, so that a VR
/// whose traffic one worker carries still gets its whole rate; empty with one worker, whose
/// buckets are then its own.
pub struct RateCredits {
    ports: Vec<Option<Arc<SharedCredit>>>,
    /// `[port][VR class]`.
    vrs: Vec<Vec<Option<Arc<SharedCredit>>>>,
}

impl RateCredits {
    pub fn new(config: &Config) -> RateCredits {
        let workers = config.workers;
        let credit = |mbps: Option<u64>| mbps.filter(|_| workers > 1).map(|m| Arc::new(SharedCredit::new(rate(m), workers)));
        RateCredits {
            ports: config.ports.iter().map(|p| credit(p.rate_mbps)).collect(),
            vrs: (0..config.ports.len()).map(|p| senders(config, p).map(|v| credit(config.vrs[v].limits.rate_mbps)).collect()).collect(),
        }
    }
}

fn rate(mbps: u64) -> RateLimit {
    RateLimit::new(mbps * 1_000_000)
}

/// The VRs that send out of port `p`, in config order: the port scheduler's classes. Those
/// with an interface there, and those importing prefixes (`leak:`) from one that has.
fn senders(config: &Config, p: usize) -> impl Iterator<Item = usize> + '_ {
    let on = move |name: &str| config.vrs.iter().any(|v| v.name == name && v.interfaces.iter().any(|i| i.port == p));
    (0..config.vrs.len())
        .filter(move |&v| config.vrs[v].interfaces.iter().any(|i| i.port == p) || config.vrs[v].leak.iter().any(|l| on(&l.from)))
}

/// One scheduler per port, with a class for each VR that has an interface there; its caps draw
/// on `credits` where they are shared.
pub fn build_schedulers(config: &Config, credits: &RateCredits) -> Result<Schedulers, ConfigError> {
    SchedulerPlan::new(config).build(credits)
}

/// What every worker's schedulers of a plan are made from, worked out once for all of them.
pub struct SchedulerPlan {
    ports: Vec<PortSchedConfig>,
    /// `[port][VR class]`: the VR's id.
    classes: Vec<Vec<u16>>,
    queues_per_vr: Vec<u32>,
}

impl SchedulerPlan {
    pub fn new(config: &Config) -> SchedulerPlan {
        let mut ports = Vec::new();
        let mut classes = Vec::new();
        for (p, port) in config.ports.iter().enumerate() {
            let senders: Vec<usize> = senders(config, p).collect();
            ports.push(PortSchedConfig {
                rate: port.rate_mbps.map(rate),
                vrs: senders
                    .iter()
                    .map(|&v| VrClassConfig {
                        rate: config.vrs[v].limits.rate_mbps.map(rate),
                        share: config.vrs[v].limits.share,
                        queues: config.vrs[v].queues.iter().map(|q| QueueConfig { weight: q.weight, length: q.length }).collect(),
                    })
                    .collect(),
            });
            classes.push(senders.iter().map(|&v| config.vrs[v].id).collect());
        }
        let mut queues_per_vr = vec![0; MAX_VRS];
        for vr in config.vrs.iter() {
            queues_per_vr[vr.id as usize] = vr.queues.len() as u32;
        }
        SchedulerPlan { ports, classes, queues_per_vr }
    }

    /// One worker's schedulers.
    pub fn build(&self, credits: &RateCredits) -> Result<Schedulers, ConfigError> {
        let mut ports = Vec::new();
        let mut first_queue = Vec::new();
        for (p, (cfg, classes)) in self.ports.iter().zip(&self.classes).enumerate() {
            let mut sched: PortScheduler<Packet> =
                PortScheduler::new(cfg).map_err(|e| ConfigError::at(format!("ports[{p}]"), e.to_string()))?.with_direct(TX_BATCH);
            if let (Some(port_credit), Some(vr_credits)) = (credits.ports.get(p), credits.vrs.get(p)) {
                sched.share_rates(port_credit.as_ref(), vr_credits);
            }
            let mut firsts = vec![None; MAX_VRS];
            for (class, &id) in classes.iter().enumerate() {
                firsts[id as usize] = sched.queue_id(VrClassId(class as u32), 0).map(|q| q.0);
            }
            ports.push(sched);
            first_queue.push(firsts);
        }
        Ok(Schedulers { ports, first_queue, queues_per_vr: self.queues_per_vr.clone() })
    }
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
