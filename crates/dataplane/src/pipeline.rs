//! The fast path a batch runs through on a worker: extract → classify (VID) → the VR's share of
//! the worker (`worker_share`) → VR program (LPM in the VR's FIB, adjacency) → actions (TTL −1
//! with incremental checksum, MAC rewrite) → output. Exceptions go to the VR's slow-path
//! channel; malformed frames are dropped and counted.
//!
//! Every stage works on the whole batch before the next starts, so that the classifier and the
//! FIBs get batches to interleave, and nothing here allocates, locks or makes a system call.

use crate::capture::{CapturePoint, Taps};
use crate::counters::{Exception, VrDrop, WorkerCounters};
use crate::nat::{NatTable, Translation};
use crate::offload::{Family, FlowKey as OffloadKey, Offer, Offers};
use crate::opaque;
use crate::output::OutputSink;
use crate::packet::{Packet, PacketPool};
use crate::plan::WorkerPlan;
use crate::port::Offloads;
use crate::prefetch::prefetch;
use crate::program::{Decision, Lookups, Run, RunTables};
use crate::punt::{is_neighbor_discovery, punt_class, PuntClass, PuntPolicer, PRIORITY_RESERVE};
use crate::slowpath::ChannelId;
use crate::slowpath::{FrameMeta, FrameProducer};
use crate::table_cells::TableCells;
use crate::vr::SHARED_VR;
use crate::vr::{Urpf, VrView};
use crate::worker_share::WorkerShare;
use pearl_classifier::{Classifier, Verdict, VrId};
use pearl_control::OpaqueKey;
use pearl_lookup::fib::{AddrBits, FibView, MISS};
use pearl_lookup::rcu::{RcuCell, ReadGuard};
use pearl_tables::nexthop::{Adjacency, NextHopTable, SourceRoute};
use pearl_tables::LocalSources;
use pearl_wire::{
    detect_partial_checksum, extract_into, ip_proto, EthernetFrame, Field, FlowKey, Gso, Ipv4Packet, Ipv6Packet, L3Info, L3Kind,
};
use std::sync::Arc;

/// `SlowPathTx::vr_channel` of a VR without a channel.
const NO_CHANNEL: u16 = u16::MAX;

