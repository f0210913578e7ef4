//! Flow offload to the kernel (`node.flow_offload`, on by default): the room where a fast VR's
//! bulk TCP flows leave user space once the fast path has routed them, as Open vSwitch hands
//! flows to its kernel datapath.
//!
//! Why: a host with default offloads sends TCP through a veth as GSO super-packets of up to
//! 64 KiB. The kernel router forwards such a super-packet by passing a pointer; PEARL's port
//! costs two copies of it (into the receive ring, out of the send call), which holds one TCP
//! stream to about half the kernel's rate. An established TCP flow the fast path forwarded is
//! offered here (both directions: the data and its acknowledgements; SYN, FIN and RST segments
//! offer nothing, so a SYN flood fills no table); the table thread writes it into a kernel hash
//! table that a tcx program on the port's interface reads, so its next frames are forwarded in
//! the kernel, whole and uncopied, with the fast path's own decision (egress interface,
//! next-hop MACs, TTL −1).
//!
//! What keeps it correct:
//! - Only what the fast path decides from addresses alone is offloaded: IP-routing fast VRs
//!   without match rules, NAT, leaks, rate limits, resources or impairments, between packet
//!   ports without a rate or opaque key, where no frame that comes in can be too big to leave,
//!   and never while a capture runs. Any other frame (TTL 1, options, fragments, a bad header
//!   checksum, other protocols) takes PEARL's path as before: the kernel programs test exactly
//!   that (`programs`).
//! - A decision never outlives what it was made from: any change to a VR's tables or to the
//!   configuration empties the table, after the workers passed a quiescent point, so no offer
//!   made from older tables can arrive after it; flows idle for two seconds are removed.
//! - The kernel counts each flow's frames and bytes; the table thread adds them to the VR's
//!   and ports' counters (`counters`) and by VR and exit port (`exits`, for queue rows), so
//!   statistics include offloaded traffic.

mod entry;
mod exits;
mod hooks;
mod programs;
mod table;

pub use entry::{Family, FlowKey};
pub use exits::Exits;

use crate::bpf_sys;
use crate::counters::WorkerCounters;
use crate::port::{receives_through, RxClass};
use pearl_control::{Config, Driver, PortConfig, VrConfig, VrKind};
use pearl_tables::TableWatch;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Flows the kernel table holds at most.
const MAX_FLOWS: u32 = 16_384;
/// Offers waiting for the table thread; more are dropped (and made again by later frames).
const OFFER_DEPTH: usize = 1024;

/// What the fast path asks for: flow `key` of VR `vr` leaves by port `out_port` as `action`
/// says (its `out_ifindex` is filled in by the table thread).
#[derive(Clone, Copy, Debug)]
pub struct Offer {
    pub vr: u16,
    pub key: FlowKey,
    pub out_port: u16,
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
}

pub(crate) enum Command {
    Offer(Offer),
    /// Something a flow's decision was made from changed: empty the table, and zero the
    /// counters of the VR ids in `fresh` (VRs made anew under an id another one had).
    Flush {
        fresh: Vec<u16>,
    },
    /// Add what the kernel counted to the counters now, then answer.
    Harvest(SyncSender<()>),
    Stop,
}

/// State both the data plane and the table thread read.
#[derive(Default)]
pub(crate) struct Shared {
    /// Captures running: offers are refused meanwhile (a capture must see every frame).
    pub captures: AtomicUsize,
    /// The table holds flows: a table change must empty it.
    pub active: AtomicBool,
    /// Bumped whenever flows leave the table, so that workers forget what they offered.
    pub removals: AtomicU64,
    /// The kernel's table keeps its flows when the offload stops (`FlowOffload::links`).
    pub keep_flows: AtomicBool,
}

/// The data plane's handle on the offload.
pub struct FlowOffload {
    commands: SyncSender<Command>,
    shared: Arc<Shared>,
    /// `[port]`: whether the port offloads.
    ports: Vec<bool>,
    /// What the kernel forwarded, in the shape of a worker's counters (summed with theirs).
    pub counters: Arc<WorkerCounters>,
    /// The same by VR and exit port, for the VRs' queue rows.
    pub exits: Arc<Exits>,
    thread: Option<JoinHandle<()>>,
    links: hooks::KeptLinks,
}

