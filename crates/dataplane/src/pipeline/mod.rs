//! The fast path a batch runs through on a worker: extract → classify (VID) → the VR's share of
//! the worker (`worker_share`) → VR program (LPM in the VR's FIB, adjacency) → actions (TTL −1
//! with incremental checksum, MAC rewrite) → output. Exceptions go to the VR's slow-path
//! channel; malformed frames are dropped and counted.
//!
//! Every stage works on the whole batch before the next starts, so that the classifier and the
//! FIBs get batches to interleave, and nothing here allocates, locks or makes a system call.
//!
//! Each stage is an `impl Pipeline` block in a file of its own, in the order a batch meets
//! them: `extract` → `classify` (whose each frame is; the unclaimed ones) → `share` →
//! `program` (with `nat`'s inbound half) → `lookup` → `source` → `action` (one function per
//! `Decision`: `forward`, and sending, copying, punting, dropping beside it) → `output`;
//! `lookahead` starts the loads each next stage will wait for, `slow_path_tx` hands exceptions
//! to the VR's kernel, `views` reads the VRs' tables.

mod action;
mod classify;
mod extract;
mod forward;
mod lookahead;
mod lookup;
mod nat;
mod offer;
mod output;
mod program;
mod share;
mod slow_path_tx;
mod source;
mod views;

pub use slow_path_tx::SlowPathTx;

use crate::capture::Taps;
use crate::counters::WorkerCounters;
use crate::nat::NatTable;
use crate::offload::Offers;
use crate::output::OutputSink;
use crate::packet::{Packet, PacketPool};
use crate::plan::table_cells::TableCells;
use crate::plan::WorkerPlan;
use crate::port::Offloads;
use crate::program::{Decision, Lookups};
use crate::punt::PuntPolicer;
use crate::slowpath::ChannelId;
use crate::vr::VrView;
use crate::worker_share::WorkerShare;
use pearl_classifier::{Classifier, Verdict};
use pearl_control::OpaqueKey;
use pearl_lookup::rcu::ReadGuard;
use pearl_wire::{FlowKey, L3Info};
use slow_path_tx::NO_CHANNEL;
use std::sync::Arc;

/// The state a worker runs the pipeline with.
pub struct Pipeline {
    /// `[vr id]`: the views of the VRs this plan has.
    vrs: Arc<[Option<VrView>]>,
    /// The views' table cells, dense.
    cells: Arc<TableCells>,
    classifier: Arc<Classifier>,
    /// For each port, the VRs with an interface on it (multicast goes to all of them).
    port_vrs: Vec<Vec<u16>>,
    slow_path: SlowPathTx,
    counters: Arc<WorkerCounters>,
    /// `[port]`: frames may carry a partial checksum the port cannot mark (AF_XDP).
    unmarked_partial: Vec<bool>,
    /// `[port]`: where the port's frames' opaque filter key is read from, if anywhere.
    opaque_keys: Vec<Option<OpaqueKey>>,
    scratch: Scratch,
    /// Active packet captures (almost always none).
    pub taps: Taps,
    /// The NAT mappings of VRs with `nat:` (this worker's alone), by VR id.
    nat: Vec<(u16, NatTable)>,
    /// Seconds since the pipeline started, as of the batch: NAT's timeouts.
    now_s: u32,
    epoch: std::time::Instant,
    /// `[vr id]`: the VR's punt-path buckets on this worker.
    punt: Vec<PuntPolicer>,
    /// What each VR's packets cost this worker, and whom it refuses while it cannot keep up.
    share: WorkerShare,
    /// Where forwarded TCP flows are offered to the kernel, and `[port]` whether the port
    /// offloads (`offload`).
    offload: Option<(Offers, Vec<bool>)>,
}

#[derive(Default)]
struct Scratch {
    /// The batch's keys and header facts, written in place by the extractor: `[..count]` are
    /// live.
    keys: Vec<FlowKey>,
    info: Vec<L3Info>,
    count: usize,
    verdicts: Vec<Option<Verdict>>,
    decisions: Vec<Decision>,
    /// The VR whose tables route each packet: its own, or the VR a leaked prefix of its
    /// destination comes from (`leak:`).
    tables: Vec<u16>,
    /// The FIB lookups the programs asked for; then their addresses and results in the same
    /// order.
    lookups: Lookups,
    addrs4: Vec<u32>,
    addrs6: Vec<u128>,
    hops: Vec<u32>,
    /// Forwarded packets bound for one queue, handed to the output in one call, and what it
    /// refused.
    run: Vec<Packet>,
    refused: Vec<Packet>,
    /// (port, VR, queue) of the packets bound for the output, for `prefetch_output`.
    bound: Vec<(u16, u16, u16)>,
}