/// A worker's side of the slow path.
#[derive(Default)]
pub struct SlowPathTx {
    /// One ring per channel.
    pub channels: Vec<(ChannelId, FrameProducer)>,
    /// `[vr]`: index of the VR's channel in `channels`.
    pub vr_channel: Vec<u16>,
    /// `[vr]`: a `shared` VR, reachable through [`SHARED_VR`].
    pub shared: Vec<bool>,
    /// Indices in `channels` written since the last flush: a batch publishes those alone, not
    /// every VR's channel.
    pub unflushed: Vec<u16>,
}

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

    /// Frames claimed by the shared-VR rule belong to the VR their destination MAC names; a
    /// verdict for a VR this plan does not have (none, by construction) counts as no verdict.
    /// Returns how many frames are claimed.
    fn vr_stage(&mut self) -> usize {
        let s = &mut self.scratch;
        let shared = &self.slow_path.shared;
        let mut claimed = 0;
        for (v, key) in s.verdicts[..s.count].iter_mut().zip(&s.keys) {
            let Some(verdict) = v.as_mut() else { continue };
            if verdict.vr == SHARED_VR {
                let dst = key.eth_dst();
                let vr = usize::from(u16::from_le_bytes([dst[1], dst[2]]));
                match shared.get(vr) {
                    Some(true) => verdict.vr = VrId(vr as u16),
                    _ => *v = None,
                }
            } else if !matches!(self.vrs.get(verdict.vr.0 as usize), Some(Some(_))) {
                *v = None;
            }
            claimed += usize::from(v.is_some());
        }
        claimed
    }

    /// Whether the batch holds several VRs' packets (then each may touch another VR's cold
    /// state); a batch is mostly one VR's.
    fn spread_over_vrs(&self) -> bool {
        let v = &self.scratch.verdicts[..self.scratch.count];
        v.first().map(|v| v.map(|v| v.vr)) != v.last().map(|v| v.map(|v| v.vr))
    }

    /// The VRs of the batch's claimed packets, each once per run of its packets, with the
    /// position of the run's first packet.
    fn batch_vrs(&self) -> impl Iterator<Item = (usize, u16)> + '_ {
        let v = &self.scratch.verdicts[..self.scratch.count];
        v.iter()
            .enumerate()
            .filter(|&(i, x)| i == 0 || v[i - 1].map(|v| v.vr) != x.map(|v| v.vr))
            .filter_map(|(i, x)| x.map(|v| (i, v.vr.0)))
    }

    /// Starts loading what every stage reads of each VR of the batch: its view (which
    /// `vr_stage` reads first), counters, share account, program state and the cells of its
    /// tables. The prefetches are staged like the pointers they follow: here the VR's own
    /// lines; its tables once their cells have arrived, in `prefetch_vr_tables`; and so on down
    /// to the next hops the lookups named, in `prefetch_next_hops`.
    fn prefetch_vr_state(&self) {
        for (i, vr) in self.batch_vrs() {
            self.cells.prefetch(vr, self.scratch.info[i].kind);
            if let Some(Some(view)) = self.vrs.get(vr as usize) {
                prefetch(view);
            }
            if let Some(counters) = self.counters.vrs.get(vr as usize) {
                counters.prefetch_hot();
            }
            self.share.prefetch(vr);
        }
    }

    /// Starts loading each VR's routes of the family its packets are, their cell having
    /// arrived.
    fn prefetch_vr_tables(&self, guard: &ReadGuard<'_>) {
        for (i, vr) in self.batch_vrs() {
            let view = present(&self.vrs, vr);
            match self.scratch.info[i].kind {
                L3Kind::Ipv4 => view.fib4.prefetch(guard),
                L3Kind::Ipv6 => view.fib6.prefetch(guard),
                L3Kind::Arp | L3Kind::Other => {}
            }
        }
    }

    /// Starts loading each VR's next-hop table, its cell having arrived.
    fn prefetch_next_hop_tables(&self, guard: &ReadGuard<'_>) {
        for (_, vr) in self.batch_vrs() {
            prefetch(present(&self.vrs, vr).adjacencies.load(guard));
        }
    }

    /// Starts loading the next-hop entries the batch's destinations were routed to.
    fn prefetch_next_hops(&self, guard: &ReadGuard<'_>) {
        let s = &self.scratch;
        let mut next_hops = None;
        for (d, &table) in s.decisions.iter().zip(&s.tables) {
            if let Decision::Forward { nh } = *d {
                next_hops_of(&self.vrs, guard, &mut next_hops, table).prefetch(nh);
            }
        }
    }

    /// Starts loading the output queues the batch's packets are bound for: each queue's state,
    /// then, in a second pass (that state having arrived), the slot each packet will take. The
    /// action stage resolves each next hop again, from entries this pass brought into cache.
    fn prefetch_output(&mut self, guard: &ReadGuard<'_>, out: &impl OutputSink) {
        let s = &mut self.scratch;
        s.bound.clear();
        let mut next_hops = None;
        for (i, decision) in s.decisions.iter().enumerate() {
            let port = match *decision {
                Decision::Send { port } => port,
                Decision::Forward { nh } => match next_hops_of(&self.vrs, guard, &mut next_hops, s.tables[i]).resolve(nh, &s.keys[i]) {
                    Some(&Adjacency::Forward { port, .. }) => port,
                    _ => continue,
                },
                _ => continue,
            };
            let Some(Verdict { vr, action, .. }) = s.verdicts[i] else { continue };
            out.prefetch_queue(port, vr.0, action as u16);
            s.bound.push((port, vr.0, action as u16));
        }
        for &(port, vr, queue) in &s.bound {
            out.prefetch_tail(port, vr, queue);
        }
    }

    /// Charges the worker's time to the VRs whose packets take it (`end_batch`, `end_round`),
    /// and while it cannot keep up, drops what a VR sends beyond its share here, before the
    /// stages that cost the most. Keeps the order of what stays.
    fn share_stage(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) {
        let s = &mut self.scratch;
        let cells = &self.cells;
        if !self.share.engaged() {
            for v in &s.verdicts[..s.count] {
                self.share.admit(v.expect("claimed").vr.0, || 0);
            }
            return;
        }
        let mut kept = 0;
        for i in 0..s.count {
            let vr = s.verdicts[i].expect("claimed").vr.0;
            // Routing protocols and neighbour discovery go on to the punt path's own policing,
            // which puts them first: a VR flooding itself must keep its sessions. Asked only of
            // a frame past its VR's allowance (which then counts it as refused: a few frames of
            // a flooding VR's demand).
            let key = &s.keys[i];
            let admitted = self.share.admit(vr, || cells.share(vr))
                || s.info[i].kind == L3Kind::Arp
                || is_neighbor_discovery(key)
                || punt_class(key, Exception::Local) != PuntClass::Other;
            if admitted {
                batch.swap(kept, i);
                s.keys.swap(kept, i);
                s.info.swap(kept, i);
                s.verdicts.swap(kept, i);
                kept += 1;
                continue;
            }
            let c = &self.counters.vrs[vr as usize];
            c.rx_packets.add(1);
            c.rx_bytes.add(batch[i].len() as u64);
            c.drops[VrDrop::WorkerShare as usize].add(1);
        }
        for p in batch.drain(kept..) {
            pool.give(p);
        }
        s.count = kept;
        s.verdicts.truncate(kept);
    }

    /// Whether the worker did not keep up lately (VRs held to their shares, or a ring lost
    /// frames).
    pub fn falling_behind(&self) -> bool {
        self.share.falling_behind()
    }

    /// A receive ring lost frames: the worker counts as unable to keep up until `until_ns`.
    pub fn rings_overflowed(&mut self, until_ns: u64) {
        self.share.rings_overflowed(until_ns);
    }

    /// Charges a batch's worker time (`ns`, from the previous batch's end or the round's start)
    /// to the VRs whose packets it took.
    pub fn end_batch(&mut self, ns: u64) {
        self.share.end_batch(ns);
    }

    /// Charges the rest of a round (sending, the slow path) and renews the VRs' allowances of
    /// worker time when a window ends (`cpu_ns`: the worker thread's CPU time, read then).
    pub fn end_round(&mut self, start_ns: u64, end_ns: u64, cpu_ns: impl FnOnce() -> u64) {
        let cells = &self.cells;
        self.share.end_round(start_ns, end_ns, |vr| cells.share(vr), cpu_ns);
    }

    /// Parses every frame; malformed ones are counted by reason and dropped.
    fn extract_stage(&mut self, in_port: u16, batch: &mut Vec<Packet>, pool: &mut PacketPool) {
        let s = &mut self.scratch;
        if s.keys.len() < batch.len() {
            s.keys.resize(batch.len(), FlowKey::default());
            s.info.resize(batch.len(), L3Info::default());
        }
        // Compacts in place: good frames move down over the malformed ones, which go back
        // to the pool; a batch without malformed frames moves nothing.
        s.count = 0;
        let unmarked = self.unmarked_partial.get(in_port as usize).copied().unwrap_or(false);
        let opaque_key = self.opaque_keys.get(in_port as usize).copied().flatten();
        for i in 0..batch.len() {
            let p = &mut batch[i];
            p.in_port = in_port;
            match extract_into(p.data(), in_port, &mut s.keys[s.count], &mut s.info[s.count]) {
                Ok(()) => {
                    if let Some(k) = opaque_key {
                        s.keys[s.count].set(Field::Opaque, opaque::read(p.data(), k));
                    }
                    if unmarked && p.offload.is_plain() {
                        if let Some(o) = detect_partial_checksum(p.data(), &s.info[s.count], s.keys[s.count].ip_proto()) {
                            p.offload = o;
                        }
                    }
                    batch.swap(s.count, i);
                    s.count += 1;
                }
                Err(e) => self.counters.ports[in_port as usize].malformed[e.reason_index()].add(1),
            }
        }
        for p in batch.drain(s.count..) {
            pool.give(p);
        }
    }

    /// Frames no rule claimed: multicast and broadcast go to every VR on the port (as copies),
    /// unicast to an unknown MAC is dropped.
    fn unclaimed_stage(&mut self, in_port: u16, batch: &mut Vec<Packet>, pool: &mut PacketPool) {
        let s = &mut self.scratch;
        let mut punt_now = None;
        let mut i = 0;
        while i < batch.len() {
            if s.verdicts[i].is_some() {
                i += 1;
                continue;
            }
            let p = batch.swap_remove(i);
            let (key, info) = (s.keys[i], s.info[i]);
            s.count -= 1;
            s.keys.swap(i, s.count);
            s.info.swap(i, s.count);
            s.verdicts.swap_remove(i);
            if key.eth_dst()[0] & 1 == 0 {
                self.counters.ports[in_port as usize].unclaimed.add(1);
                pool.give(p);
                continue;
            }
            let reason = multicast_exception(&key, &info);
            let class = punt_class(&key, reason);
            for &vr in &self.port_vrs[in_port as usize] {
                let policed = !present(&self.vrs, vr).program.is_kernel_path();
                if policed && !punt_admits(&mut self.punt, &self.vrs, &self.counters, &self.epoch, &mut punt_now, (vr, class)) {
                    continue;
                }
                to_slow_path(&self.counters, &mut self.slow_path, &mut self.taps, (vr, class), reason, &p);
            }
            pool.give(p);
        }
    }

    /// Each run of one VR's packets goes to the VR's program, which decides them or asks for
    /// lookups.
    fn program_stage(&mut self, guard: &ReadGuard<'_>, batch: &mut [Packet]) {
        if !self.nat.is_empty() {
            self.nat_inbound_stage(batch);
        }
        let Scratch { keys, info, count, verdicts, decisions, tables, lookups, .. } = &mut self.scratch;
        let count = *count;
        // A packet its program leaves undecided is dropped; it is routed in its own VR's table
        // unless its program names another.
        decisions.clear();
        decisions.resize(count, Decision::Drop(VrDrop::Program));
        tables.clear();
        tables.extend(verdicts[..count].iter().map(|v| v.expect("claimed").vr.0));
        lookups.clear();
        let mut start = 0;
        while start < count {
            let vr = verdicts[start].expect("claimed").vr.0;
            let end = start + 1 + verdicts[start + 1..count].iter().take_while(|v| v.expect("claimed").vr.0 == vr).count();
            let view = present(&self.vrs, vr);
            let mut run = Run::new(
                vr,
                start,
                &mut batch[start..end],
                &keys[start..end],
                &info[start..end],
                &mut decisions[start..end],
                &mut tables[start..end],
                lookups,
                RunTables { verdicts: &verdicts[start..end], fib4: &view.fib4, fib6: &view.fib6, adjacencies: &view.adjacencies, guard },
            );
            view.program.run(&mut run);
            start = end;
        }
    }

    /// Traffic back to a VR's reserved NAT ports gets its private destination back before the
    /// VR routes it. The classifier's NAT rules brought TCP and UDP to the VR; an ICMP echo
    /// reply has no port for a rule to see and comes to whichever VR's MAC the outside host
    /// resolved the shared address to, so the mapping it answers names its VR here.
    fn nat_inbound_stage(&mut self, batch: &mut [Packet]) {
        let s = &mut self.scratch;
        for (i, p) in batch.iter_mut().enumerate().take(s.count) {
            let x = &s.info[i];
            if x.kind != L3Kind::Ipv4 || x.l4_offset.is_none() {
                continue;
            }
            let l4 = x.l4_offset.map(|o| o - x.l3_offset);
            let l3 = &p.data()[x.l3_offset..];
            let dst = u32::from_be_bytes([l3[16], l3[17], l3[18], l3[19]]);
            let Some((owner, table)) =
                self.nat.iter_mut().find(|(_, t)| t.port == p.in_port && t.address() == dst && t.claims(l3, l4, x.fragment, self.now_s))
            else {
                continue;
            };
            if let Some(v) = s.verdicts[i].as_mut() {
                if v.vr.0 != *owner {
                    *v = Verdict { vr: VrId(*owner), rule: None, action: 0 };
                }
            }
            let partial = p.offload.needs_csum();
            let l3 = &mut p.data_mut()[x.l3_offset..];
            if table.inbound(l3, l4, x.fragment, partial, self.now_s) == Translation::Done {
                let (dst, dport) =
                    (u32::from_be_bytes([l3[16], l3[17], l3[18], l3[19]]), l4.map_or(0, |o| u16::from_be_bytes([l3[o + 2], l3[o + 3]])));
                s.keys[i].set(Field::IpDst, dst.into());
                if l3[9] != ip_proto::ICMP {
                    s.keys[i].set(Field::L4Dst, dport.into());
                }
            }
        }
    }

    /// Longest-prefix match for the batch, one `lookup_batch` per VR and family.
    fn lookup_stage(&mut self, guard: &ReadGuard<'_>) {
        let s = &mut self.scratch;
        group_by_vr(&mut s.lookups.dst4);
        s.addrs4.clear();
        s.addrs4.extend(s.lookups.dst4.iter().map(|&(_, i)| s.keys[i as usize].get(Field::IpDst) as u32));
        lookup_groups(guard, &s.lookups.dst4, &s.addrs4, &mut s.hops, |vr| &present(&self.vrs, vr).fib4);
        route_decisions(&s.lookups.dst4, &s.hops, &mut s.decisions);
        group_by_vr(&mut s.lookups.dst6);
        s.addrs6.clear();
        s.addrs6.extend(s.lookups.dst6.iter().map(|&(_, i)| s.keys[i as usize].get(Field::IpDst)));
        lookup_groups(guard, &s.lookups.dst6, &s.addrs6, &mut s.hops, |vr| &present(&self.vrs, vr).fib6);
        route_decisions(&s.lookups.dst6, &s.hops, &mut s.decisions);
    }

    /// Looks up the sources of packets on their way to be forwarded: a source that is one of
    /// the VR's own addresses is a martian (as Linux's `fib_validate_source` has it), and an
    /// interface with `urpf` wants the source routed back through it (strict) or at all
    /// (loose), RFC 3704.
    fn source_stage(&mut self, guard: &ReadGuard<'_>, batch: &[Packet]) {
        let s = &mut self.scratch;
        for v6 in [false, true] {
            let jobs = if v6 { &mut s.lookups.src6 } else { &mut s.lookups.src4 };
            let (vrs, keys, decisions) = (&self.vrs, &s.keys, &mut s.decisions);
            let mut local: Option<(u16, &LocalSources)> = None;
            // Where the interface asks for uRPF, the source is looked up. Elsewhere an IPv4
            // source is checked against the VR's own addresses, from the set its tables' writer
            // keeps while it can (Linux's address-hash check), and an IPv6 one not at all.
            jobs.retain(|&(vr, i)| {
                if !matches!(decisions[i as usize], Decision::Forward { .. }) {
                    return false;
                }
                if present(vrs, vr).urpf(batch[i as usize].in_port) != Urpf::Off {
                    return true;
                }
                if v6 {
                    return false;
                }
                let src = keys[i as usize].get(Field::IpSrc) as u32;
                match cell_of(vrs, guard, &mut local, vr, |v| &v.facts.local_sources).is_local(src) {
                    Some(true) => {
                        decisions[i as usize] = Decision::Drop(VrDrop::MartianSource);
                        false
                    }
                    Some(false) => false,
                    None => true,
                }
            });
            if jobs.is_empty() {
                continue;
            }
            group_by_vr(jobs);
            if v6 {
                s.addrs6.clear();
                s.addrs6.extend(jobs.iter().map(|&(_, i)| s.keys[i as usize].get(Field::IpSrc)));
                lookup_groups(guard, jobs, &s.addrs6, &mut s.hops, |vr| &present(&self.vrs, vr).fib6);
            } else {
                s.addrs4.clear();
                s.addrs4.extend(jobs.iter().map(|&(_, i)| s.keys[i as usize].get(Field::IpSrc) as u32));
                lookup_groups(guard, jobs, &s.addrs4, &mut s.hops, |vr| &present(&self.vrs, vr).fib4);
            }
            let mut next_hops: Option<(u16, &NextHopTable)> = None;
            // A source's route is another entry than its destination's: spread over many VRs,
            // each is cold, and they are asked for together before any is read.
            if jobs.first().map(|j| j.0) != jobs.last().map(|j| j.0) {
                for (&(vr, _), &nh) in jobs.iter().zip(s.hops.iter()) {
                    if nh != MISS {
                        next_hops_of(&self.vrs, guard, &mut next_hops, vr).prefetch(nh);
                    }
                }
            }
            for (&(vr, i), &nh) in jobs.iter().zip(s.hops.iter()) {
                let port = batch[i as usize].in_port;
                let route =
                    if nh == MISS { SourceRoute::None } else { next_hops_of(&self.vrs, guard, &mut next_hops, vr).source_route(nh, port) };
                let urpf = present(&self.vrs, vr).urpf(port);
                let refused = match (route, urpf) {
                    (SourceRoute::Local, _) => Some(VrDrop::MartianSource),
                    (_, Urpf::Off) => None,
                    (SourceRoute::None, _) => Some(VrDrop::Urpf),
                    (SourceRoute::Via { through_port: false }, Urpf::Strict) => Some(VrDrop::Urpf),
                    (SourceRoute::Via { .. }, _) => None,
                };
                if let Some(d) = refused {
                    s.decisions[i as usize] = Decision::Drop(d);
                }
            }
        }
    }

    /// Applies each decision: forward (TTL −1, MAC rewrite, enqueue), send as it stands (or
    /// copies of it), hand to the slow path, or drop.
    fn action_stage(&mut self, guard: &ReadGuard<'_>, batch: &mut Vec<Packet>, pool: &mut PacketPool, out: &mut impl OutputSink) {
        let s = &mut self.scratch;
        // Batches are mostly one VR's: its next hops are looked up once per run of its packets.
        let mut next_hops: Option<(u16, &NextHopTable)> = None;
        // (port, VR, queue) of the packets in `s.run`.
        let mut run_to = (0, 0, 0);
        // The clock is read once per batch, and only by a batch with frames for the slow path.
        let mut punt_now = None;
        for (i, mut p) in batch.drain(..).enumerate() {
            let Verdict { vr, action, .. } = s.verdicts[i].expect("claimed");
            let vr = vr.0;
            if !self.taps.is_empty() {
                self.taps.offer(CapturePoint::Rx, vr, p.in_port, p.data());
            }
            let c = &self.counters.vrs[vr as usize];
            c.rx_packets.add(1);
            c.rx_bytes.add(p.len() as u64);
            let x = &s.info[i];
            // A leaked prefix's packets take the source VR's next hop, interface and MTU; they
            // stay the importing VR's for counters, queues and exceptions (its kernel, which
            // has their frames' interface, answers them).
            let table = s.tables[i];
            let reason = match s.decisions[i] {
                Decision::Slow(reason) => reason,
                Decision::Drop(d) => {
                    self.counters.vrs[vr as usize].drops[d as usize].add(1);
                    pool.give(p);
                    continue;
                }
                // Every lookup job gets a result; an unanswered one would be a route miss.
                Decision::Lookup => Exception::NoRoute,
                Decision::Send { port } => {
                    if present(&self.vrs, vr).mtu(port) == 0 {
                        self.counters.vrs[vr as usize].drops[VrDrop::ProgramBadPort as usize].add(1);
                        pool.give(p);
                        continue;
                    }
                    if !self.taps.is_empty() {
                        self.taps.offer(CapturePoint::Tx, vr, port, p.data());
                    }
                    s.gather(out, &self.counters, &mut run_to, (port, vr, action as u16), p, pool);
                    continue;
                }
                Decision::Copies { interfaces, slow } => {
                    let view = present(&self.vrs, vr);
                    let class = punt_class(&s.keys[i], Exception::Program);
                    if slow && punt_admits(&mut self.punt, &self.vrs, &self.counters, &self.epoch, &mut punt_now, (vr, class)) {
                        to_slow_path(&self.counters, &mut self.slow_path, &mut self.taps, (vr, class), Exception::Program, &p);
                    }
                    // The last copy is the packet itself; the others are new buffers.
                    let mut p = Some(p);
                    let mut left = interfaces;
                    while left != 0 {
                        let k = left.trailing_zeros() as usize;
                        left &= left - 1;
                        let Some(&port) = view.facts.interface_ports.get(k) else {
                            self.counters.vrs[vr as usize].drops[VrDrop::ProgramBadPort as usize].add(1);
                            continue;
                        };
                        let copy = match (left, p.as_ref()) {
                            (0, _) => p.take(),
                            (_, Some(original)) => pool.copy_of(original),
                            (_, None) => None,
                        };
                        let Some(copy) = copy else {
                            self.counters.vrs[vr as usize].drops[VrDrop::CopyNoBuffer as usize].add(1);
                            continue;
                        };
                        if !self.taps.is_empty() {
                            self.taps.offer(CapturePoint::Tx, vr, port, copy.data());
                        }
                        s.gather(out, &self.counters, &mut run_to, (port, vr, action as u16), copy, pool);
                    }
                    if let Some(p) = p {
                        pool.give(p);
                    }
                    continue;
                }
                Decision::Forward { nh } => match next_hops_of(&self.vrs, guard, &mut next_hops, table).resolve(nh, &s.keys[i]) {
                    Some(&Adjacency::Forward { port, src, dst }) => {
                        trim_to_ip_length(&mut p, x);
                        if x.ttl <= 1 {
                            Exception::TtlExpired
                        } else if port == p.in_port {
                            Exception::Redirect
                        } else if l3_segment_len(&p, x) > present(&self.vrs, table).mtu(port) as usize {
                            Exception::MtuExceeded
                        } else if !self.nat.is_empty() && !translate_out(&mut self.nat, vr, port, &mut p, x, self.now_s) {
                            self.counters.vrs[vr as usize].drops[VrDrop::NatRefused as usize].add(1);
                            pool.give(p);
                            continue;
                        } else {
                            // An offloading VR imports no leaked prefix (`table` is its own);
                            // a running capture is refused by the offers themselves.
                            if let Some(offload) = &mut self.offload {
                                offer_flow(offload, present(&self.vrs, vr), &p, x, &s.keys[i], (vr, port), (src, dst));
                            }
                            decrement_ttl(&mut p, x);
                            let mut eth = EthernetFrame::new_unchecked(p.data_mut());
                            eth.set_dst_addr(dst);
                            eth.set_src_addr(src);
                            if !self.taps.is_empty() {
                                self.taps.offer(CapturePoint::Tx, vr, port, p.data());
                            }
                            s.gather(out, &self.counters, &mut run_to, (port, vr, action as u16), p, pool);
                            continue;
                        }
                    }
                    Some(Adjacency::Local) => Exception::Local,
                    // The kernel would drop it for its TTL before resolving anything.
                    Some(Adjacency::Glean { .. }) if x.ttl <= 1 => Exception::TtlExpired,
                    Some(&Adjacency::Glean { port }) if self.nat.iter().any(|(v, t)| *v == vr && t.port == port) => {
                        Exception::NatUnresolved
                    }
                    Some(Adjacency::Glean { .. }) => Exception::UnresolvedNeighbor,
                    None => Exception::NoRoute,
                },
            };
            let class = punt_class(&s.keys[i], reason);
            // A kernel VR's kernel forwards all its traffic: its rate limits govern that.
            let policed = reason != Exception::KernelVr;
            if policed && !punt_admits(&mut self.punt, &self.vrs, &self.counters, &self.epoch, &mut punt_now, (vr, class)) {
                pool.give(p);
                continue;
            }
            to_slow_path(&self.counters, &mut self.slow_path, &mut self.taps, (vr, class), reason, &p);
            pool.give(p);
        }
        if !s.run.is_empty() {
            send_run(out, run_to, &mut s.run, &mut s.refused, &self.counters, pool);
        }
    }
}

