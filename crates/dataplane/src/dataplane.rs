//! Assembling a running data plane from a validated configuration: the classifier's rules, each
//! VR's tables, each worker's schedulers, pool and ports.

use crate::counters::{Exception, WorkerCounters};
use crate::packet::{Packet, PacketPool};
use crate::pipeline::{Pipeline, SlowPathTx, SHARED_VR};
use crate::port::Port;
use crate::sched::{PortSchedConfig, PortScheduler, QueueConfig, RateLimit, VrClassConfig, VrClassId};
use crate::slowpath::{build_channels, ChannelEnds, WorkerLinks};
use crate::vr::VrTables;
use crate::worker::{QueueCounters, QueueMirror, Schedulers, Worker, RX_BATCH, TX_BATCH};
use pearl_classifier::{Classifier, Rule, Verdict, VrId};
use pearl_control::{Config, ConfigError, VrKind};
use pearl_lookup::rcu::{RcuCell, RcuDomain};
use pearl_wire::flow_key::mac_to_u128;
use pearl_wire::{Field, FlowKey};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Priority of the default rule "frames to this interface's MAC on its port belong to its VR";
/// configured match rules (default priority 100) take precedence.
pub const INTERFACE_RULE_PRIORITY: u32 = 10;
/// Priority of the one rule that claims every `shared` VR's frames by the MAC pattern
/// 02:VR:00:00:00:IF; below the interface rules, so an exact MAC always wins.
pub const SHARED_RULE_PRIORITY: u32 = 5;

/// One slow-path channel, waiting for the slow path to take its end.
pub struct SlowPathChannel {
    /// The VRs it carries (one, or every `shared` VR).
    pub vrs: Vec<u16>,
    pub shared: bool,
    pub ends: ChannelEnds,
}

pub struct Dataplane {
    pub config: Config,
    pub domain: Arc<RcuDomain>,
    /// Each VR's writable tables; the control side (routed, the API) locks one to change it,
    /// workers never do: they read through views published by RCU.
    pub vrs: Vec<Arc<Mutex<VrTables>>>,
    pub classifier: Arc<RcuCell<Classifier>>,
    pub counters: Vec<Arc<WorkerCounters>>,
    pub queues: Vec<Arc<QueueCounters>>,
    /// `[port][vr]`: the scheduler queue id of the VR's queue 0 on that port (same on every
    /// worker), for reading `queues`.
    pub first_queue: Vec<Vec<Option<u32>>>,
    /// The slow-path channels, for the slow path to take and serve.
    pub slow_path: Mutex<Vec<SlowPathChannel>>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
}

