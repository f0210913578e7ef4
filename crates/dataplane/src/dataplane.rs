//! A running data plane: workers and their ports, started from a validated configuration and
//! changed at run time by handing each worker a new plan. A change is built whole first (and
//! refused whole if any part fails), then every worker takes it between two batches.

use crate::batch::{RX_BATCH, TX_BATCH};
use crate::capture::{tap_rings, CaptureRings, TapCommand, TapSpec};
use crate::counters::{Exception, VrDrop, WorkerCounters};
use crate::impair::Impairments;
use crate::offload::FlowOffload;
use crate::output::QueueCounters;
use crate::packet::PacketPool;
use crate::pipeline::Pipeline;
use crate::plan::channels::{next_channels, ChannelPlan, SharedChannel};
use crate::plan::schedulers::{build_schedulers, RateCredits, SchedulerPlan};
use crate::plan::table_cells::TableCells;
use crate::plan::vid_rules::{build_classifier, rules_changed, update_classifier};
use crate::plan::views::{next_views, ViewSources};
use crate::plan::vr_changes::VrChanges;
use crate::plan::vr_roster::VrRoster;
use crate::plan::{queue_mirror, Retired, WorkerPlan, MAX_VRS};
use crate::port::link::{PortLink, Reopen};
use crate::port::steering::{self, Insn};
use crate::port::{port_mtu, AfXdpConfig, Port, RxClass};
use crate::program::VrProgram;
use crate::slowpath::{frame_ring, ChannelEnds, ChannelId, Doorbell, FrameProducer, CHANNEL_DEPTH, INJECT_DEPTH};
use crate::trace::{trace_parts, TraceReader, TraceSpec};
use crate::vr::VrView;
use crate::worker::Worker;
use pearl_classifier::Classifier;
use pearl_control::{Config, ConfigDiff, ConfigError, Driver, InterfaceConfig, Slices};
use pearl_lookup::rcu::RcuDomain;
use pearl_tables::VrTables;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Buffers per worker beyond what the initial configuration's queues need, so that VRs added
/// at run time have room too.
const POOL_HEADROOM: usize = 8192;
/// Buffers per worker for queued packets at most, however many queues the VRs configure: the
/// queues share them as a switch's queues share its buffer memory, each bounded by its own
/// length. Sizing the pool to every queue full would cost 4 MiB per VR of two interfaces (two
/// queues of 1,024 buffers of 2 KiB), and 32 GiB for 4,096 VRs; 16,384 buffers hold 16 ms at
/// 1 Mpps. The pool's pages are taken as buffers are first used.
const MAX_QUEUED_BUFFERS: usize = 16384;
/// How long a change waits for every worker to take it.
const APPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// One slow-path channel, for the slow path to serve.
pub struct SlowPathChannel {
    pub id: ChannelId,
    /// The VRs (ids) it carries: one, or every `shared` VR.
    pub vrs: Vec<u16>,
    pub shared: bool,
    pub ends: ChannelEnds,
}

/// What the slow path serves from the start: the first channels, and `inject[w]`, the ring on
/// which it hands worker `w` the frames of the VRs' kernels.
pub struct SlowPathStart {
    pub channels: Vec<SlowPathChannel>,
    pub inject: Vec<FrameProducer>,
}

/// What a change did to the slow-path channels: the slow path stops serving `removed` and
/// starts serving `added`.
#[derive(Default)]
pub struct ChannelChange {
    pub added: Vec<SlowPathChannel>,
    pub removed: Vec<ChannelId>,
    /// What the change replaced (the workers' old plans, the readers' old layout), for the
    /// caller to free off its request path: with thousands of VRs that takes milliseconds.
    pub replaced: Vec<Retired>,
}

