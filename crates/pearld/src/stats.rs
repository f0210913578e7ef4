//! The live counters as JSON: per port, per VR (with exceptions by reason and its queues), per
//! worker. Summed over workers at read time; workers never wait for a reader. `time_seconds`
//! stamps the snapshot so that readers compute rates against pearld's clock, not their own.

use crate::activity::Activity;
use crate::kernel_drops::Drops;
use crate::node::Node;
use crate::router::Caller;
use crate::vr_query::VrQuery;
use crate::worker_cpu;
use pearl_control::VrConfig;
use pearl_dataplane::dataplane::Layout;
use pearl_dataplane::slowpath::NetioCounters;
use pearl_routed::RoutedStats;
use pearl_wire::WireError;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::io::Write;

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

/// The snapshot written as text as it is read: with thousands of VRs, a JSON tree of every
/// counter (built, written, freed) cost four times what the counting does.
fn json_text(node: &Node, detail: Detail, caller: &Caller, query: &VrQuery, activity: &Activity) -> Vec<u8> {
    let d = &node.dataplane;
    d.refresh_offloaded();
    let layout = d.layout();
    let config = &layout.config;
    let ports_seen: HashSet<usize> =
        config.vrs.iter().filter(|v| caller.sees(&v.name)).flat_map(|v| v.interfaces.iter().map(|i| i.port)).collect();
    let selected = query.select(&config.vrs, caller, activity, |id| d.sum(|c| c.vrs[usize::from(id)].rx_packets.get()));
    let seen = selected.vrs;
    let ports: Vec<Value> = config
        .ports
        .iter()
        .enumerate()
        .filter(|(p, _)| ports_seen.contains(p))
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
                "rx_dropped": d.sum(|c| c.ports[p].rx_dropped.get()),
                "rx_errors": d.sum(|c| c.ports[p].rx_errors.get()),
                "malformed": malformed,
            })
        })
        .collect();
    let slow_paths: Vec<_> = seen.iter().map(|vr| node.slow_path_counters(vr.id).unwrap_or_default()).collect();
    let kernel_drops = match detail {
        Detail::Full => {
            let activity: Vec<(u16, u64)> =
                seen.iter().zip(&slow_paths).map(|(vr, n)| (vr.id, n.to_kernel_packets.get() + n.from_kernel_packets.get())).collect();
            node.kernel_drops(&activity)
        }
        Detail::Counters => HashMap::new(),
    };
    let workers: Vec<Value> = if *caller == Caller::Admin { workers(node) } else { Vec::new() };

    let mut out = Vec::with_capacity(256 + seen.len() * 1536);
    out.extend_from_slice(b"{\"time_seconds\":");
    push_value(&mut out, &json!(monotonic_seconds()));
    out.extend_from_slice(b",\"ports\":");
    push_value(&mut out, &Value::Array(ports));
    out.extend_from_slice(b",\"workers\":");
    push_value(&mut out, &Value::Array(workers));
    out.extend_from_slice(b",\"vrs_total\":");
    push_value(&mut out, &json!(selected.total));
    out.extend_from_slice(b",\"vrs\":[");
    for (k, (vr, n)) in seen.iter().zip(&slow_paths).enumerate() {
        if k > 0 {
            out.push(b',');
        }
        let routed = node.routed_stats(vr.id);
        write_vr(&mut out, node, &layout, vr, n, kernel_drops.get(&vr.id), routed.as_ref());
    }
    out.extend_from_slice(b"]}\n");
    out
}

