//! The live counters as JSON: per port, per VR (with exceptions by reason and its queues), per
//! worker. Summed over workers at read time; workers never wait for a reader. `time_seconds`
//! stamps the snapshot so that readers compute rates against pearld's clock, not their own.

use crate::activity::Activity;
use crate::kernel_drops::Drops;
use crate::models::counts::Counts;
use crate::models::stats::{Impaired, PortStats, QueueStats, Routed, SlowPath, Stats, VrStats, WorkerDrops, WorkerStats};
use crate::node::Node;
use crate::router::Caller;
use crate::vr_query::VrQuery;
use crate::worker_cpu;
use pearl_control::VrConfig;
use pearl_dataplane::dataplane::Layout;
use pearl_dataplane::slowpath::NetioCounters;
use pearl_routed::RoutedStats;
use pearl_wire::WireError;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// How much a snapshot holds: everything, or the data plane's counters alone (what rates are
/// computed from), which are in pearld's memory and cost no system call per VR.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    Full,
    Counters,
}

pub fn snapshot(node: &Node) -> Value {
    snapshot_with(node, Detail::Full)
}

pub fn snapshot_with(node: &Node, detail: Detail) -> Value {
    let text = json_text(node, detail, &Caller::Admin, &VrQuery::all(), &Activity::default());
    serde_json::from_slice(&text).expect("the snapshot's text is JSON")
}

/// What `caller` may see of a full snapshot, as JSON text: a VR's token its own VR and the
/// ports it sits on, and no workers (they count every VR's traffic). `query` picks the VRs.
pub fn visible_text(node: &Node, caller: &Caller, query: &VrQuery, activity: &Activity) -> Vec<u8> {
    json_text(node, Detail::Full, caller, query, activity)
}

/// The snapshot as JSON text. Typed and written straight from the counters: with thousands of
/// VRs, a JSON tree of every counter (built, written, freed) cost four times what the counting
/// does.
fn json_text(node: &Node, detail: Detail, caller: &Caller, query: &VrQuery, activity: &Activity) -> Vec<u8> {
    let d = &node.dataplane;
    d.refresh_offloaded();
    let layout = d.layout();
    let config = &layout.config;
    let ports_seen: HashSet<usize> =
        config.vrs.iter().filter(|v| caller.sees(&v.name)).flat_map(|v| v.interfaces.iter().map(|i| i.port)).collect();
    let selected = query.select(&config.vrs, caller, activity, |id| d.sum(|c| c.vrs[usize::from(id)].rx_packets.get()));
    let seen = selected.vrs;
    let ports = config
        .ports
        .iter()
        .enumerate()
        .filter(|(p, _)| ports_seen.contains(p))
        .map(|(p, port)| PortStats {
            name: &port.name,
            interface: &port.interface,
            rx_packets: d.sum(|c| c.ports[p].rx_packets.get()),
            rx_bytes: d.sum(|c| c.ports[p].rx_bytes.get()),
            tx_packets: d.sum(|c| c.ports[p].tx_packets.get()),
            tx_bytes: d.sum(|c| c.ports[p].tx_bytes.get()),
            offloaded_rx_packets: d.offloaded(|c| c.ports[p].rx_packets.get()),
            offloaded_rx_bytes: d.offloaded(|c| c.ports[p].rx_bytes.get()),
            offloaded_tx_packets: d.offloaded(|c| c.ports[p].tx_packets.get()),
            offloaded_tx_bytes: d.offloaded(|c| c.ports[p].tx_bytes.get()),
            tx_errors: d.sum(|c| c.ports[p].tx_errors.get()),
            unclaimed: d.sum(|c| c.ports[p].unclaimed.get()),
            rx_dropped: d.sum(|c| c.ports[p].rx_dropped.get()),
            rx_errors: d.sum(|c| c.ports[p].rx_errors.get()),
            vxlan_malformed: d.sum(|c| c.ports[p].vxlan_malformed.get()),
            vxlan_unknown_vni: d.sum(|c| c.ports[p].vxlan_unknown_vni.get()),
            malformed: WireError::REASONS.iter().enumerate().map(|(r, name)| (*name, d.sum(|c| c.ports[p].malformed[r].get()))).collect(),
        })
        .collect();
    let slow_paths: Vec<_> = seen.iter().map(|vr| node.slow_path_counters(vr.id).unwrap_or_default()).collect();
    let mut kernel_drops = match detail {
        Detail::Full => {
            let activity: Vec<(u16, u64)> =
                seen.iter().zip(&slow_paths).map(|(vr, n)| (vr.id, n.to_kernel_packets.get() + n.from_kernel_packets.get())).collect();
            node.kernel_drops(&activity)
        }
        Detail::Counters => HashMap::new(),
    };
    let workers = if *caller == Caller::Admin { workers(node) } else { Vec::new() };
    let exits = d.offloaded_exits();
    let vrs = seen
        .iter()
        .zip(&slow_paths)
        .map(|(vr, n)| {
            let kernel = kernel_drops.remove(&vr.id);
            vr_stats(node, &layout, vr, n, &exits, kernel, node.routed_stats(vr.id).as_ref())
        })
        .collect();
    let stats = Stats { time_seconds: monotonic_seconds(), ports, workers, vrs_total: selected.total, vrs };
    let mut out = Vec::with_capacity(256 + seen.len() * 1536);
    serde_json::to_writer(&mut out, &stats).expect("the stats always serialise");
    out.push(b'\n');
    out
}

