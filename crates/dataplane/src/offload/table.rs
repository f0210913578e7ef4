//! The table thread: writes offered flows into the kernel's table, empties it when told, removes
//! idle flows, and adds what the kernel counted to the offload's counters. It sleeps while the
//! table is empty, so an idle node pays nothing for it.

use super::entry::{FlowAction, FlowKey, FlowTally, VALUE_LEN};
use super::hooks::PortHooks;
use super::{Command, Commands, Exits, Offer, Shared};
use crate::bpf_sys;
use crate::counters::WorkerCounters;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

/// How often the thread looks at the kernel's tallies while flows are offloaded (a statistics
/// reader asks for them at once: `FlowOffload::harvest`); a lookup per flow each time.
const TICK: Duration = Duration::from_secs(1);
/// A flow without a packet for this long leaves the table.
const IDLE_NS: u64 = 2_000_000_000;

struct Flow {
    vr: u16,
    out_port: u16,
    installed_ns: u64,
    /// The kernel's tallies as last added to the counters.
    seen: FlowTally,
}

pub(super) struct FlowTable {
    /// The IPv4 and IPv6 flow tables.
    flows_maps: [OwnedFd; 2],
    armed_map: OwnedFd,
    flows: HashMap<FlowKey, Flow>,
    /// `[port]`: the kernel side of each port that offloads, attached while the port is armed.
    ports: Vec<Option<PortHooks>>,
    /// `[port]`: flows coming in there (the port is armed while any do).
    armed: Vec<usize>,
    tallies: Tallies,
    shared: Arc<Shared>,
}

/// Where the kernel's tallies go; this thread is their only writer.
pub(super) struct Tallies {
    pub counters: Arc<WorkerCounters>,
    pub exits: Arc<Exits>,
}

impl FlowTable {
    pub(super) fn new(
        flows_maps: [OwnedFd; 2],
        armed_map: OwnedFd,
        ports: Vec<Option<PortHooks>>,
        tallies: Tallies,
        shared: Arc<Shared>,
    ) -> FlowTable {
        FlowTable { flows_maps, armed_map, flows: HashMap::new(), armed: vec![0; ports.len()], ports, tallies, shared }
    }

    pub(super) fn run(mut self, commands: Commands) {
        // Before any flow: see `hooks` for why. A port that fails here tries again at its first flow.
        for (p, hooks) in self.ports.iter_mut().enumerate() {
            if let Some(Err(e)) = hooks.as_mut().map(PortHooks::attach_program) {
                tracing::warn!("flow offload: cannot attach to port {p}'s interface: {e}");
            }
        }
        loop {
            let next = if self.flows.is_empty() {
                commands.recv().map_err(|_| RecvTimeoutError::Disconnected)
            } else {
                commands.recv_timeout(TICK)
            };
            match next {
                Ok(Command::Offer(offer)) => self.install(offer),
                Ok(Command::Flush { fresh }) => {
                    self.remove_where(|_, _| true);
                    // This thread is the offload counters' only writer, so it may zero them.
                    for &vr in &fresh {
                        self.tallies.counters.vrs[usize::from(vr)].reset();
                    }
                    self.tallies.exits.forget(&fresh);
                }
                Ok(Command::Harvest(done)) => {
                    self.harvest();
                    let _ = done.send(());
                }
                Ok(Command::Stop) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => self.tick(),
            }
        }
        if !self.shared.keep_flows.load(Ordering::SeqCst) {
            self.remove_where(|_, _| true);
        }
    }

    fn install(&mut self, offer: Offer) {
        if self.shared.captures.load(Ordering::SeqCst) != 0
            || self.flows.contains_key(&offer.key)
            || self.flows.len() >= super::MAX_FLOWS as usize
        {
            return;
        }
        let (in_port, out_port) = (offer.key.port as usize, usize::from(offer.out_port));
        // A port whose interface was replaced since pearld opened it offloads no more.
        let usable = |p: usize| matches!(self.ports.get(p), Some(Some(h)) if !h.is_gone());
        if !usable(in_port) || !usable(out_port) {
            return;
        }
        let out_ifindex = self.ports[out_port].as_ref().expect("usable").ifindex();
        let first = self.armed[in_port] == 0;
        if first {
            if let Err(e) = self.ports[in_port].as_mut().expect("usable").attach() {
                tracing::warn!("flow offload: cannot attach to port {in_port}'s interface: {e}");
                return;
            }
        }
        let action = FlowAction { out_ifindex, dst_mac: offer.dst_mac, src_mac: offer.src_mac };
        let map = self.map(&offer.key);
        if let Err(e) = offer.key.with_bytes(|k| bpf_sys::map_update(map, k, &action.bytes(), bpf_sys::UPDATE_NOEXIST)) {
            tracing::debug!("flow offload: a flow of VR {} was not offloaded: {e}", offer.vr);
            if first {
                self.ports[in_port].as_mut().expect("usable").detach();
            }
            return;
        }
        // Set before the port is armed, so that a table change from now on empties the table.
        self.shared.active.store(true, Ordering::SeqCst);
        let flow = Flow { vr: offer.vr, out_port: offer.out_port, installed_ns: monotonic_ns(), seen: FlowTally::default() };
        self.flows.insert(offer.key, flow);
        self.armed[in_port] += 1;
        if first {
            self.arm(in_port, true);
        }
    }

