//! What every worker's output schedulers of a plan are made from: for each port, a class for
//! each VR sending out of it, with its queues, share and cap. Worked out once per plan for all
//! workers, and from the last plan's: only the classes of the VRs a change touches are made
//! again, so that a change among thousands of VRs does not read every VR's configuration.

use crate::batch::TX_BATCH;
use crate::output::Schedulers;
use crate::packet::Packet;
use crate::plan::vr_changes::VrChanges;
use crate::plan::MAX_VRS;
use crate::sched::{PortSchedConfig, PortScheduler, QueueConfig, RateLimit, SharedCredit, VrClassConfig, VrClassId};
use pearl_control::{Config, ConfigError, VrConfig};
use std::collections::BTreeMap;
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
fn sends(config: &Config, vr: &VrConfig, p: usize) -> bool {
    let on = |name: &str| config.vrs.iter().any(|v| v.name == name && v.interfaces.iter().any(|i| i.port == p));
    vr.interfaces.iter().any(|i| i.port == p) || vr.leak.iter().any(|l| on(&l.from))
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
    /// The VRs importing prefixes (`leak:`), by id, as configured: every change makes their
    /// classes again, and they are few, unlike the VRs that would be searched for them.
    importing: BTreeMap<u16, Arc<VrConfig>>,
}

impl SchedulerPlan {
    pub fn new(config: &Config) -> SchedulerPlan {
        let mut plan = SchedulerPlan {
            ports: config.ports.iter().map(|p| PortSchedConfig { rate: p.rate_mbps.map(rate), vrs: Vec::new() }).collect(),
            classes: vec![Vec::new(); config.ports.len()],
            queues_per_vr: vec![0; MAX_VRS],
            importing: config.vrs.iter().filter(|vr| !vr.leak.is_empty()).map(|vr| (vr.id, Arc::clone(vr))).collect(),
        };
        let mut by_id: Vec<&VrConfig> = config.vrs.iter().map(|vr| &**vr).collect();
        by_id.sort_unstable_by_key(|vr| vr.id);
        for vr in by_id {
            plan.place(config, vr);
        }
        plan
    }

    /// The plan of `config`, this being that of the configuration `changes` is taken from.
    /// The classes of VRs touched are made again, and, after any change at all, those of VRs
    /// importing prefixes: their sources are named, and a name may have moved to another VR.
    /// Each class is found by its id (classes are in id order), so the VRs that stay are not
    /// passed over.
    pub fn next(mut self, config: &Config, changes: &VrChanges<'_>) -> SchedulerPlan {
        if changes.is_empty() {
            return self;
        }
        for id in changes.gone() {
            self.importing.remove(&id);
        }
        let mut remade: BTreeMap<u16, Arc<VrConfig>> = BTreeMap::new();
        for (_, vr) in changes.changed() {
            if vr.leak.is_empty() {
                self.importing.remove(&vr.id);
            } else {
                self.importing.insert(vr.id, Arc::clone(vr));
            }
            remade.insert(vr.id, Arc::clone(vr));
        }
        remade.extend(self.importing.iter().map(|(&id, vr)| (id, Arc::clone(vr))));
        for id in changes.gone().chain(remade.keys().copied()) {
            self.queues_per_vr[id as usize] = 0;
            for (port, classes) in self.ports.iter_mut().zip(self.classes.iter_mut()) {
                if let Ok(at) = classes.binary_search(&id) {
                    classes.remove(at);
                    port.vrs.remove(at);
                }
            }
        }
        for vr in remade.values() {
            self.place(config, vr);
        }
        self
    }

    /// Gives `vr` its classes, in their places by id; it has none yet.
    fn place(&mut self, config: &Config, vr: &VrConfig) {
        self.queues_per_vr[vr.id as usize] = vr.queues.len() as u32;
        for (p, (port, classes)) in self.ports.iter_mut().zip(self.classes.iter_mut()).enumerate() {
            if !sends(config, vr, p) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use pearl_control::{parse_config, ConfigDiff};

    /// VRs 1 to 3 on one port, of one queue each, weighing `weights`; VR 3 imports VR 1's
    /// prefixes.
    fn config(weights: [u32; 3]) -> Arc<Config> {
        let vrs: String = weights
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let leak = if i == 2 { ", leak: [{from: v0, prefixes: [10.0.0.0/16]}]" } else { "" };
                format!(
                    "  - {{name: v{i}, id: {}, interfaces: [{{name: eth0, port: m0, mac: '02:00:00:00:0{i}:00', addresses: [10.{i}.0.1/24]}}], queues: [{{weight: {w}}}]{leak}}}\n",
                    i + 1
                )
            })
            .collect();
        Arc::new(parse_config(&format!("workers: 1\nports: [{{name: m0, interface: m0, driver: memory}}]\nvrs:\n{vrs}")).unwrap())
    }

    fn weights(plan: &SchedulerPlan) -> Vec<(u16, u32)> {
        plan.classes[0].iter().zip(&plan.ports[0].vrs).map(|(&id, class)| (id, class.queues[0].weight)).collect()
    }

    #[test]
    fn a_change_makes_again_the_classes_of_the_vrs_it_touches_and_of_the_importers_as_they_were() {
        let (before, after) = (config([1, 1, 1]), config([1, 2, 1]));
        let diff = ConfigDiff::between(&before, &after);
        let plan = SchedulerPlan::new(&before).next(&after, &VrChanges::of(&diff));
        assert_eq!(plan, SchedulerPlan::new(&after));
        // Handed a configuration that says otherwise of the VRs the change leaves alone, the
        // plan keeps what it had of them: it does not read them there.
        let plan = SchedulerPlan::new(&before).next(&config([5, 2, 5]), &VrChanges::of(&diff));
        assert_eq!(weights(&plan), [(1, 1), (2, 2), (3, 1)]);
    }
}