impl Scratch {
    /// Adds a packet leaving for `to` (port, VR, queue) to the run being gathered, handing the
    /// run before it to the output first if that one went elsewhere.
    #[inline]
    fn gather(
        &mut self,
        out: &mut impl OutputSink,
        counters: &WorkerCounters,
        run_to: &mut (u16, u16, u16),
        to: (u16, u16, u16),
        p: Packet,
        pool: &mut PacketPool,
    ) {
        if to != *run_to && !self.run.is_empty() {
            send_run(out, *run_to, &mut self.run, &mut self.refused, counters, pool);
        }
        *run_to = to;
        self.run.push(p);
    }
}

/// Offers packet `p`'s flow, which VR `vr` forwards out of `out_port` with new MACs `(src,
/// dst)`, to the kernel if it may take it: an established TCP flow of an offloading VR between
/// offloading ports, where no frame that came in can be too big to leave (the kernel cannot
/// answer "too big").
fn offer_flow(
    (offers, ports): &mut (Offers, Vec<bool>),
    view: &VrView,
    p: &Packet,
    x: &L3Info,
    key: &FlowKey,
    (vr, out_port): (u16, u16),
    macs: ([u8; 6], [u8; 6]),
) {
    let offloads = |q: u16| ports.get(usize::from(q)).copied().unwrap_or(false);
    let mtu = |q: u16| view.mtu(q);
    if !view.offload || !offloads(p.in_port) || !offloads(out_port) || mtu(p.in_port) > mtu(out_port) {
        return;
    }
    if let Some(family) = established_tcp(p, x) {
        offers.offer(offer_of(vr, family, key, (p.in_port, out_port), macs));
    }
}