impl FlowOffload {
    /// Builds the kernel tables and the programs of every port that may offload (`sockets[p]`:
    /// duplicates of each worker's receive socket on port `p`, none for a port without one),
    /// and starts the table thread. `Ok(None)` when no port may (or the configuration turns it
    /// off); an error when the kernel refuses its programs, which the caller logs and runs
    /// without.
    pub fn open(
        config: &Config,
        counters: Arc<WorkerCounters>,
        mut sockets: Vec<Vec<(OwnedFd, RxClass)>>,
    ) -> io::Result<Option<FlowOffload>> {
        let offloads: Vec<bool> = (0..config.ports.len())
            .map(|p| port_may_offload(&config.ports[p]) && !sockets[p].is_empty() && !has_upper_device(&config.ports[p].interface))
            .collect();
        if !config.node.flow_offload || !offloads.contains(&true) {
            return Ok(None);
        }
        let flows = |family: Family, label: &[u8]| {
            bpf_sys::map_create(bpf_sys::MAP_TYPE_HASH, family.layout().len as u32, entry::VALUE_LEN as u32, MAX_FLOWS, label)
        };
        let (flows_v4, flows_v6) = (flows(Family::V4, b"pearl_flows4")?, flows(Family::V6, b"pearl_flows6")?);
        let armed = bpf_sys::map_create(bpf_sys::MAP_TYPE_ARRAY, 4, 4, config.ports.len() as u32, b"pearl_armed")?;
        let maps = programs::Maps { armed: bpf_sys::raw(&armed), flows_v4: bpf_sys::raw(&flows_v4), flows_v6: bpf_sys::raw(&flows_v6) };
        let mut hooks = Vec::new();
        let links = hooks::KeptLinks::default();
        for (p, port) in config.ports.iter().enumerate() {
            if !offloads[p] {
                hooks.push(None);
                continue;
            }
            let build = |side| programs::build(side, p as u32, maps);
            let mut classes: Vec<RxClass> = Vec::new();
            for (_, class) in &sockets[p] {
                if !classes.contains(class) {
                    classes.push(*class);
                }
            }
            let filters = classes
                .into_iter()
                .map(|c| {
                    let program = build(programs::Side::SocketFilter(c));
                    Ok((c, bpf_sys::prog_load(bpf_sys::PROG_TYPE_SOCKET_FILTER, 0, &program, b"pearl_flow_sk")?))
                })
                .collect::<io::Result<Vec<_>>>()?;
            let redirect = bpf_sys::prog_load(bpf_sys::PROG_TYPE_SCHED_CLS, 0, &build(programs::Side::Redirect), b"pearl_flow_tc")?;
            hooks.push(Some(hooks::PortHooks::new(
                &port.interface,
                filters,
                redirect,
                std::mem::take(&mut sockets[p]),
                Arc::clone(&links),
            )?));
        }
        let ports = offloads;
        let (commands, received) = sync_channel(OFFER_DEPTH);
        let shared = Arc::new(Shared::default());
        let exits = Arc::new(Exits::default());
        let tallies = table::Tallies { counters: Arc::clone(&counters), exits: Arc::clone(&exits) };
        let table = table::FlowTable::new([flows_v4, flows_v6], armed, hooks, tallies, Arc::clone(&shared));
        let thread = std::thread::Builder::new().name("pearl-offload".into()).spawn(move || table.run(received))?;
        Ok(Some(FlowOffload { commands, shared, ports, counters, exits, thread: Some(thread), links }))
    }

    /// Copies of the ports' tcx links attached so far, by interface index. Held by a process
    /// that outlives pearld (the TAP holder), they keep its offloaded flows forwarding in the
    /// kernel, with the decisions of when it stopped, until the next pearld closes them: from
    /// now on, stopping leaves the flows in the kernel's table.
    pub fn links(&self) -> Vec<(u32, OwnedFd)> {
        self.shared.keep_flows.store(true, Ordering::SeqCst);
        let links = self.links.lock().unwrap_or_else(|e| e.into_inner());
        links.iter().filter_map(|(ifindex, fd)| Some((*ifindex, fd.try_clone().ok()?))).collect()
    }

    /// Which ports offload, by index.
    pub fn ports(&self) -> Vec<bool> {
        self.ports.clone()
    }

    /// What a worker offers flows through.
    pub fn offers(&self) -> Offers {
        Offers { commands: self.commands.clone(), shared: Arc::clone(&self.shared), recent: Box::new([0; RECENT]), removals: 0 }
    }

    /// What a VR's tables tell when they change.
    pub fn watch(&self) -> Box<dyn TableWatch> {
        Box::new(OffloadWatch { commands: self.commands.clone(), shared: Arc::clone(&self.shared) })
    }

    /// Empties the table and zeroes the counters of VR ids `fresh`; the caller has made sure
    /// that no worker still decides from what changed (the data plane calls it once every
    /// worker runs a new plan).
    pub fn flush(&self, fresh: Vec<u16>) {
        let _ = self.commands.send(Command::Flush { fresh });
    }

