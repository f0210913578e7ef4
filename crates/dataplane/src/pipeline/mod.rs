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
//!
//! ## How a packet travels
//!
//! ```text
//! port rx_batch (≤ 32 frames, pool buffers; on AF_XDP the very chunks the kernel wrote)
//!   │
//!   ▼ extract_stage      pearl_wire::extract → FlowKey; malformed → dropped, counted per port/reason;
//!   │                    the port's `opaque` bytes, if it names any, into the key (opaque.rs)
//!   ▼ classify           Classifier::lookup_batch → Verdict {vr, rule, queue}
//!   │                    default rule per interface: (in_port, dst MAC) → its VR, one hash probe
//!   │                    (InterfaceIndex, every frame's slot prefetched before any is probed)
//!   │                    unless a config rule above it could match; tuple search else
//!   │                    (a batch spread over several VRs, as with thousands of VRs each packet
//!   │                    another VR's: each VR's state is prefetched in stages that follow its
//!   │                    pointers, lookahead.rs: view, counters, share account → program state,
//!   │                    route snapshot, next-hop cell, MTUs, uRPF → next-hop table → after the
//!   │                    lookups, the entries routed to → before the action stage, each packet's
//!   │                    output queue, then its ring slot (OutputSink::prefetch_queue/_tail);
//!   │                    their misses overlap instead of stalling in turn)
//!   ▼ unclaimed_stage    no verdict: multicast → a copy to every VR on the port (slow path);
//!   │                    unicast → dropped, counted "unclaimed"
//!   │                    (on ports that cannot mark them, partial checksums are recognised here)
//!   ▼ share_stage        (worker_share.rs) each packet counted to its VR for charging the batch's
//!   │                    worker time; while the worker falls behind, a VR past its allowance of
//!   │                    worker time → dropped here, before the costly stages (drops: worker_share)
//!   ▼ program_stage      each run of one VR's packets → the VR's program (program/, one
//!   │                    `VrProgram` per VR in its view), which decides each packet: Forward by
//!   │                    next hop, Lookup (route by destination: the lookup stage answers),
//!   │                    Send out of a VR port as it stands, Slow (exception) or Drop (reason).
//!   │                    IpRouter (ipv4/ipv6/ip): ARP, ND, non-IP, multicast, IPv4 options,
//!   │                    unrouted family → exception; validity: bad IPv4 header checksum,
//!   │                    martian source/destination → dropped, counted per VR and reason (drops:
//!   │                    bad_checksum, martian_source, …); the rest → Lookup and source check.
//!   │                    I3Program (code: i3, pearl-plugin): I3 datagrams to the VR forwarded
//!   │                    by Chord or by their trigger, re-addressed in place (Send); the rest of
//!   │                    the run to IpRouter (Run::part); insertions, stacks, multicast → Slow
//!   │                    FilterProgram (code: filter): the VR's match rule that claimed the
//!   │                    frame (its index rides in the classifier's verdict) → Send out of its
//!   │                    interface with the rule's next-hop MAC, Slow (program) or Drop
//!   │                    (program); no rule (claimed by the VR's MAC): ARP, ND → its kernel, the
//!   │                    rest dropped (filter_miss)
//!   │                    KernelPath (kernel, shared VRs): all → the VR's kernel; those its
//!   │                    mirrored tables route to an unresolved neighbour under the glean
//!   │                    bound first (kernel_glean.rs)
//!   │                    WasmProgram (pearl-plugin, kind: plugin): the run copied into the
//!   │                    plugin's batch area, `pearl_process` called under a fuel budget, each
//!   │                    frame copied back and sent by its verdict (Send out of a VR interface,
//!   │                    Slow: exception program, Drop: program, and copies: Copies); a trap, exhausted fuel or
//!   │                    memory → the run dropped (program_trap/_fuel/_memory), the instance
//!   │                    restarted after a back-off (program_down meanwhile)
//!   │                    ProcessProgram (plugin.process): the run copied into the memory shared
//!   │                    with the VR's process, the process woken (futex) and waited for ≤ 2 ms,
//!   │                    its route/table calls answered meanwhile; verdicts as above; unanswered → program_hang, process down → program_down
//!   │                    XdpProgram (plugin.xdp): each frame through pearl-ebpf's interpreter in
//!   │                    place; PASS → Slow, TX/REDIRECT → Send, DROP → program; a fault drops
//!   │                    the frame (program_trap / program_fuel)
//!   │                    nat_inbound_stage (nat.rs): traffic the NAT rules (classifier, above
//!   │                    every other rule: in_port, the address, the reserved ports) brought to a
//!   │                    VR gets its private destination back before the lookup; an ICMP echo
//!   │                    reply (no port) is handed to the VR whose mapping it answers
//!   ▼ lookup_stage       FibView::lookup_batch per VR and family (two passes per trie level:
//!   │                    headers → prefetch entries → entries → prefetch next headers)
//!   │                    (leak: a destination inside a prefix the VR imports is looked up in
//!   │                    the source VR's FIB and takes its adjacency and MTU, leak.rs; counters
//!   │                    and queues stay the importing VR's)
//!   ▼ source_stage       the sources of packets to forward: one of the VR's own addresses →
//!   │                    martian_source (IPv4, from the VR's LocalSources, a FIB lookup only
//!   │                    when a local route is wider than a host); uRPF strict/loose per
//!   │                    interface looks the source up the same way as the destination
//!   ▼ action_stage       (nat: a TCP/UDP packet leaving by the VR's NAT interface is
//!   │                    source-NATed into its reserved ports, others dropped as nat_refused; an
//!   │                    unresolved neighbour there → nat_unresolved: the slow path probes it
//!   │                    with a datagram of the VR's own, NeighborProbe, instead of the packet)
//!   │                    Send → the VR's queue on that port unchanged (a port the VR has no
//!   │                    interface on → drops: program_bad_port); Copies (a plugin's `copies`
//!   │                    bits) → the frame to the VR's kernel if asked, then out of each
//!   │                    interface named, all but the last a new buffer from the worker's pool
//!   │                    (none free → copy_no_buffer);
//!   │                    adjacency: forward → TTL ≤ 1 or above the egress interface's MTU (for a
//!   │                    super-packet: its segments) → exception (the VR's kernel answers time
//!   │                    exceeded, frag needed / packet too big, or fragments); else TTL/hop
//!   │                    limit −1 (RFC 1624), MAC rewrite,
//!   │                    (an established TCP flow of an offloading VR between packet ports →
//!   │                    offered to offload/: from then on the kernel forwards it, see below)
//!   │                    runs of packets for one (port, vr, queue) → OutputSink::enqueue_run;
//!   │                    local/glean/miss/TTL ≤ 1 → exception
//!   │                    (glean: unresolved.rs, a few per destination, UNRESOLVED_PPS per VR and port;
//!   │                    beyond → drops: unresolved_policed, before the punt path)
//!   │                    exceptions: counted per VR and reason, policed per VR and class
//!   │                    (punt.rs: routing protocols / ARP-ND / the rest, `limits.punt_pps` each;
//!   │                    beyond it → drops: punt_policed; not for kernel VRs, whose kernel
//!   │                    forwards), copied onto the VR's slow-path channel, the last 256 KiB of
//!   │                    which only routing protocols may fill → netio reactor → the VR's TAP → its kernel (ARP/ND, ICMP,
//!   │                    local sockets, forwarding for kernel VRs); the kernel's frames come back
//!   │                    from the TAP → reactor → the worker → the VR's queue on the mapped port
//!   ▼ ImpairedOutput     (impair.rs) the OutputSink the worker hands the pipeline and the slow
//!   │                    path: a (port, VR) with `impair:` is an emulated link — loss and
//!   │                    duplication drawn per packet (xorshift), a rate spacing packets by length,
//!   │                    delay ± uniform jitter; held in a heap by due time (≤ 1,000 per link,
//!   │                    4,096 per worker) and released into the scheduler once due, each round;
//!   │                    an idle worker sleeps (ppoll) no longer than until the next is due.
//!   │                    Other (port, VR)s go straight through; the links come with each plan
//!   │                    (changed live, held packets kept)
//!   ▼ PortScheduler      per port: VRs in WDRR, each VR's queues in WDRR, token buckets; while
//!   │                    nothing waits on an uncapped port, an uncapped VR's run goes straight
//!   │                    out (≤ 64 a round)
//!   ▼ tx_offload         as the port's device can take them: super-packets whole (PACKET
//!   │                    VNET_HDR, TAP) or cut; partial checksums kept or finished
//!   ▼ port tx_batch      (≤ 64 frames), buffers back to the pool (AF_XDP: sent in place,
//!                        back once the completion ring returns them)
//! ```
//!
//! An offloaded flow's frames take a shorter way, wholly in the kernel's receive softirq:
//!
//! ```text
//! veth peer → the port's interface
//!   ▼ packet socket's filter (offload/programs.rs, Side::SocketFilter): the flow test — armed
//!   │                    port, untagged TCP over IPv4 (no options or fragments, header checksum
//!   │                    right) or IPv6 (no extension header), TTL/hop limit > 1, key in the
//!   │                    family's table → the frame is not copied into PEARL's ring
//!   ▼ tcx ingress        (Side::Redirect) the same test → counted in the flow's entry; MACs of
//!   │                    the next hop, TTL/hop limit −1, IPv4 checksum updated; a segment whose
//!   │                    IP length does not hold a TCP header within the frame → dropped; the
//!   │                    TCP checksum stays as the sender left it (finished, or marked for the
//!   │                    receiver or the device, as the Linux router leaves it); bpf_redirect
//!   ▼ the egress interface's transmit (a super-packet still whole) → veth peer
//! ```
//!
//! Any frame that fails the test (a router's exceptions among them) takes PEARL's own path; the
//! tcx program hands it on to the host's stack unless it is addressed to another host's MAC (a
//! VR's), which the stack would only drop. The
//! table thread empties the tables whenever a VR's tables change (`VrTables::published`, after
//! a wait for the workers' read sections, so that no offer made from the old tables can come
//! after) or the configuration does (`Dataplane::update`, once every worker runs the new plan),
//! and while a capture runs.