/// The family of a TCP segment (or super-packet) of an established connection, neither opening
/// nor closing it, with nothing between its IP and TCP headers: a SYN flood offers nothing,
/// and both directions of a transfer, its data and its acknowledgements, are offered.
fn established_tcp(p: &Packet, x: &L3Info) -> Option<Family> {
    const SYN_FIN_RST: u8 = 0x07;
    let (family, proto_at, header) = match x.kind {
        L3Kind::Ipv4 => (Family::V4, 9, 20),
        L3Kind::Ipv6 => (Family::V6, 6, 40),
        _ => return None,
    };
    let data = p.data();
    let l4 = x.l3_offset + header;
    let tcp = !x.fragment && x.l4_offset == Some(l4) && data.get(x.l3_offset + proto_at) == Some(&ip_proto::TCP);
    (tcp && data.get(l4 + 13).is_some_and(|flags| flags & SYN_FIN_RST == 0)).then_some(family)
}

/// The offer of a TCP flow routed out of `out_port` with new MACs `(src, dst)`.
fn offer_of(vr: u16, family: Family, key: &FlowKey, ports: (u16, u16), (src, dst): ([u8; 6], [u8; 6])) -> Offer {
    let address = |f: Field| {
        let mut a = [0u8; 16];
        match family {
            Family::V4 => a[..4].copy_from_slice(&(key.get(f) as u32).to_be_bytes()),
            Family::V6 => a = key.get(f).to_be_bytes(),
        }
        a
    };
    let flow = OffloadKey {
        port: u32::from(ports.0),
        family,
        src: address(Field::IpSrc),
        dst: address(Field::IpDst),
        sport: (key.get(Field::L4Src) as u16).to_be_bytes(),
        dport: (key.get(Field::L4Dst) as u16).to_be_bytes(),
        vr_mac: key.eth_dst(),
    };
    Offer { vr, key: flow, out_port: ports.1, dst_mac: dst, src_mac: src }
}