    /// A capture starts or stops: none of the flows it could see may stay in the kernel.
    pub fn capture(&self, running: bool) {
        if running {
            self.shared.captures.fetch_add(1, Ordering::SeqCst);
            self.flush(Vec::new());
        } else {
            self.shared.captures.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Brings the counters up to what the kernel counted (for a statistics reader).
    pub fn harvest(&self) {
        if !self.shared.active.load(Ordering::Relaxed) {
            return;
        }
        let (tx, rx) = sync_channel(1);
        if self.commands.send(Command::Harvest(tx)).is_ok() {
            let _ = rx.recv_timeout(std::time::Duration::from_millis(200));
        }
    }

    pub fn stop(mut self) {
        let _ = self.commands.send(Command::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FlowOffload {
    fn drop(&mut self) {
        let _ = self.commands.try_send(Command::Stop);
    }
}

/// Whether frames of `port` can be offloaded: a port that receives through a packet socket
/// (the filter sits on it; `driver: af_packet`, or `af_xdp` with `rx: af_packet`, or no driver
/// on a virtual device) on a Linux interface, with nothing PEARL must do to each frame there.
pub fn port_may_offload(port: &PortConfig) -> bool {
    matches!(port.driver, Driver::AfPacket | Driver::AfXdp)
        && receives_through(port) == Driver::AfPacket
        && port.rate_mbps.is_none()
        && port.opaque.is_none()
}

/// Whether `interface` belongs to another device (a bridge's or bond's port, a macvlan's lower
/// device): that device takes frames addressed to other MACs after tc, where the port's tcx
/// program drops them (`programs`), so such a port does not offload.
fn has_upper_device(interface: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(format!("/sys/class/net/{interface}")) else { return false };
    entries.flatten().any(|e| e.file_name().to_str().is_some_and(|n| n == "master" || n.starts_with("upper_")))
}

/// Whether the fast path's decisions for `vr`'s TCP flows depend on addresses and ports alone.
pub fn vr_may_offload(vr: &VrConfig) -> bool {
    use pearl_control::CodeOption;
    vr.kind == VrKind::Fast
        && matches!(vr.code, CodeOption::Ip | CodeOption::Ipv4 | CodeOption::Ipv6)
        && vr.plugin.is_none()
        && vr.matches.is_empty()
        && vr.nat.is_none()
        && vr.leak.is_empty()
        && vr.limits.rate_mbps.is_none()
        && vr.resources.is_empty()
        && vr.interfaces.iter().all(|i| i.impair.is_none())
}

/// Recent offers a worker remembers, so that a flow's later frames, which arrive until
/// the table thread has written it, are not offered again and again.
const RECENT: usize = 256;

/// A worker's side: offers flows, at most once per flow until flows leave the table (a flushed
/// or expired flow is offered again by its next frame). Never blocks.
pub struct Offers {
    commands: SyncSender<Command>,
    shared: Arc<Shared>,
    recent: Box<[u64; RECENT]>,
    /// `Shared::removals` when `recent` was last cleared.
    removals: u64,
}

impl Offers {
    pub fn offer(&mut self, offer: Offer) {
        if self.shared.captures.load(Ordering::Relaxed) != 0 {
            return;
        }
        let removals = self.shared.removals.load(Ordering::Acquire);
        if removals != self.removals {
            self.recent.fill(0);
            self.removals = removals;
        }
        let hash = fold(&offer.key);
        let slot = &mut self.recent[hash as usize % RECENT];
        if *slot == hash {
            return;
        }
        *slot = hash;
        // A full queue drops the offer; the flow's next frames make it again.
        if self.commands.try_send(Command::Offer(offer)).is_err() {
            *slot = 0;
        }
    }
}

/// A 64-bit digest of a key, never 0 (the empty slot).
fn fold(key: &FlowKey) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for x in key.bytes() {
        h = (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3);
    }
    h | 1
}

/// Told by a VR's tables after each change they publish (`VrTables::published`).
struct OffloadWatch {
    commands: SyncSender<Command>,
    shared: Arc<Shared>,
}

impl TableWatch for OffloadWatch {
    /// Whether the table holds flows that a change must remove.
    fn active(&self) -> bool {
        self.shared.active.load(Ordering::SeqCst)
    }

    /// Empties the table; blocks while the thread's queue is full, because a flush must not be lost.
    fn flush(&self) {
        let _ = self.commands.send(Command::Flush { fresh: Vec::new() });
    }
}

/// The receiving end, for the table thread.
pub(crate) type Commands = Receiver<Command>;