mod action;
mod classify;
mod extract;
mod forward;
mod kernel_glean;
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
use crate::unresolved::UnresolvedPolicer;
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
    /// Packets for neighbours not resolved yet, bounded per VR and port (`unresolved.rs`).
    unresolved: UnresolvedPolicer,
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
            unresolved: UnresolvedPolicer::default(),
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
        self.unresolved.resize(self.vrs.len());
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
        // Unarmed, each of the trace's points below is one test per batch.
        if let Some(t) = self.taps.trace() {
            t.rx(in_port, batch);
        }
        self.extract_stage(in_port, batch, pool);
        if batch.is_empty() {
            if !self.taps.is_empty() {
                self.taps.flush();
            }
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
        let claimed = self.vr_stage();
        if let Some(t) = self.taps.trace() {
            let on_port = self.port_vrs[in_port as usize].contains(&t.vr());
            t.classified(batch, &self.scratch.keys[..self.scratch.count], &self.scratch.verdicts, on_port);
        }
        if claimed < batch.len() {
            self.unclaimed_stage(in_port, batch, pool);
        }
        self.share_stage(batch, pool);
        if spread {
            self.prefetch_vr_tables(guard);
        }
        self.program_stage(guard, batch);
        if let Some(t) = self.taps.trace() {
            t.decided(batch, &self.scratch.decisions);
        }
        if spread {
            self.prefetch_next_hop_tables(guard);
        }
        self.lookup_stage(guard);
        if spread {
            self.prefetch_next_hops(guard);
        }
        self.source_stage(guard, batch);
        if let Some(t) = self.taps.trace() {
            t.routed(batch, &self.scratch.decisions, &self.scratch.tables);
        }
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