/// Source-NATs a packet of VR `vr` leaving by `port` if that is the VR's outside interface;
/// false if it must be dropped (it cannot be translated).
#[inline]
fn translate_out(nat: &mut [(u16, NatTable)], vr: u16, port: u16, p: &mut Packet, x: &L3Info, now_s: u32) -> bool {
    let Some((_, table)) = nat.iter_mut().find(|(v, t)| *v == vr && t.port == port) else { return true };
    if x.kind != L3Kind::Ipv4 {
        return true;
    }
    let partial = p.offload.needs_csum();
    let l4 = x.l4_offset.map(|o| o - x.l3_offset);
    table.outbound(&mut p.data_mut()[x.l3_offset..], l4, x.fragment, partial, now_s) != Translation::Refused
}

/// Hands a run of forwarded packets to the output and counts what it took and refused.
#[inline]
fn send_run(
    out: &mut impl OutputSink,
    (port, vr, queue): (u16, u16, u16),
    run: &mut Vec<Packet>,
    refused: &mut Vec<Packet>,
    counters: &WorkerCounters,
    pool: &mut PacketPool,
) {
    let c = &counters.vrs[vr as usize];
    let (packets, bytes) = (run.len() as u64, run.iter().map(|p| p.len() as u64).sum::<u64>());
    out.enqueue_run(port, vr, queue, run, refused);
    let (mut refused_packets, mut refused_bytes) = (0, 0);
    for p in refused.drain(..) {
        refused_packets += 1;
        refused_bytes += p.len() as u64;
        pool.give(p);
    }
    if refused_packets > 0 {
        c.queue_drops.add(refused_packets);
    }
    c.forwarded_packets.add(packets - refused_packets);
    c.forwarded_bytes.add(bytes - refused_bytes);
}