impl Pipeline {
    /// A pipeline with no VRs: every frame is unclaimed until the first plan arrives.
    pub fn new(counters: Arc<WorkerCounters>) -> Pipeline {
        // Sized for a receive batch now, so that not even the first batch allocates.
        let batch = crate::batch::RX_BATCH;
        let scratch = Scratch {
            run: Vec::with_capacity(batch),
            refused: Vec::with_capacity(batch),
            bound: Vec::with_capacity(batch),
            ..Scratch::default()
        };
        Pipeline {
            vrs: Arc::new([]),
            cells: Arc::default(),
            classifier: Arc::new(Classifier::new()),
            port_vrs: vec![Vec::new(); counters.ports.len()],
            unmarked_partial: vec![false; counters.ports.len()],
            opaque_keys: vec![None; counters.ports.len()],
            slow_path: SlowPathTx::default(),
            counters,
            scratch,
            taps: Taps::default(),
            nat: Vec::new(),
            now_s: 0,
            epoch: std::time::Instant::now(),
            punt: Vec::new(),
            share: WorkerShare::default(),
            offload: None,
        }
    }

    /// Offers the established TCP flows it forwards between offloading ports to the kernel.
    pub fn with_offload(mut self, offload: Option<(Offers, Vec<bool>)>) -> Pipeline {
        self.offload = offload;
        self
    }

    /// Fills the opaque filter field of each port's frames as `keys` (`[port]`) says.
    pub fn with_opaque_keys(mut self, keys: Vec<Option<OpaqueKey>>) -> Pipeline {
        self.opaque_keys = keys;
        self
    }

    /// Learns what each port's device does with offload state (`[port]`).
    pub fn set_port_offloads(&mut self, offloads: &[Offloads]) {
        self.unmarked_partial = offloads.iter().map(|o| o.rx_unmarked_partial).collect();
    }

    /// Takes a worker plan's configuration-derived parts (between batches); returns the parts
    /// they replace, for the worker to retire.
    pub fn apply(&mut self, plan: &mut WorkerPlan) -> impl Send + 'static {
        let views = std::mem::replace(&mut self.vrs, Arc::clone(&plan.views));
        let cells = std::mem::replace(&mut self.cells, Arc::clone(&plan.cells));
        self.punt.resize(self.vrs.len(), PuntPolicer::default());
        self.share.resize(self.vrs.len());
        let classifier = std::mem::replace(&mut self.classifier, Arc::clone(&plan.classifier));
        self.port_vrs = std::mem::take(&mut plan.port_vrs);
        let sp = &mut self.slow_path;
        // Between batches every channel is flushed, so no index in `unflushed` goes stale.
        debug_assert!(sp.unflushed.is_empty());
        // Channel ids are handed out in increasing order and new channels come last, so the
        // list stays sorted by id: found by bisection, without hashing thousands on the worker's time.
        sp.channels.retain(|(id, _)| plan.drop_channels.binary_search(id).is_err());
        sp.channels.append(&mut plan.add_channels);
        debug_assert!(sp.channels.is_sorted_by_key(|(id, _)| *id));
        let slot = |c: ChannelId| sp.channels.binary_search_by_key(&c, |(id, _)| *id).ok().map(|i| i as u16);
        sp.vr_channel = plan.vr_channel.iter().map(|c| c.and_then(slot).unwrap_or(NO_CHANNEL)).collect();
        sp.shared = std::mem::take(&mut plan.shared);
        // A reservation that stays keeps its mappings.
        let mut old = std::mem::take(&mut self.nat);
        for &(vr, config, port) in &plan.nat {
            let kept = old.iter().position(|(v, t)| *v == vr && t.config == config && t.port == port);
            self.nat.push(match kept {
                Some(k) => old.swap_remove(k),
                None => (vr, NatTable::new(config, port)),
            });
        }
        (views, cells, classifier, old)
    }

    /// Runs a batch received on `in_port` to completion; drains `batch`.
    pub fn run(&mut self, guard: &ReadGuard<'_>, in_port: u16, batch: &mut Vec<Packet>, pool: &mut PacketPool, out: &mut impl OutputSink) {
        let pc = &self.counters.ports[in_port as usize];
        pc.rx_packets.add(batch.len() as u64);
        pc.rx_bytes.add(batch.iter().map(|p| p.len() as u64).sum());
        self.extract_stage(in_port, batch, pool);
        if batch.is_empty() {
            return;
        }
        if !self.nat.is_empty() {
            self.now_s = self.epoch.elapsed().as_secs() as u32;
        }
        let s = &mut self.scratch;
        s.verdicts.clear();
        s.verdicts.resize(s.count, None);
        self.classifier.lookup_batch(&s.keys[..s.count], &mut s.verdicts);
        let spread = self.spread_over_vrs();
        if spread {
            self.prefetch_vr_state();
        }
        if self.vr_stage() < batch.len() {
            self.unclaimed_stage(in_port, batch, pool);
        }
        self.share_stage(batch, pool);
        if spread {
            self.prefetch_vr_tables(guard);
        }
        self.program_stage(guard, batch);
        if spread {
            self.prefetch_next_hop_tables(guard);
        }
        self.lookup_stage(guard);
        if spread {
            self.prefetch_next_hops(guard);
        }
        self.source_stage(guard, batch);
        if spread {
            self.prefetch_output(guard, out);
        }
        self.action_stage(guard, batch, pool, out);
        let sp = &mut self.slow_path;
        for ch in sp.unflushed.drain(..) {
            sp.channels[ch as usize].1.flush();
        }
        if !self.taps.is_empty() {
            self.taps.flush();
        }
    }
}
