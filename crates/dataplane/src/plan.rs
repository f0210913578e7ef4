//! A worker's plan: everything a worker runs with that follows from the configuration (the
//! classifier, the VRs' views and kinds, the output schedulers, the slow-path channels). A
//! change of configuration is a new plan that each worker takes between two batches, so a
//! change never stops forwarding, and a worker never sees half of one.

use crate::impair::LinkImpairment;
use crate::output::{QueueCounters, QueueMirror, Schedulers};
use crate::packet::Packet;
use crate::program::filter;
use crate::sched::{PortSchedConfig, PortScheduler, QueueConfig, RateLimit, SharedCredit, VrClassConfig, VrClassId};
use crate::slowpath::FrameProducer;
use crate::steering::Insn;
use crate::vr::{VrView, SHARED_VR};
use pearl_classifier::{Classifier, Rule, Verdict, VrId};
use pearl_control::{shared_mac, Config, ConfigError, NatConfig, VrKind, MAX_VR_ID};
use pearl_wire::flow_key::mac_to_u128;
use pearl_wire::{Field, FlowKey};
use std::sync::Arc;

/// VR ids index per-VR arrays directly.
pub const MAX_VRS: usize = MAX_VR_ID as usize + 1;

/// Priority of the default rule "frames to this interface's MAC on its port belong to its VR";
/// configured match rules (default priority 100) take precedence.
pub const INTERFACE_RULE_PRIORITY: u32 = 10;
/// Priority of the one rule that claims every `shared` VR's frames by the MAC pattern
/// 02:LO:HI:00:00:IF (`shared_mac`); below the interface rules, so an exact MAC always wins.
pub const SHARED_RULE_PRIORITY: u32 = 5;
/// A plugin VR alone on a port claims every frame arriving there (any MAC, broadcasts too), so
/// that a program may bridge, or speak a protocol of its own addressing; below every other rule.
pub const PLUGIN_PORT_RULE_PRIORITY: u32 = 1;
/// The rules that steer traffic back to a VR's reserved NAT ports: above every other rule, so
/// that a reservation holds whatever MAC the outside sends to.
pub const NAT_RULE_PRIORITY: u32 = u32::MAX;

use crate::slowpath::ChannelId;

/// What a worker replaced when it took a plan (the VRs' old views, with their programs; the old
/// classifier and queue mirror). Dropping them can take a fraction of a millisecond (a plugin's
/// memory given back to the kernel, thousands of views), which a worker would spend not
/// forwarding: the control side drops them once the plan is in force.
pub type Retired = Box<dyn Send>;