/// The view of a VR that `vr_stage` let through.
#[inline]
fn present(vrs: &[Option<VrView>], vr: u16) -> &VrView {
    vrs[vr as usize].as_ref().expect("vr_stage keeps only verdicts of present VRs")
}

/// The next hops of `vr`, from `cached` when it holds them.
#[inline]
fn next_hops_of<'g>(
    vrs: &'g [Option<VrView>],
    guard: &'g ReadGuard<'_>,
    cached: &mut Option<(u16, &'g NextHopTable)>,
    vr: u16,
) -> &'g NextHopTable {
    cell_of(vrs, guard, cached, vr, |v| &v.adjacencies)
}

/// What `cell` of `vr`'s view holds now, from `cached` when it is `vr`'s: a batch's packets
/// are mostly one VR's, in runs.
#[inline]
fn cell_of<'g, T>(
    vrs: &'g [Option<VrView>],
    guard: &'g ReadGuard<'_>,
    cached: &mut Option<(u16, &'g T)>,
    vr: u16,
    cell: impl FnOnce(&'g VrView) -> &'g RcuCell<T>,
) -> &'g T {
    match *cached {
        Some((v, held)) if v == vr => held,
        _ => {
            let held = cell(present(vrs, vr)).load(guard);
            *cached = Some((vr, held));
            held
        }
    }
}