fn vr_stats<'a>(
    node: &Node,
    layout: &'a Layout,
    vr: &'a VrConfig,
    n: &NetioCounters,
    exits: &HashMap<(u16, u16), (u64, u64)>,
    kernel: Option<Drops>,
    routed: Option<&RoutedStats>,
) -> VrStats<'a> {
    let d = &node.dataplane;
    let v = vr.id as usize;
    let mut queues = Vec::new();
    for (p, firsts) in layout.first_queue.iter().enumerate() {
        let Some(head) = firsts[v] else { continue };
        for q in 0..vr.queues.len() {
            let id = head as usize + q;
            let sum =
                |f: fn(&pearl_dataplane::output::QueueMirror) -> u64| -> u64 { layout.queues.iter().map(|w| f(&w.ports[p][id])).sum() };
            let (offloaded_packets, offloaded_bytes) =
                if q == 0 { exits.get(&(vr.id, p as u16)).copied().unwrap_or_default() } else { (0, 0) };
            queues.push(QueueStats {
                port: &layout.config.ports[p].name,
                queue: q,
                weight: vr.queues[q].weight,
                enqueued_packets: sum(|m| m.enqueued_packets.get()),
                sent_packets: sum(|m| m.sent_packets.get()) + offloaded_packets,
                sent_bytes: sum(|m| m.sent_bytes.get()) + offloaded_bytes,
                offloaded_packets,
                offloaded_bytes,
                dropped_packets: sum(|m| m.dropped_packets.get()),
                backlog_packets: sum(|m| m.backlog_packets.get()),
            });
        }
    }
    VrStats {
        name: &vr.name,
        id: vr.id,
        kind: vr.kind.into(),
        rx_packets: d.sum(|c| c.vrs[v].rx_packets.get()),
        rx_bytes: d.sum(|c| c.vrs[v].rx_bytes.get()),
        forwarded_packets: d.sum(|c| c.vrs[v].forwarded_packets.get()),
        forwarded_bytes: d.sum(|c| c.vrs[v].forwarded_bytes.get()),
        offloaded_packets: d.sum(|c| c.vrs[v].offloaded_packets.get()),
        offloaded_bytes: d.sum(|c| c.vrs[v].offloaded_bytes.get()),
        kernel_forwarded_packets: kernel.as_ref().map(|k| k.forwarded_packets),
        queue_drops: d.sum(|c| c.vrs[v].queue_drops.get()),
        exceptions: Counts::from(d.exceptions(vr.id)),
        exception_drops: d.sum(|c| c.vrs[v].exception_drops.get()),
        drops: Counts::from(d.drops(vr.id)),
        impaired: Impaired { lost: d.sum(|c| c.vrs[v].impaired_lost.get()), duplicated: d.sum(|c| c.vrs[v].impaired_duplicates.get()) },
        kernel_drops: kernel.map(|k| Counts::from(k.drops)),
        routed: routed.map(|r| Routed {
            routes_v4: r.routes_v4,
            routes_v6: r.routes_v6,
            neighbors: r.neighbors,
            refused: r.refused,
            over_quota: r.over_quota,
            resyncs: r.resyncs,
            batches: r.batches,
            held: r.held,
            deferred_removals: r.deferred_removals,
        }),
        slow_path: SlowPath {
            to_kernel_packets: n.to_kernel_packets.get(),
            to_kernel_drops: n.to_kernel_drops.get(),
            from_kernel_packets: n.from_kernel_packets.get(),
            from_kernel_drops: n.from_kernel_drops.get() + d.sum(|c| c.vrs[v].injected_drops.get()),
            sent_packets: d.sum(|c| c.vrs[v].injected_packets.get()),
        },
        queues,
    }
}

fn workers(node: &Node) -> Vec<WorkerStats> {
    let d = &node.dataplane;
    let cpu = worker_cpu::seconds(d.counters.len());
    d.counters
        .iter()
        .zip(cpu)
        .map(|(c, cpu_seconds)| {
            let ports = |f: fn(&pearl_dataplane::counters::PortCounters) -> u64| -> u64 { c.ports.iter().map(f).sum() };
            let vrs = |f: fn(&pearl_dataplane::counters::VrCounters) -> u64| -> u64 { c.vrs.iter().map(f).sum() };
            WorkerStats {
                rx_packets: ports(|p| p.rx_packets.get()),
                rx_bytes: ports(|p| p.rx_bytes.get()),
                tx_packets: ports(|p| p.tx_packets.get()),
                tx_bytes: ports(|p| p.tx_bytes.get()),
                drops: WorkerDrops {
                    malformed: ports(|p| p.malformed.iter().map(|m| m.get()).sum()),
                    unclaimed: ports(|p| p.unclaimed.get()),
                    rx_dropped: ports(|p| p.rx_dropped.get()),
                    tx_errors: ports(|p| p.tx_errors.get()),
                    queue_full: vrs(|v| v.queue_drops.get()),
                    slow_path_full: vrs(|v| v.exception_drops.get()),
                },
                batches: c.batches.get(),
                idle_polls: c.idle_polls.get(),
                stalls: c.stalls.get(),
                longest_stall_seconds: c.longest_stall_ns.get() as f64 / 1e9,
                cpu_seconds,
            }
        })
        .collect()
}

pub(crate) fn monotonic_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