    /// Every tick: what the kernel counted, idle flows out, and flows through an interface that
    /// was replaced out (the port offloads no more).
    fn tick(&mut self) {
        self.harvest();
        let now = monotonic_ns();
        self.ports.iter_mut().flatten().for_each(|h| h.check(now));
        let lost: Vec<bool> = self.ports.iter().map(|h| h.as_ref().is_some_and(PortHooks::is_gone)).collect();
        self.remove_where(|k, f| {
            let last = if f.seen.last_ns == 0 { f.installed_ns } else { f.seen.last_ns };
            now.saturating_sub(last) > IDLE_NS || lost[k.port as usize] || lost[usize::from(f.out_port)]
        });
    }

    fn harvest(&mut self) {
        let mut value = [0u8; VALUE_LEN];
        for (key, flow) in &mut self.flows {
            let map = &self.flows_maps[key.family as usize];
            if !matches!(key.with_bytes(|k| bpf_sys::map_lookup(map, k, &mut value)), Ok(true)) {
                continue;
            }
            let now = FlowTally::of(&value);
            add(&self.tallies, key, flow, now);
            flow.seen = now;
        }
    }

    fn remove_where(&mut self, doomed: impl Fn(&FlowKey, &Flow) -> bool) {
        let keys: Vec<FlowKey> = self.flows.iter().filter(|(k, f)| doomed(k, f)).map(|(k, _)| *k).collect();
        if keys.is_empty() {
            return;
        }
        let mut value = [0u8; VALUE_LEN];
        for key in keys {
            let mut flow = self.flows.remove(&key).expect("listed");
            let in_port = key.port as usize;
            self.armed[in_port] -= 1;
            if self.armed[in_port] == 0 {
                self.arm(in_port, false);
                if let Some(hooks) = self.ports[in_port].as_mut() {
                    hooks.detach();
                }
            }
            // Its last tallies, then out: frames between the two are counted by nobody, which
            // a flow that is idle or being replaced hardly has. A frame the socket filter
            // refused just before the deletion and tc then finds no entry for is lost (the
            // router's own stack does not forward): at most a frame or two of a live flow, which
            // TCP sends again.
            if let Ok(true) = key.with_bytes(|k| bpf_sys::map_lookup(self.map(&key), k, &mut value)) {
                let now = FlowTally::of(&value);
                add(&self.tallies, &key, &flow, now);
                flow.seen = now;
            }
            let _ = key.with_bytes(|k| bpf_sys::map_delete(self.map(&key), k));
        }
        self.shared.active.store(!self.flows.is_empty(), Ordering::SeqCst);
        self.shared.removals.fetch_add(1, Ordering::Release);
    }

    fn map(&self, key: &FlowKey) -> &OwnedFd {
        &self.flows_maps[key.family as usize]
    }

    fn arm(&self, port: usize, on: bool) {
        if let Err(e) =
            bpf_sys::map_update(&self.armed_map, &(port as u32).to_ne_bytes(), &u32::from(on).to_ne_bytes(), bpf_sys::UPDATE_ANY)
        {
            tracing::warn!("flow offload: cannot {} port {port}: {e}", if on { "arm" } else { "disarm" });
        }
    }
}

/// Adds what the kernel counted for `flow` since `flow.seen` to the counters: the VR's received
/// and forwarded, the ports' received and sent, the VR's by exit port.
fn add(tallies: &Tallies, key: &FlowKey, flow: &Flow, now: FlowTally) {
    let counters = &tallies.counters;
    let packets = now.packets.saturating_sub(flow.seen.packets);
    let bytes = now.bytes.saturating_sub(flow.seen.bytes);
    if packets == 0 {
        return;
    }
    let vr = &counters.vrs[usize::from(flow.vr)];
    vr.rx_packets.add(packets);
    vr.rx_bytes.add(bytes);
    vr.forwarded_packets.add(packets);
    vr.forwarded_bytes.add(bytes);
    vr.offloaded_packets.add(packets);
    vr.offloaded_bytes.add(bytes);
    let (rx, tx) = (&counters.ports[key.port as usize], &counters.ports[usize::from(flow.out_port)]);
    rx.rx_packets.add(packets);
    rx.rx_bytes.add(bytes);
    tx.tx_packets.add(packets);
    tx.tx_bytes.add(bytes);
    tallies.exits.add(flow.vr, flow.out_port, packets, bytes);
}

/// CLOCK_MONOTONIC in nanoseconds: the clock whose last tick `bpf_ktime_get_coarse_ns` reads.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the timespec passed.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