/// Brings each VR's lookup jobs together; a batch is mostly one VR's, already in order.
#[inline]
fn group_by_vr(jobs: &mut [(u16, u16)]) {
    if !jobs.is_sorted_by_key(|j| j.0) {
        jobs.sort_unstable_by_key(|j| j.0);
    }
}

/// Looks up each VR's jobs in its table `fib(vr)` with one batch lookup per VR (`jobs` sorted by
/// VR), results into `hops` in job order. When the batch spans several VRs, every table is
/// prefetched first: their misses then overlap (with thousands of VRs every table is cold).
fn lookup_groups<'v, A: AddrBits>(
    guard: &ReadGuard<'_>,
    jobs: &[(u16, u16)],
    addrs: &[A],
    hops: &mut Vec<u32>,
    fib: impl Fn(u16) -> &'v FibView<A>,
) {
    hops.clear();
    hops.resize(jobs.len(), MISS);
    if jobs.first().map(|j| j.0) != jobs.last().map(|j| j.0) {
        let mut last = None;
        for &(vr, _) in jobs {
            if last != Some(vr) {
                fib(vr).prefetch(guard);
                last = Some(vr);
            }
        }
    }
    let mut start = 0;
    while start < jobs.len() {
        let vr = jobs[start].0;
        let end = start + jobs[start..].iter().take_while(|j| j.0 == vr).count();
        fib(vr).lookup_batch(guard, &addrs[start..end], &mut hops[start..end]);
        start = end;
    }
}