impl Dataplane {
    /// Builds everything, then starts the workers. `open(port, worker)` opens worker `worker`'s
    /// instance of port `port`. Fails, with nothing left running, if anything cannot be built.
    pub fn start(
        config: &Config,
        mut open: impl FnMut(usize, usize) -> Result<Box<dyn Port>, ConfigError>,
    ) -> Result<Dataplane, ConfigError> {
        let domain = RcuDomain::new();
        let classifier = Arc::new(RcuCell::new(build_classifier(config)?));
        let vrs = config
            .vrs
            .iter()
            .map(|vr| VrTables::build(vr, &domain))
            .collect::<Result<Vec<_>, _>>()?;
        let (channel_vrs, vr_channel) = slow_path_channels(config);
        let (channel_ends, mut links) = build_channels(channel_vrs.len(), config.workers)
            .map_err(|e| ConfigError::at("workers", format!("cannot make the slow-path channels: {e}")))?;
        let is = |v: usize, k: VrKind| config.vrs[v].kind == k;
        let to_kernel: Vec<bool> = (0..config.vrs.len()).map(|v| is(v, VrKind::Kernel) || is(v, VrKind::Shared)).collect();
        let shared: Vec<bool> = (0..config.vrs.len()).map(|v| is(v, VrKind::Shared)).collect();
        let mut ports_of_worker = Vec::new();
        for w in 0..config.workers {
            let ports = (0..config.ports.len()).map(|p| open(p, w)).collect::<Result<Vec<_>, _>>()?;
            ports_of_worker.push(ports);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (mut counters, mut queues, mut workers) = (Vec::new(), Vec::new(), Vec::new());
        // Every worker's schedulers have the same layout; readers learn it from the first.
        let mut first_queue = Vec::new();
        for (w, ports) in ports_of_worker.into_iter().enumerate() {
            let schedulers = build_schedulers(config)?;
            if w == 0 {
                first_queue = schedulers.first_queue.clone();
            }
            let queue_mirror = Arc::new(QueueCounters {
                ports: schedulers
                    .ports
                    .iter()
                    .map(|s| (0..s.queue_count()).map(|_| QueueMirror::default()).collect())
                    .collect(),
            });
            let wc = Arc::new(WorkerCounters::new(config.ports.len(), config.vrs.len()));
            let views = config.vrs.iter().zip(&vrs).map(|(c, t)| t.view(c.code)).collect();
            let link = std::mem::replace(&mut links[w], WorkerLinks { exceptions: Vec::new(), inject: Vec::new() });
            let slow = SlowPathTx {
                channels: link.exceptions,
                vr_channel: vr_channel.clone(),
                to_kernel: to_kernel.clone(),
                shared: shared.clone(),
            };
            let pipeline = Pipeline::new(views, Arc::clone(&classifier), port_vrs(config), slow, Arc::clone(&wc));
            let buffered: usize = config.vrs.iter().map(|v| v.queues.iter().map(|q| q.length).sum::<usize>() * v.interfaces.len()).sum();
            let pool = PacketPool::new(RX_BATCH * (config.ports.len() + 1) + TX_BATCH * 2 + buffered + 1024);
            let worker = Worker {
                ports,
                pipeline,
                schedulers,
                pool,
                reader: domain.register(),
                counters: Arc::clone(&wc),
                queues: Arc::clone(&queue_mirror),
                inject: link.inject,
            };
            let stop = Arc::clone(&stop);
            let handle = std::thread::Builder::new()
                .name(format!("pearl-worker-{w}"))
                .spawn(move || worker.run(stop))
                .map_err(|e| ConfigError::at("workers", format!("cannot start worker {w}: {e}")))?;
            counters.push(wc);
            queues.push(queue_mirror);
            workers.push(handle);
        }
        Ok(Dataplane {
            config: config.clone(),
            domain,
            vrs: vrs.into_iter().map(|t| Arc::new(Mutex::new(t))).collect(),
            classifier,
            counters,
            queues,
            first_queue,
            slow_path: Mutex::new(
                channel_vrs
                    .into_iter()
                    .zip(channel_ends)
                    .map(|(vrs, ends)| SlowPathChannel { shared: vrs.iter().any(|&v| shared[v as usize]), vrs, ends })
                    .collect(),
            ),
            stop,
            workers,
        })
    }

    /// Stops the workers and waits for them; ports close as their workers end.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }

    /// Sums a counter over all workers.
    pub fn sum(&self, f: impl Fn(&WorkerCounters) -> u64) -> u64 {
        self.counters.iter().map(|c| f(c)).sum()
    }

    /// Exception counts of a VR, by name.
    pub fn exceptions(&self, vr: usize) -> Vec<(&'static str, u64)> {
        Exception::ALL
            .iter()
            .map(|e| (e.name(), self.sum(|c| c.vrs[vr].exceptions[*e as usize].get())))
            .collect()
    }
}

/// The default VID rules (each interface's MAC on its port) plus each VR's configured rules,
/// every VR in its own partition with its quota.
fn build_classifier(config: &Config) -> Result<Classifier, ConfigError> {
    let mut c = Classifier::new();
    if config.vrs.iter().any(|v| v.kind == VrKind::Shared) {
        let mac_mask: u128 = 0xff00_ffff_ff00;
        let mask = FlowKey::default().with(Field::EthDst, mac_mask);
        let value = FlowKey::default().with(Field::EthDst, mac_to_u128([2, 0, 0, 0, 0, 0]));
        let rule = Rule { value, mask, priority: SHARED_RULE_PRIORITY, result: Verdict { vr: SHARED_VR, action: 0 } };
        c.insert(rule).map_err(|e| ConfigError::at("vrs", format!("the shared-VR rule: {e}")))?;
    }
    for (v, vr) in config.vrs.iter().enumerate() {
        let id = VrId(v as u16);
        let at = |i: String, e: pearl_classifier::ClassifierError| ConfigError::at(format!("vrs[{v}].{i}"), e.to_string());
        c.set_quota(id, vr.limits.filters + vr.interfaces.len()).map_err(|e| at("limits.filters".into(), e))?;
        // Shared VRs' interfaces are all covered by the one shared rule.
        let interfaces = if vr.kind == VrKind::Shared { &[][..] } else { &vr.interfaces[..] };
        for (i, iface) in interfaces.iter().enumerate() {
            let mask = FlowKey::default().with(Field::InPort, 0xffff).with(Field::EthDst, (1 << 48) - 1);
            let value = FlowKey::default()
                .with(Field::InPort, iface.port as u128)
                .with(Field::EthDst, mac_to_u128(iface.mac));
            let rule = Rule { value, mask, priority: INTERFACE_RULE_PRIORITY, result: Verdict { vr: id, action: 0 } };
            c.insert(rule).map_err(|e| at(format!("interfaces[{i}]"), e))?;
        }
        for (m, rule) in vr.matches.iter().enumerate() {
            let r = Rule {
                value: rule.value,
                mask: rule.mask,
                priority: rule.priority,
                result: Verdict { vr: id, action: rule.queue as u32 },
            };
            c.insert(r).map_err(|e| at(format!("match[{m}]"), e))?;
        }
    }
    Ok(c)
}

/// The slow-path channels (`[channel]` → its VRs) and each VR's channel: one per VR, except
/// that all `shared` VRs share the last one.
fn slow_path_channels(config: &Config) -> (Vec<Vec<u16>>, Vec<u16>) {
    let mut channels: Vec<Vec<u16>> = Vec::new();
    let mut vr_channel = vec![0u16; config.vrs.len()];
    let mut shared = Vec::new();
    for (v, vr) in config.vrs.iter().enumerate() {
        if vr.kind == VrKind::Shared {
            shared.push(v as u16);
        } else {
            vr_channel[v] = channels.len() as u16;
            channels.push(vec![v as u16]);
        }
    }
    if !shared.is_empty() {
        for &v in &shared {
            vr_channel[v as usize] = channels.len() as u16;
        }
        channels.push(shared);
    }
    (channels, vr_channel)
}

/// For each port, the VRs with an interface on it.
fn port_vrs(config: &Config) -> Vec<Vec<u16>> {
    (0..config.ports.len())
        .map(|p| {
            (0..config.vrs.len() as u16)
                .filter(|&v| config.vrs[v as usize].interfaces.iter().any(|i| i.port == p))
                .collect()
        })
        .collect()
}

/// One scheduler per port, with a class for each VR that has an interface there. Rates are
/// split evenly over the workers, each of which schedules its own share.
fn build_schedulers(config: &Config) -> Result<Schedulers, ConfigError> {
    let per_worker = |mbps: u64| RateLimit::new(mbps * 1_000_000 / config.workers as u64);
    let mut ports = Vec::new();
    let mut first_queue = Vec::new();
    for (p, port) in config.ports.iter().enumerate() {
        let senders: Vec<usize> = (0..config.vrs.len())
            .filter(|&v| config.vrs[v].interfaces.iter().any(|i| i.port == p))
            .collect();
        let cfg = PortSchedConfig {
            rate: port.rate_mbps.map(per_worker),
            vrs: senders
                .iter()
                .map(|&v| VrClassConfig {
                    rate: config.vrs[v].limits.rate_mbps.map(per_worker),
                    queues: config.vrs[v].queues.iter().map(|q| QueueConfig { weight: q.weight, length: q.length }).collect(),
                })
                .collect(),
        };
        let sched: PortScheduler<Packet> =
            PortScheduler::new(&cfg).map_err(|e| ConfigError::at(format!("ports[{p}]"), e.to_string()))?;
        let mut firsts = vec![None; config.vrs.len()];
        for (class, &v) in senders.iter().enumerate() {
            firsts[v] = sched.queue_id(VrClassId(class as u32), 0).map(|q| q.0);
        }
        ports.push(sched);
        first_queue.push(firsts);
    }
    let queues_per_vr = config.vrs.iter().map(|v| v.queues.len() as u32).collect();
    Ok(Schedulers { ports, first_queue, queues_per_vr })
}