pub struct WorkerPlan {
    pub generation: u64,
    pub classifier: Arc<Classifier>,
    /// `[vr id]`.
    pub views: Vec<Option<VrView>>,
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

/// The default VID rules (each interface's MAC on its port; one pattern rule for all shared
/// VRs) plus each VR's configured rules, every VR in its own partition with its quota.
pub fn build_classifier(config: &Config) -> Result<Classifier, ConfigError> {
    let mut c = Classifier::new();
    if config.vrs.iter().any(|v| v.kind == VrKind::Shared) {
        let mac_mask: u128 = 0xff00_00ff_ff00;
        let mask = FlowKey::default().with(Field::EthDst, mac_mask);
        let value = FlowKey::default().with(Field::EthDst, mac_to_u128(shared_mac(0, 0)));
        let rule = Rule { value, mask, priority: SHARED_RULE_PRIORITY, result: Verdict { vr: SHARED_VR, action: 0 } };
        c.insert(rule).map_err(|e| ConfigError::at("vrs", format!("the shared-VR rule: {e}")))?;
    }
    for (v, vr) in config.vrs.iter().enumerate() {
        let id = VrId(vr.id);
        let at = |i: String, e: pearl_classifier::ClassifierError| ConfigError::at(format!("vrs[{v}].{i}"), e.to_string());
        let nat_rules = vr.nat.map_or(0, |n| port_blocks(n.first, n.last).len());
        c.set_quota(id, vr.limits.filters + vr.interfaces.len() + nat_rules).map_err(|e| at("limits.filters".into(), e))?;
        // Shared VRs' interfaces are all covered by the one shared rule.
        let interfaces = if vr.kind == VrKind::Shared { &[][..] } else { &vr.interfaces[..] };
        for (i, iface) in interfaces.iter().enumerate() {
            let mut mask = FlowKey::default().with(Field::InPort, 0xffff).with(Field::EthDst, (1 << 48) - 1);
            let value = FlowKey::default().with(Field::InPort, iface.port as u128).with(Field::EthDst, mac_to_u128(iface.mac));
            let mut priority = INTERFACE_RULE_PRIORITY;
            if vr.kind == VrKind::Plugin && port_is_alone(config, v, iface.port) {
                (mask, priority) = (FlowKey::default().with(Field::InPort, 0xffff), PLUGIN_PORT_RULE_PRIORITY);
            }
            let rule = Rule { value: value.masked(&mask), mask, priority, result: Verdict { vr: id, action: 0 } };
            c.insert(rule).map_err(|e| at(format!("interfaces[{i}]"), e))?;
        }
        if let Some(nat) = &vr.nat {
            let port = vr.interfaces[nat.interface].port as u128;
            for (value, mask) in port_blocks(nat.first, nat.last) {
                let rule = Rule {
                    value: FlowKey::default()
                        .with(Field::InPort, port)
                        .with(Field::IpDst, u32::from(nat.address).into())
                        .with(Field::L4Dst, value.into()),
                    mask: FlowKey::default().with(Field::InPort, 0xffff).with(Field::IpDst, 0xffff_ffff).with(Field::L4Dst, mask.into()),
                    priority: NAT_RULE_PRIORITY,
                    result: Verdict { vr: id, action: 0 },
                };
                c.insert(rule).map_err(|e| at("nat".into(), e))?;
            }
        }
        for (m, rule) in vr.matches.iter().enumerate() {
            let action = if rule.action.is_some() { filter::verdict_action(m, rule.queue) } else { rule.queue as u32 };
            let r = Rule { value: rule.value, mask: rule.mask, priority: rule.priority, result: Verdict { vr: id, action } };
            c.insert(r).map_err(|e| at(format!("match[{m}]"), e))?;
        }
    }
    c.index_interfaces();
    Ok(c)
}

/// Whether VR `v` is the only VR with an interface on `port`.
fn port_is_alone(config: &Config, v: usize, port: usize) -> bool {
    config.vrs.iter().enumerate().all(|(o, other)| o == v || other.interfaces.iter().all(|i| i.port != port))
}

/// `first..=last` as the fewest (value, mask) blocks of 16-bit ports.
fn port_blocks(first: u16, last: u16) -> Vec<(u16, u16)> {
    let (mut blocks, mut at, last) = (Vec::new(), u32::from(first), u32::from(last));
    while at <= last {
        let mut size = 1u32;
        while at % (size * 2) == 0 && at + size * 2 - 1 <= last && size < 1 << 16 {
            size *= 2;
        }
        blocks.push((at as u16, !(size - 1) as u16));
        at += size;
    }
    blocks
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
    let mut ports = Vec::new();
    let mut first_queue = Vec::new();
    for (p, port) in config.ports.iter().enumerate() {
        let senders: Vec<usize> = senders(config, p).collect();
        let cfg = PortSchedConfig {
            rate: port.rate_mbps.map(rate),
            vrs: senders
                .iter()
                .map(|&v| VrClassConfig {
                    rate: config.vrs[v].limits.rate_mbps.map(rate),
                    share: config.vrs[v].limits.share,
                    queues: config.vrs[v].queues.iter().map(|q| QueueConfig { weight: q.weight, length: q.length }).collect(),
                })
                .collect(),
        };
        let mut sched: PortScheduler<Packet> =
            PortScheduler::new(&cfg).map_err(|e| ConfigError::at(format!("ports[{p}]"), e.to_string()))?;
        if let (Some(port_credit), Some(vr_credits)) = (credits.ports.get(p), credits.vrs.get(p)) {
            sched.share_rates(port_credit.as_ref(), vr_credits);
        }
        let mut firsts = vec![None; MAX_VRS];
        for (class, &v) in senders.iter().enumerate() {
            firsts[config.vrs[v].id as usize] = sched.queue_id(VrClassId(class as u32), 0).map(|q| q.0);
        }
        ports.push(sched);
        first_queue.push(firsts);
    }
    let mut queues_per_vr = vec![0; MAX_VRS];
    for vr in &config.vrs {
        queues_per_vr[vr.id as usize] = vr.queues.len() as u32;
    }
    Ok(Schedulers { ports, first_queue, queues_per_vr })
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
