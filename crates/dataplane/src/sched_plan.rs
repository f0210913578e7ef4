//! What every worker's output schedulers of a plan are made from: for each port, a class for
//! each VR sending out of it, with its queues, share and cap. Worked out once per plan for all
//! workers, and from the last plan's: only the classes of the VRs a change touches are made
//! again, so that a change among thousands of VRs does not read every VR's configuration.

use crate::batch::TX_BATCH;
use crate::output::Schedulers;
use crate::packet::Packet;
use crate::plan::MAX_VRS;
use crate::sched::{PortSchedConfig, PortScheduler, QueueConfig, RateLimit, SharedCredit, VrClassConfig, VrClassId};
use crate::vr_changes::VrChanges;
use pearl_control::{Config, ConfigError};
use std::sync::Arc;

/// The caps of one plan, each shared by every worker's scheduler of its port, so that a VR
/// whose traffic one worker carries still gets its whole rate; empty with one worker, whose
/// buckets are then its own.
pub struct RateCredits {
    ports: Vec<Option<Arc<SharedCredit>>>,
    /// `[port][VR class]`.
    vrs: Vec<Vec<Option<Arc<SharedCredit>>>>,
}

impl RateCredits {
    /// Fresh credits for the caps of `plan` (every change starts them full).
    pub fn new(config: &Config, plan: &SchedulerPlan) -> RateCredits {
        let workers = config.workers;
        if workers <= 1 {
            return RateCredits { ports: Vec::new(), vrs: Vec::new() };
        }
        let credit = |rate: Option<RateLimit>| rate.map(|r| Arc::new(SharedCredit::new(r, workers)));
        RateCredits {
            ports: plan.ports.iter().map(|p| credit(p.rate)).collect(),
            vrs: plan.ports.iter().map(|p| p.vrs.iter().map(|c| credit(c.rate)).collect()).collect(),
        }
    }
}

fn rate(mbps: u64) -> RateLimit {
    RateLimit::new(mbps * 1_000_000)
}

/// Whether VR `v` sends out of port `p`: it has an interface there, or imports prefixes
/// (`leak:`) from a VR that has.
fn sends(config: &Config, v: usize, p: usize) -> bool {
    let on = |name: &str| config.vrs.iter().any(|v| v.name == name && v.interfaces.iter().any(|i| i.port == p));
    config.vrs[v].interfaces.iter().any(|i| i.port == p) || config.vrs[v].leak.iter().any(|l| on(&l.from))
}

/// One scheduler per port, with a class for each VR that has an interface there.
pub fn build_schedulers(config: &Config) -> Result<Schedulers, ConfigError> {
    let plan = SchedulerPlan::new(config);
    plan.build(&RateCredits::new(config, &plan))
}

/// The port schedulers' configuration. Classes are in VR id order, whatever the configuration's
/// order, so that a VR's class has one place whether the plan is made anew or from the last.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedulerPlan {
    ports: Vec<PortSchedConfig>,
    /// `[port][VR class]`: the VR's id.
    classes: Vec<Vec<u16>>,
    queues_per_vr: Vec<u32>,
}

impl SchedulerPlan {
    pub fn new(config: &Config) -> SchedulerPlan {
        let mut plan = SchedulerPlan {
            ports: config.ports.iter().map(|p| PortSchedConfig { rate: p.rate_mbps.map(rate), vrs: Vec::new() }).collect(),
            classes: vec![Vec::new(); config.ports.len()],
            queues_per_vr: vec![0; MAX_VRS],
        };
        let mut by_id: Vec<usize> = (0..config.vrs.len()).collect();
        by_id.sort_unstable_by_key(|&v| config.vrs[v].id);
        for v in by_id {
            plan.place(config, v);
        }
        plan
    }

    /// The plan of `config`, this being that of the configuration `changes` is taken from.
    /// The classes of VRs touched are made again, and, after any change at all, those of VRs
    /// importing prefixes: their sources are named, and a name may have moved to another VR.
    pub fn next(mut self, config: &Config, changes: &VrChanges<'_>) -> SchedulerPlan {
        if changes.is_empty() {
            return self;
        }
        let remade: Vec<usize> =
            (0..config.vrs.len()).filter(|&v| changes.touches(config.vrs[v].id) || !config.vrs[v].leak.is_empty()).collect();
        let mut dropped = vec![false; MAX_VRS];
        for id in changes.gone().chain(remade.iter().map(|&v| config.vrs[v].id)) {
            dropped[id as usize] = true;
            self.queues_per_vr[id as usize] = 0;
        }
        for (port, classes) in self.ports.iter_mut().zip(self.classes.iter_mut()) {
            let mut keep = classes.iter().map(|&id| !dropped[id as usize]);
            port.vrs.retain(|_| keep.next().unwrap_or(false));
            classes.retain(|&id| !dropped[id as usize]);
        }
        for v in remade {
            self.place(config, v);
        }
        self
    }

    /// Gives VR `v` its classes, in their places by id; it has none yet.
    fn place(&mut self, config: &Config, v: usize) {
        let vr = &config.vrs[v];
        self.queues_per_vr[vr.id as usize] = vr.queues.len() as u32;
        for (p, (port, classes)) in self.ports.iter_mut().zip(self.classes.iter_mut()).enumerate() {
            if !sends(config, v, p) {
                continue;
            }
            let class = VrClassConfig {
                rate: vr.limits.rate_mbps.map(rate),
                share: vr.limits.share,
                queues: vr.queues.iter().map(|q| QueueConfig { weight: q.weight, length: q.length }).collect(),
            };
            let at = classes.partition_point(|&id| id < vr.id);
            classes.insert(at, vr.id);
            port.vrs.insert(at, class);
        }
    }

    /// One worker's schedulers; their caps draw on `credits` where they are shared.
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