fn write_vr(
    out: &mut Vec<u8>,
    node: &Node,
    layout: &Layout,
    vr: &VrConfig,
    n: &NetioCounters,
    kernel_drops: Option<&Drops>,
    routed: Option<&RoutedStats>,
) {
    let d = &node.dataplane;
    let v = vr.id as usize;
    let mut o = Obj::open(out);
    o.str("name", &vr.name);
    o.u64("id", vr.id.into());
    o.str("kind", vr.kind.name());
    o.u64("rx_packets", d.sum(|c| c.vrs[v].rx_packets.get()));
    o.u64("rx_bytes", d.sum(|c| c.vrs[v].rx_bytes.get()));
    o.u64("forwarded_packets", d.sum(|c| c.vrs[v].forwarded_packets.get()));
    o.u64("forwarded_bytes", d.sum(|c| c.vrs[v].forwarded_bytes.get()));
    // Of those, what the kernel forwarded for the fast path (`node.flow_offload`).
    o.u64("offloaded_packets", d.sum(|c| c.vrs[v].offloaded_packets.get()));
    o.u64("offloaded_bytes", d.sum(|c| c.vrs[v].offloaded_bytes.get()));
    o.u64("queue_drops", d.sum(|c| c.vrs[v].queue_drops.get()));
    o.counts("exceptions", &d.exceptions(vr.id));
    o.u64("exception_drops", d.sum(|c| c.vrs[v].exception_drops.get()));
    o.counts("drops", &d.drops(vr.id));
    // What the VR's impaired links (`impair:`) did to its packets.
    let mut im = o.object("impaired");
    im.u64("lost", d.sum(|c| c.vrs[v].impaired_lost.get()));
    im.u64("duplicated", d.sum(|c| c.vrs[v].impaired_duplicates.get()));
    im.close();
    match kernel_drops {
        Some(k) => o.counts("kernel_drops", k),
        None => o.null("kernel_drops"),
    }
    match routed {
        Some(r) => {
            let mut ro = o.object("routed");
            for (name, value) in [
                ("routes_v4", r.routes_v4),
                ("routes_v6", r.routes_v6),
                ("neighbors", r.neighbors),
                ("refused", r.refused),
                ("over_quota", r.over_quota),
                ("resyncs", r.resyncs),
                ("batches", r.batches),
                ("deferred_removals", r.deferred_removals),
            ] {
                ro.u64(name, value);
            }
            ro.bool("held", r.held);
            ro.close();
        }
        None => o.null("routed"),
    }
    let mut sp = o.object("slow_path");
    sp.u64("to_kernel_packets", n.to_kernel_packets.get());
    sp.u64("to_kernel_drops", n.to_kernel_drops.get());
    sp.u64("from_kernel_packets", n.from_kernel_packets.get());
    sp.u64("from_kernel_drops", n.from_kernel_drops.get() + d.sum(|c| c.vrs[v].injected_drops.get()));
    sp.u64("sent_packets", d.sum(|c| c.vrs[v].injected_packets.get()));
    sp.close();
    let out = o.key("queues");
    out.push(b'[');
    let mut first = true;
    for (p, firsts) in layout.first_queue.iter().enumerate() {
        let Some(head) = firsts[v] else { continue };
        for q in 0..vr.queues.len() {
            let id = head as usize + q;
            let sum =
                |f: fn(&pearl_dataplane::output::QueueMirror) -> u64| -> u64 { layout.queues.iter().map(|w| f(&w.ports[p][id])).sum() };
            if !first {
                out.push(b',');
            }
            first = false;
            let mut qo = Obj::open(out);
            qo.str("port", &layout.config.ports[p].name);
            qo.u64("queue", q as u64);
            qo.u64("weight", vr.queues[q].weight.into());
            qo.u64("enqueued_packets", sum(|m| m.enqueued_packets.get()));
            qo.u64("sent_packets", sum(|m| m.sent_packets.get()));
            qo.u64("sent_bytes", sum(|m| m.sent_bytes.get()));
            qo.u64("dropped_packets", sum(|m| m.dropped_packets.get()));
            qo.u64("backlog_packets", sum(|m| m.backlog_packets.get()));
            qo.close();
        }
    }
    out.push(b']');
    o.close();
}

fn workers(node: &Node) -> Vec<Value> {
    let d = &node.dataplane;
    let cpu = worker_cpu::seconds(d.counters.len());
    d.counters
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
                    "rx_dropped": ports(|p| p.rx_dropped.get()),
                    "tx_errors": ports(|p| p.tx_errors.get()),
                    "queue_full": vrs(|v| v.queue_drops.get()),
                    "slow_path_full": vrs(|v| v.exception_drops.get()),
                },
                "batches": c.batches.get(),
                "idle_polls": c.idle_polls.get(),
                "stalls": c.stalls.get(),
                "longest_stall_seconds": c.longest_stall_ns.get() as f64 / 1e9,
                "cpu_seconds": cpu_seconds,
            })
        })
        .collect()
}

fn push_value(out: &mut Vec<u8>, v: &Value) {
    serde_json::to_writer(out, v).expect("a Value always serialises");
}

/// A JSON object written as its members come; keys are identifiers (no escaping needed).
struct Obj<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    fn open(out: &'a mut Vec<u8>) -> Obj<'a> {
        out.push(b'{');
        Obj { out, first: true }
    }

    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    fn u64(&mut self, key: &str, v: u64) {
        let out = self.key(key);
        let _ = write!(out, "{v}");
    }

    fn bool(&mut self, key: &str, v: bool) {
        let text: &[u8] = if v { b"true" } else { b"false" };
        self.key(key).extend_from_slice(text);
    }

    fn null(&mut self, key: &str) {
        self.key(key).extend_from_slice(b"null");
    }

    fn str(&mut self, key: &str, v: &str) {
        let out = self.key(key);
        serde_json::to_writer(out, v).expect("a string always serialises");
    }

    fn counts(&mut self, key: &str, counts: &[(&'static str, u64)]) {
        let mut o = self.object(key);
        for (name, n) in counts {
            o.u64(name, *n);
        }
        o.close();
    }

    fn object(&mut self, key: &str) -> Obj<'_> {
        Obj::open(self.key(key))
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

fn monotonic_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_written_member_by_member_is_the_json_it_says() {
        let mut out = Vec::new();
        let mut o = Obj::open(&mut out);
        o.str("name", "r\"ed\\\u{1}");
        o.u64("id", u64::MAX);
        o.counts("drops", &[("bad_checksum", 3), ("ttl", 0)]);
        o.counts("none", &[]);
        o.null("routed");
        let mut inner = o.object("slow_path");
        inner.bool("held", true);
        inner.u64("sent_packets", 7);
        inner.close();
        o.bool("last", false);
        o.close();
        let parsed: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            parsed,
            json!({"name": "r\"ed\\\u{1}", "id": u64::MAX, "drops": {"bad_checksum": 3, "ttl": 0}, "none": {}, "routed": null,
                   "slow_path": {"held": true, "sent_packets": 7}, "last": false})
        );
    }
}
