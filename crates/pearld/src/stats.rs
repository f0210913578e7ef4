//! The live counters as JSON: per port, per VR (with exceptions by reason and its queues), per
//! worker. Summed over workers at read time; workers never wait for a reader. `time_seconds`
//! stamps the snapshot so that readers compute rates against pearld's clock, not their own.

use crate::node::Node;
use crate::router::Caller;
use crate::worker_cpu;
use pearl_control::Config;
use pearl_wire::WireError;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

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
    let d = &node.dataplane;
    let layout = d.layout();
    let ports: Vec<Value> = layout
        .config
        .ports
        .iter()
        .enumerate()
        .map(|(p, port)| {
            let malformed: Map<String, Value> = WireError::REASONS
                .iter()
                .enumerate()
                .map(|(r, name)| (name.to_string(), d.sum(|c| c.ports[p].malformed[r].get()).into()))
                .collect();
            json!({
                "name": port.name,
                "interface": port.interface,
                "rx_packets": d.sum(|c| c.ports[p].rx_packets.get()),
                "rx_bytes": d.sum(|c| c.ports[p].rx_bytes.get()),
                "tx_packets": d.sum(|c| c.ports[p].tx_packets.get()),
                "tx_bytes": d.sum(|c| c.ports[p].tx_bytes.get()),
                "tx_errors": d.sum(|c| c.ports[p].tx_errors.get()),
                "unclaimed": d.sum(|c| c.ports[p].unclaimed.get()),
                "malformed": malformed,
            })
        })
        .collect();
    let slow_paths: Vec<_> = layout.config.vrs.iter().map(|vr| node.slow_path_counters(vr.id).unwrap_or_default()).collect();
    let kernel_drops = match detail {
        Detail::Full => {
            let activity: Vec<(u16, u64)> = layout
                .config
                .vrs
                .iter()
                .zip(&slow_paths)
                .map(|(vr, n)| (vr.id, n.to_kernel_packets.get() + n.from_kernel_packets.get()))
                .collect();
            node.kernel_drops(&activity)
        }
        Detail::Counters => HashMap::new(),
    };
    let vrs: Vec<Value> = layout
        .config
        .vrs
        .iter()
        .zip(&slow_paths)
        .map(|(vr, n)| {
            let v = vr.id as usize;
            let exceptions: Map<String, Value> =
                d.exceptions(vr.id).into_iter().map(|(name, n)| (name.to_string(), n.into())).collect();
            let drops: Map<String, Value> = d.drops(vr.id).into_iter().map(|(name, n)| (name.to_string(), n.into())).collect();
            let mut queues = Vec::new();
            for (p, firsts) in layout.first_queue.iter().enumerate() {
                let Some(first) = firsts[v] else { continue };
                for q in 0..vr.queues.len() {
                    let id = first as usize + q;
                    let sum = |f: fn(&pearl_dataplane::worker::QueueMirror) -> u64| -> u64 {
                        layout.queues.iter().map(|w| f(&w.ports[p][id])).sum()
                    };
                    queues.push(json!({
                        "port": layout.config.ports[p].name,
                        "queue": q,
                        "weight": vr.queues[q].weight,
                        "enqueued_packets": sum(|m| m.enqueued_packets.get()),
                        "sent_packets": sum(|m| m.sent_packets.get()),
                        "sent_bytes": sum(|m| m.sent_bytes.get()),
                        "dropped_packets": sum(|m| m.dropped_packets.get()),
                        "backlog_packets": sum(|m| m.backlog_packets.get()),
                    }));
                }
            }
            let kernel_drops: Option<Map<String, Value>> =
                kernel_drops.get(&vr.id).map(|k| k.iter().map(|(name, n)| (name.to_string(), (*n).into())).collect());
            let routes = node.routed_stats(vr.id).map(|r| {
                json!({
                    "routes_v4": r.routes_v4,
                    "routes_v6": r.routes_v6,
                    "neighbors": r.neighbors,
                    "refused": r.refused,
                    "over_quota": r.over_quota,
                    "resyncs": r.resyncs,
                    "held": r.held,
                    "deferred_removals": r.deferred_removals,
                    "batches": r.batches,
                })
            });
            json!({
                "name": vr.name,
                "id": vr.id,
                "kind": format!("{:?}", vr.kind).to_lowercase(),
                "rx_packets": d.sum(|c| c.vrs[v].rx_packets.get()),
                "rx_bytes": d.sum(|c| c.vrs[v].rx_bytes.get()),
                "forwarded_packets": d.sum(|c| c.vrs[v].forwarded_packets.get()),
                "forwarded_bytes": d.sum(|c| c.vrs[v].forwarded_bytes.get()),
                "queue_drops": d.sum(|c| c.vrs[v].queue_drops.get()),
                "exceptions": exceptions,
                "exception_drops": d.sum(|c| c.vrs[v].exception_drops.get()),
                "drops": drops,
                "kernel_drops": kernel_drops,
                "routed": routes,
                "slow_path": {
                    "to_kernel_packets": n.to_kernel_packets.get(),
                    "to_kernel_drops": n.to_kernel_drops.get(),
                    "from_kernel_packets": n.from_kernel_packets.get(),
                    "from_kernel_drops": n.from_kernel_drops.get() + d.sum(|c| c.vrs[v].injected_drops.get()),
                    "sent_packets": d.sum(|c| c.vrs[v].injected_packets.get()),
                },
                "queues": queues,
            })
        })
        .collect();
    let cpu = worker_cpu::seconds(d.counters.len());
    let workers: Vec<Value> = d
        .counters
        .iter()
        .zip(cpu)
        .map(|(c, cpu_seconds)| {
            let ports = |f: fn(&pearl_dataplane::counters::PortCounters) -> u64| -> u64 { c.ports.iter().map(f).sum() };
            let vrs = |f: fn(&pearl_dataplane::counters::VrCounters) -> u64| -> u64 { c.vrs.iter().map(f).sum() };
            let malformed = ports(|p| p.malformed.iter().map(|m| m.get()).sum());
            json!({
                "rx_packets": ports(|p| p.rx_packets.get()),
                "rx_bytes": ports(|p| p.rx_bytes.get()),
                "tx_packets": ports(|p| p.tx_packets.get()),
                "tx_bytes": ports(|p| p.tx_bytes.get()),
                "drops": {
                    "malformed": malformed,
                    "unclaimed": ports(|p| p.unclaimed.get()),
                    "tx_errors": ports(|p| p.tx_errors.get()),
                    "queue_full": vrs(|v| v.queue_drops.get()),
                    "slow_path_full": vrs(|v| v.exception_drops.get()),
                },
                "batches": c.batches.get(),
                "idle_polls": c.idle_polls.get(),
                "cpu_seconds": cpu_seconds,
            })
        })
        .collect();
    json!({"time_seconds": monotonic_seconds(), "ports": ports, "vrs": vrs, "workers": workers})
}

/// What `caller` may see of a snapshot: a VR's token its own VR and the ports it sits on, and no
/// workers (they count every VR's traffic).
pub fn visible(mut s: Value, caller: &Caller, config: &Config) -> Value {
    if *caller == Caller::Admin {
        return s;
    }
    let ports: Vec<&str> = config
        .vrs
        .iter()
        .filter(|v| caller.sees(&v.name))
        .flat_map(|v| v.interfaces.iter().map(|i| config.ports[i.port].name.as_str()))
        .collect();
    let keep = |list: &mut Value, pick: &dyn Fn(&str) -> bool| {
        if let Some(l) = list.as_array_mut() {
            l.retain(|x| pick(x["name"].as_str().unwrap_or_default()));
        }
    };
    keep(&mut s["vrs"], &|name| caller.sees(name));
    keep(&mut s["ports"], &|name| ports.contains(&name));
    s["workers"] = json!([]);
    s
}

fn monotonic_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