/// What readers (stats, the API) need to interpret the counters; replaced whole on a change.
pub struct Layout {
    pub config: Arc<Config>,
    /// VR id → its writable tables (the control side locks one to change it; workers never
    /// do: they read through views published by RCU).
    pub tables: BTreeMap<u16, Arc<Mutex<VrTables>>>,
    /// `[worker]`: the queue statistics of its current schedulers.
    pub queues: Vec<Arc<QueueCounters>>,
    /// `[port][vr id]`: the scheduler queue id of the VR's queue 0 on that port (the same on
    /// every worker).
    pub first_queue: Vec<Vec<Option<u32>>>,
    /// The workers each VR that needs fewer than all of them runs on (PdP's SliceAlloc).
    pub slices: Slices,
}

struct Control {
    generation: u64,
    next_channel: ChannelId,
    /// VR id → its channel; the shared VRs' channel under each shared VR's id.
    channels: BTreeMap<u16, ChannelId>,
    shared_channel: SharedChannel,
    plans: Vec<Sender<WorkerPlan>>,
    /// What the workers replaced, dropped here rather than on a worker's time.
    retired: Receiver<Retired>,
    /// The classifier of the plan in force, from which the next one is made by replacing only
    /// the VRs whose rules change.
    classifier: Option<Arc<Classifier>>,
    /// The classifier of the plan before, from which the next one is made in place once the
    /// workers let go of it.
    spare: Option<Spare>,
    /// `[vr id]`: the views of the plan in force, from which the next plan's are made.
    views: Arc<[Option<VrView>]>,
    /// What the workers know of each VR in the plan in force, from which the next plan's is made.
    roster: VrRoster,
    /// The schedulers' configuration of the plan in force, from which the next plan's is made
    /// (none after a refused change: the next is made anew).
    sched: Option<SchedulerPlan>,
    /// VRs whose program `set_program` changed since the plan in force was made.
    reprogrammed: Vec<u16>,
    /// VR id → the program attached from outside (`set_program`), in place of the one its
    /// configuration names.
    programs: HashMap<u16, Arc<dyn VrProgram>>,
}

/// A classifier of an earlier plan than the one in force.
struct Spare {
    classifier: Arc<Classifier>,
    /// The configuration it was built for.
    made_for: Arc<Config>,
    /// The VRs whose rules changed since (ids), besides those the next change changes.
    since: Vec<u16>,
}

impl Spare {
    /// The classifier, if nothing else holds it: the workers retired it with the plan they
    /// replaced, and whoever took that from `update` dropped it.
    fn free(self) -> Option<(Classifier, Arc<Config>, Vec<u16>)> {
        Some((Arc::into_inner(self.classifier)?, self.made_for, self.since))
    }
}

pub struct Dataplane {
    pub domain: Arc<RcuDomain>,
    /// `[worker]`, each sized for every possible VR id.
    pub counters: Vec<Arc<WorkerCounters>>,
    layout: Mutex<Arc<Layout>>,
    control: Mutex<Control>,
    applied: Vec<Arc<AtomicU64>>,
    /// `[worker]`: where captures are started and stopped; and the next capture's id.
    taps: Mutex<(u64, Vec<Sender<TapCommand>>)>,
    /// `[worker]`: rung after a plan or a capture command is sent, so that an idle worker,
    /// asleep until its ports or the slow path bring frames, takes it at once.
    wakes: Vec<Arc<Doorbell>>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    /// `[port]`: the MTU of the port's Linux interface when it was opened, the default of every
    /// VR interface on it.
    port_mtus: Vec<u32>,
    /// TCP flows handed to the kernel (`node.flow_offload`), if the node's ports allow it.
    offload: Option<FlowOffload>,
}

/// Large packet buffers per worker, for GSO super-packets and jumbo frames: enough for several
/// flows' worth of super-packets in flight and queued (a TCP flow at full speed keeps two or
/// three of them in flight on veth), at 68 KiB each.
const LARGE_BUFFERS: usize = 192;

impl Dataplane {
    /// Opens every port, starts the workers and gives them their first plan. `open(port,
    /// worker, pool)` opens worker `worker`'s instance of port `port`, which may share `pool`,
    /// the worker's packet buffers (an AF_XDP port does). Fails, with nothing left running, if
    /// anything cannot be built. Returns the slow-path channels to serve.
    pub fn start(
        config: &Config,
        open: impl FnMut(usize, usize, &mut PacketPool) -> Result<Box<dyn Port>, ConfigError>,
    ) -> Result<(Dataplane, SlowPathStart), ConfigError> {
        Dataplane::start_with(config, open, None, HashMap::new())
    }