/// A destination's route as the packet's decision.
fn route_decisions(jobs: &[(u16, u16)], hops: &[u32], decisions: &mut [Decision]) {
    for (&(_, i), &nh) in jobs.iter().zip(hops.iter()) {
        decisions[i as usize] = if nh == MISS { Decision::Slow(Exception::NoRoute) } else { Decision::Forward { nh } };
    }
}

/// Decrements the TTL or hop limit in place (incremental checksum); the caller has checked
/// that it does not expire.
#[inline(always)]
fn decrement_ttl(p: &mut Packet, x: &L3Info) {
    let l3 = &mut p.data_mut()[x.l3_offset..];
    match x.kind {
        L3Kind::Ipv4 => _ = Ipv4Packet::new_unchecked(l3).decrement_ttl(),
        L3Kind::Ipv6 => _ = Ipv6Packet::new_unchecked(l3).decrement_hop_limit(),
        _ => {}
    }
}

/// Cuts the frame to its IP packet: bytes past the IP length (a trailer, padding) are not
/// forwarded, as Linux's `pskb_trim_rcsum` cuts them; an IPv6 payload length of 0 without a
/// jumbo option (which goes to the slow path with its hop-by-hop header) leaves the header
/// alone. A super-packet's length fields are its own and stay.
#[inline(always)]
fn trim_to_ip_length(p: &mut Packet, x: &L3Info) {
    if p.offload.is_gso() {
        return;
    }
    let l3 = &p.data()[x.l3_offset..];
    let ip_len = match x.kind {
        L3Kind::Ipv4 => usize::from(u16::from_be_bytes([l3[2], l3[3]])),
        L3Kind::Ipv6 => 40 + usize::from(u16::from_be_bytes([l3[4], l3[5]])),
        _ => return,
    };
    if x.l3_offset + ip_len < p.len() {
        p.set_len(x.l3_offset + ip_len);
    }
}

/// The length the egress MTU is held against: the IP packet, or for a GSO super-packet the
/// largest IP packet it will be cut into (as Linux's `skb_gso_validate_network_len`).
#[inline(always)]
fn l3_segment_len(p: &Packet, x: &L3Info) -> usize {
    let o = &p.offload;
    if !o.is_gso() {
        return p.len() - x.l3_offset;
    }
    let l4 = usize::from(o.csum_start);
    let l4_header = match o.gso {
        Gso::UdpL4 => 8,
        // TCP's data offset, in 32-bit words.
        _ => p.data().get(l4 + 12).map_or(20, |b| usize::from(b >> 4) * 4),
    };
    l4.saturating_sub(x.l3_offset) + l4_header + usize::from(o.gso_size)
}

/// Whether VR `vr`'s punt path takes one more frame of `class`; counts it as `punt_policed` if
/// not. The clock is read at most once per batch (`now` starts as `None`).
#[inline]
fn punt_admits(
    punt: &mut [PuntPolicer],
    vrs: &[Option<VrView>],
    counters: &WorkerCounters,
    epoch: &std::time::Instant,
    now: &mut Option<u64>,
    (vr, class): (u16, PuntClass),
) -> bool {
    let now = *now.get_or_insert_with(|| epoch.elapsed().as_nanos() as u64);
    let admitted = punt[vr as usize].admit(class, present(vrs, vr).facts.punt_pps, now);
    if !admitted {
        counters.vrs[vr as usize].drops[VrDrop::PuntPoliced as usize].add(1);
    }
    admitted
}

/// Copies `p` onto the VR's slow-path channel (the caller keeps the buffer), or counts the drop.
/// Only routing protocols may take the channel's last `PRIORITY_RESERVE` bytes.
fn to_slow_path(
    counters: &WorkerCounters,
    slow_path: &mut SlowPathTx,
    taps: &mut Taps,
    (vr, class): (u16, PuntClass),
    reason: Exception,
    p: &Packet,
) {
    let c = &counters.vrs[vr as usize];
    if !taps.is_empty() {
        taps.offer(CapturePoint::Slow, vr, p.in_port, p.data());
    }
    c.exceptions[reason as usize].add(1);
    if p.offload.is_encapsulated() {
        // A TAP takes super-packets only as a virtio-net header describes them, and none
        // describes one behind a tunnel's headers.
        c.exception_drops.add(1);
        return;
    }
    let meta = FrameMeta { vr, port: p.in_port, reason: Some(reason), offload: p.offload };
    let ch = slow_path.vr_channel[vr as usize];
    if ch == NO_CHANNEL {
        c.exception_drops.add(1);
        return;
    }
    let ring = &mut slow_path.channels[ch as usize].1;
    let first = !ring.unpublished();
    let reserve = if class == PuntClass::Routing { 0 } else { PRIORITY_RESERVE };
    if !ring.push_leaving(reserve, meta, p.data()) {
        c.exception_drops.add(1);
    } else if first {
        slow_path.unflushed.push(ch);
    }
}

fn multicast_exception(key: &FlowKey, x: &L3Info) -> Exception {
    match x.kind {
        L3Kind::Arp => Exception::Arp,
        L3Kind::Ipv6 if is_neighbor_discovery(key) => Exception::NeighborDiscovery,
        L3Kind::Ipv4 | L3Kind::Ipv6 => Exception::Multicast,
        L3Kind::Other => Exception::NonIp,
    }
}