    /// Like `start`, with programs from outside (a plugin host's) in place of what the
    /// configuration names for those VR ids, from the first plan on.
    pub fn start_programmed(
        config: &Config,
        programs: HashMap<u16, Arc<dyn VrProgram>>,
        open: impl FnMut(usize, usize, &mut PacketPool) -> Result<Box<dyn Port>, ConfigError>,
    ) -> Result<(Dataplane, SlowPathStart), ConfigError> {
        Dataplane::start_with(config, open, None, programs)
    }

    /// Attaches `program` to VR `vr` in place of the one its configuration names (None: back
    /// to that one), from the next `update` on.
    pub fn set_program(&self, vr: u16, program: Option<Arc<dyn VrProgram>>) {
        let mut control = self.control.lock().expect("data plane control");
        control.reprogrammed.push(vr);
        match program {
            Some(p) => control.programs.insert(vr, p),
            None => control.programs.remove(&vr),
        };
    }

    /// Like `start_programmed`, and a port whose interface is deleted is opened again with
    /// `open` when an interface of its name comes back (the port stops meanwhile; the others go on).
    pub fn start_reopening(
        config: &Config,
        programs: HashMap<u16, Arc<dyn VrProgram>>,
        open: impl Fn(usize, usize, &mut PacketPool) -> Result<Box<dyn Port>, ConfigError> + Send + Sync + 'static,
    ) -> Result<(Dataplane, SlowPathStart), ConfigError> {
        let open = Arc::new(open);
        let reopen: Reopen = {
            let open = Arc::clone(&open);
            Arc::new(move |p, w, pool: &mut PacketPool| open(p, w, pool).map_err(|e| e.to_string()))
        };
        Dataplane::start_with(config, |p, w, pool| open(p, w, pool), Some(reopen), programs)
    }

    fn start_with(
        config: &Config,
        mut open: impl FnMut(usize, usize, &mut PacketPool) -> Result<Box<dyn Port>, ConfigError>,
        reopen: Option<Reopen>,
        programs: HashMap<u16, Arc<dyn VrProgram>>,
    ) -> Result<(Dataplane, SlowPathStart), ConfigError> {
        // Validate what can be refused before opening anything.
        build_classifier(config)?;
        build_schedulers(config)?;
        let buffered: usize = config.vrs.iter().map(|v| v.queues.iter().map(|q| q.length).sum::<usize>() * v.interfaces.len()).sum();
        // AF_XDP ports keep buffers of the pool lent to the kernel.
        let lent = config.ports.iter().filter(|p| p.driver == Driver::AfXdp).count() * AfXdpConfig::default().pool_share();
        let pool_size = RX_BATCH * (config.ports.len() + 1) + TX_BATCH * 2 + buffered.min(MAX_QUEUED_BUFFERS) + lent + POOL_HEADROOM;
        let mut ports_of_worker = Vec::new();
        for w in 0..config.workers {
            let mut pool = PacketPool::with_large(pool_size, LARGE_BUFFERS);
            let ports = (0..config.ports.len()).map(|p| open(p, w, &mut pool)).collect::<Result<Vec<_>, _>>()?;
            ports_of_worker.push((ports, pool));
        }
        let offload = open_offload(config, &ports_of_worker);
        let domain = RcuDomain::new();
        let stop = Arc::new(AtomicBool::new(false));
        let (mut counters, mut applied, mut workers, mut senders) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut tap_senders, mut wakes, mut inject) = (Vec::new(), Vec::new(), Vec::new());
        let (retire, retired) = channel();
        for (w, (ports, pool)) in ports_of_worker.into_iter().enumerate() {
            let (producer, consumer) = frame_ring(INJECT_DEPTH).map_err(|e| ConfigError::at("workers", format!("slow-path ring: {e}")))?;
            inject.push(producer);
            let wake = Arc::new(Doorbell::new().map_err(|e| ConfigError::at("workers", format!("worker doorbell: {e}")))?);
            wakes.push(Arc::clone(&wake));
            let wc = Arc::new(WorkerCounters::new(config.ports.len(), MAX_VRS));
            let (tx, rx) = channel();
            let (tap_tx, tap_rx) = channel();
            tap_senders.push(tap_tx);
            let done = Arc::new(AtomicU64::new(0));
            // Until its first plan arrives, a worker has a scheduler per port and no VRs.
            let no_vrs = config.without_vrs();
            let empty = build_schedulers(&no_vrs)?;
            let worker = Worker {
                ports,
                pipeline: Pipeline::new(Arc::clone(&wc))
                    .with_opaque_keys(config.ports.iter().map(|p| p.opaque).collect())
                    .with_offload(offload.as_ref().map(|o| (o.offers(), o.ports()))),
                queues: queue_mirror(&empty),
                schedulers: empty,
                pool,
                reader: domain.register(),
                counters: Arc::clone(&wc),
                inject: consumer,
                wake,
                plans: rx,
                applied: Arc::clone(&done),
                retire: retire.clone(),
                draining: Vec::new(),
                taps: tap_rx,
                impairments: Impairments::default(),
                index: w,
                links: config.ports.iter().map(|p| kernel_interface(p.driver).then(|| PortLink::of(&p.interface)).flatten()).collect(),
                reopen: reopen.clone(),
                steering: vec![None; config.ports.len()],
            };
            let stop = Arc::clone(&stop);
            let handle = std::thread::Builder::new()
                .name(format!("pearl-worker-{w}"))
                .spawn(move || worker.run(stop))
                .map_err(|e| ConfigError::at("workers", format!("cannot start worker {w}: {e}")))?;
            counters.push(wc);
            applied.push(done);
            workers.push(handle);
            senders.push(tx);
        }
        let empty = Arc::new(config.without_vrs());
        let dataplane = Dataplane {
            domain,
            counters,
            layout: Mutex::new(Arc::new(Layout {
                config: Arc::clone(&empty),
                tables: BTreeMap::new(),
                queues: Vec::new(),
                first_queue: Vec::new(),
                slices: Slices::default(),
            })),
            control: Mutex::new(Control {
                generation: 0,
                next_channel: 0,
                channels: BTreeMap::new(),
                shared_channel: None,
                plans: senders,
                retired,
                classifier: None,
                spare: None,
                views: vec![None; MAX_VRS].into(),
                roster: VrRoster::of(&config.without_vrs()),
                sched: None,
                reprogrammed: Vec::new(),
                programs,
            }),
            wakes,
            applied,
            taps: Mutex::new((0, tap_senders)),
            stop,
            workers,
            port_mtus: config.ports.iter().map(port_mtu).collect(),
            offload,
        };
        match dataplane.update(&ConfigDiff::between(&empty, &Arc::new(config.clone()))) {
            Ok(change) => Ok((dataplane, SlowPathStart { channels: change.added, inject })),
            Err(e) => {
                dataplane.stop();
                Err(e)
            }
        }
    }

    /// Moves the running data plane across `diff`, taken from the configuration in force
    /// (`layout().config`): a VR replaced gets new tables and channel, one changed in place
    /// keeps its tables and takes its new program (code option) between two batches (its
    /// routes are the control side's business). Refused whole, with nothing changed, if any
    /// part fails; returns once every worker runs the new plan.
    pub fn update(&self, diff: &ConfigDiff) -> Result<ChannelChange, ConfigError> {
        let (new, config) = (&diff.new, &*diff.new);
        let mut control = self.control.lock().expect("data plane control");
        let old = self.layout();
        if !Arc::ptr_eq(&diff.old, &old.config) {
            return Err(ConfigError::at("vrs", "the change was taken from another configuration than the one in force"));
        }
        if config.workers != old.config.workers {
            return Err(ConfigError::at("workers", "the number of workers cannot change while pearld runs"));
        }
        if config.ports != old.config.ports {
            return Err(ConfigError::at("ports", "ports cannot change while pearld runs"));
        }
        let changes = VrChanges::of(diff);
        let redo = rules_changed(diff);
        // A spare no worker holds any more is changed in place; a copy costs milliseconds.
        let spare = control.spare.take().and_then(Spare::free);
        let classifier = Arc::new(match (&control.classifier, spare) {
            (Some(_), Some((spare, made_for, mut since))) => {
                since.extend(&redo);
                since.sort_unstable();
                since.dedup();
                update_classifier(spare, &made_for, config, &since)?
            }
            (Some(last), None) => update_classifier((**last).clone(), &old.config, config, &redo)?,
            (None, _) => build_classifier(config)?,
        });
        let mut tables = old.tables.clone();
        for id in changes.gone() {
            tables.remove(&id);
        }
        let mut fresh_vrs = Vec::new();
        for (change, vr) in changes.changed() {
            if change.is_in_place() && tables.contains_key(&vr.id) {
                continue;
            }
            fresh_vrs.push(vr.id);
            let mut t = VrTables::build(vr, &self.domain)?;
            t.offload_watch = self.offload.as_ref().map(FlowOffload::watch);
            tables.insert(vr.id, Arc::new(Mutex::new(t)));
        }
        let sources =
            ViewSources { tables: &tables, port_mtus: &self.port_mtus, programs: &control.programs, offload: self.offload.is_some() };
        let views = next_views(&control.views, config, &changes, &control.reprogrammed, &sources)?;
        // Taken, so that a change refused below leaves none: the next is then made anew.
        let sched_plan = match control.sched.take() {
            Some(last) => last.next(config, &changes),
            None => SchedulerPlan::new(config),
        };
        let credits = RateCredits::new(config, &sched_plan);
        let schedulers = (0..config.workers).map(|_| sched_plan.build(&credits)).collect::<Result<Vec<_>, _>>()?;

        // Nothing below can fail but making rings; those are made before any worker learns.
        let mut change = ChannelChange::default();
        let ChannelPlan { channels, shared_channel, added: new_ends, removed } =
            next_channels(&control.channels, &control.shared_channel, control.next_channel, &changes);

        let workers = config.workers;
        let mut per_worker: Vec<Vec<_>> = (0..workers).map(|_| Vec::new()).collect();
        let ring = || frame_ring(CHANNEL_DEPTH).map_err(|e| ConfigError::at("vrs", format!("slow-path channel: {e}")));
        for (id, vrs, shared) in new_ends {
            let mut exceptions = Vec::new();
            for slot in per_worker.iter_mut() {
                let (tx, rx) = ring()?;
                slot.push((id, tx));
                exceptions.push(rx);
            }
            // Channels take turns at which worker sends their kernels' frames.
            let ends = ChannelEnds { exceptions, worker: id as usize % workers };
            change.added.push(SlowPathChannel { id, vrs, shared, ends });
        }

        let roster = control.roster.next(&changes);
        let cells = Arc::new(TableCells::of(&views));
        let mut vr_channel = vec![None; MAX_VRS];
        for (&vr, &c) in &channels {
            vr_channel[vr as usize] = Some(c);
        }
        let slices = Slices::allocate(&old.slices, config);
        let steering: Vec<Option<Arc<[Insn]>>> =
            steering::for_ports(config, &slices).iter().map(|s| s.as_ref().map(|s| Arc::from(steering::program(s)))).collect();
        control.generation += 1;
        control.next_channel += change.added.len() as u64;
        let generation = control.generation;
        let first_queue = schedulers.first().map(|s| s.first_queue.clone()).unwrap_or_default();
        let mut queues = Vec::new();
        for ((w, sched), add_channels) in schedulers.into_iter().enumerate().zip(per_worker) {
            let mirror = queue_mirror(&sched);
            queues.push(Arc::clone(&mirror));
            let plan = WorkerPlan {
                generation,
                classifier: Arc::clone(&classifier),
                views: Arc::clone(&views),
                cells: Arc::clone(&cells),
                port_vrs: roster.port_vrs.clone(),
                vr_channel: vr_channel.clone(),
                shared: roster.shared.clone(),
                schedulers: sched,
                queues: mirror,
                add_channels,
                drop_channels: removed.clone(),
                fresh_vrs: fresh_vrs.clone(),
                impairments: roster.impairments.clone(),
                nat: roster.nat.clone(),
                steering: steering.clone(),
            };
            // A worker that is gone cannot take it; the wait below reports that.
            let _ = control.plans[w].send(plan);
            self.wakes[w].ring_if_armed();
        }
        control.channels = channels;
        if let Some(last) = control.classifier.replace(classifier) {
            control.spare = Some(Spare { classifier: last, made_for: Arc::clone(&old.config), since: redo });
        }
        change.replaced.push(Box::new(std::mem::replace(&mut control.views, views)));
        control.reprogrammed.clear();
        change.replaced.push(Box::new(std::mem::replace(&mut control.roster, roster)));
        control.sched = Some(sched_plan);
        control.shared_channel = shared_channel;
        let layout = Arc::new(Layout { config: Arc::clone(new), tables, queues, first_queue, slices });
        change.replaced.push(Box::new(std::mem::replace(&mut *self.layout.lock().expect("layout"), layout)));
        change.removed = removed;
        let deadline = Instant::now() + APPLY_TIMEOUT;
        while self.applied.iter().any(|a| a.load(Ordering::Acquire) < generation) {
            if Instant::now() > deadline {
                return Err(ConfigError::at("workers", "a worker did not take the change in time (is it stuck?)"));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        // Each worker retired what this plan replaced before it reported the plan in force.
        change.replaced.extend(control.retired.try_iter());
        // No worker decides from the old configuration any more: flows offloaded under it go.
        if let Some(o) = &self.offload {
            o.flush(fresh_vrs);
        }
        Ok(change)
    }

    /// Starts capturing what `spec` names on every worker; read the rings, then `capture_stop`.
    pub fn capture_start(&self, spec: TapSpec) -> std::io::Result<CaptureRings> {
        let mut taps = self.taps.lock().expect("taps");
        taps.0 += 1;
        let (commands, rings) = tap_rings(taps.0, spec, taps.1.len())?;
        // A capture sees every frame: none may pass through the kernel alone meanwhile.
        if let Some(o) = &self.offload {
            o.capture(true);
        }
        for ((sender, cmd), wake) in taps.1.iter().zip(commands).zip(&self.wakes) {
            let _ = sender.send(cmd);
            wake.ring_if_armed();
        }
        Ok(rings)
    }

    pub fn capture_stop(&self, id: u64) {
        for sender in self.taps.lock().expect("taps").1.iter() {
            let _ = sender.send(TapCommand::Stop { id });
        }
        if let Some(o) = &self.offload {
            o.capture(false);
        }
        for wake in &self.wakes {
            wake.ring_if_armed();
        }
    }

    /// Arms the packet trace `spec` on every worker; read its records, then `trace_stop`.
    pub fn trace_start(&self, spec: TraceSpec) -> TraceReader {
        let mut taps = self.taps.lock().expect("taps");
        taps.0 += 1;
        let (parts, reader) = trace_parts(taps.0, spec, taps.1.len());
        for ((sender, part), wake) in taps.1.iter().zip(parts).zip(&self.wakes) {
            let _ = sender.send(TapCommand::Trace(part));
            wake.ring_if_armed();
        }
        reader
    }

    pub fn trace_stop(&self, id: u64) {
        for (sender, wake) in self.taps.lock().expect("taps").1.iter().zip(&self.wakes) {
            let _ = sender.send(TapCommand::Untrace { id });
            wake.ring_if_armed();
        }
    }

    /// The configuration in force and how to read its counters.
    pub fn layout(&self) -> Arc<Layout> {
        Arc::clone(&self.layout.lock().expect("layout"))
    }

    /// Stops the workers and waits for them; ports close as their workers end.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for wake in &self.wakes {
            wake.ring_if_armed();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        if let Some(o) = self.offload.take() {
            o.stop();
        }
    }

    /// Copies of flow offload's tcx links, by interface index (`FlowOffload::links`).
    pub fn offload_links(&self) -> Vec<(u32, std::os::fd::OwnedFd)> {
        self.offload.as_ref().map(FlowOffload::links).unwrap_or_default()
    }

    /// Sums a counter over all workers, and what the kernel forwarded for them.
    pub fn sum(&self, f: impl Fn(&WorkerCounters) -> u64) -> u64 {
        self.counters.iter().chain(self.offload.as_ref().map(|o| &o.counters)).map(|c| f(c)).sum()
    }

    /// A counter of what the kernel forwarded alone (flow offload; 0 without it).
    pub fn offloaded(&self, f: impl Fn(&WorkerCounters) -> u64) -> u64 {
        self.offload.as_ref().map_or(0, |o| f(&o.counters))
    }

    /// What the kernel forwarded by (VR id, exit port): (packets, bytes).
    pub fn offloaded_exits(&self) -> HashMap<(u16, u16), (u64, u64)> {
        self.offload.as_ref().map(|o| o.exits.snapshot()).unwrap_or_default()
    }

    /// Brings the counters of offloaded flows up to date; a statistics reader calls it first.
    pub fn refresh_offloaded(&self) {
        if let Some(o) = &self.offload {
            o.harvest();
        }
    }

    /// Exception counts of a VR (by id), by name.
    pub fn exceptions(&self, vr: u16) -> Vec<(&'static str, u64)> {
        Exception::ALL.iter().map(|e| (e.name(), self.sum(|c| c.vrs[vr as usize].exceptions[*e as usize].get()))).collect()
    }

    /// Counts of a VR's (by id) packets dropped as a router must, by reason.
    pub fn drops(&self, vr: u16) -> Vec<(&'static str, u64)> {
        VrDrop::ALL.iter().map(|d| (d.name(), self.sum(|c| c.vrs[vr as usize].drops[*d as usize].get()))).collect()
    }
}

/// The flow offload of `config`'s ports, with every worker's receive socket of each (a port
/// any worker's instance of has none offloads nothing); `None` (logged) where the kernel
/// refuses its programs.
fn open_offload(config: &Config, ports_of_worker: &[(Vec<Box<dyn Port>>, PacketPool)]) -> Option<FlowOffload> {
    let mut sockets: Vec<Vec<(std::os::fd::OwnedFd, RxClass)>> = (0..config.ports.len()).map(|_| Vec::new()).collect();
    for p in 0..config.ports.len() {
        let each: Option<Vec<Vec<_>>> = ports_of_worker
            .iter()
            .map(|(ports, _)| {
                let own = ports[p].rx_sockets();
                let copies: Option<Vec<_>> = own.iter().map(|(fd, class)| Some((fd.try_clone_to_owned().ok()?, *class))).collect();
                copies.filter(|c| !c.is_empty())
            })
            .collect();
        sockets[p] = each.map(|e| e.into_iter().flatten().collect()).unwrap_or_default();
    }
    let counters = Arc::new(WorkerCounters::new(config.ports.len(), MAX_VRS));
    match FlowOffload::open(config, counters, sockets) {
        Ok(o) => o,
        Err(e) => {
            tracing::warn!("flow offload off: the kernel refused its programs ({e}); TCP flows stay in the fast path");
            None
        }
    }
}

/// Drivers whose port is a Linux interface that may be deleted under it (a TAP port holds its
/// device; pcap and memory ports have none).
fn kernel_interface(driver: Driver) -> bool {
    matches!(driver, Driver::AfPacket | Driver::AfXdp)
}

/// The MTU a VR interface has: its `mtu:`, else its port's (`port_mtu`).
pub fn vr_interface_mtu(config: &Config, iface: &InterfaceConfig) -> u32 {
    iface.mtu.unwrap_or_else(|| port_mtu(&config.ports[iface.port]))
}
