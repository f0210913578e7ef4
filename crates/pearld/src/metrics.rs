//! The stats snapshot as Prometheus metric families (text exposition format 0.0.4): counters for
//! everything the snapshot counts, labelled by port, VR, queue, worker and drop reason.
//!
//! Written here rather than by `prometheus-client`, whose only encoder is OpenMetrics 1.0: a
//! counter's `# TYPE` line would lose its `_total` (`# TYPE pearl_vr_rx_packets counter`), the
//! help would gain a full stop, the body would end in `# EOF` and be served as
//! `application/openmetrics-text` (its documentation's own example), which changes
//! what scrapers and `test_api.py` read from `/metrics`; and it would hold a registry of
//! metric objects updated beside the snapshot, which this renders once per scrape.

use crate::models::node::NodeReport;
use serde_json::Value;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

#[derive(Debug, Clone)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub samples: Vec<Sample>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

/// Families in the order first added, each holding its samples.
#[derive(Default)]
pub struct Families(pub Vec<Family>);

impl Families {
    pub fn add(&mut self, name: &'static str, help: &'static str, kind: Kind, labels: &[(&'static str, &str)], value: f64) {
        let i = match self.0.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                self.0.push(Family { name, help, kind, samples: Vec::new() });
                self.0.len() - 1
            }
        };
        let labels = labels.iter().map(|(k, v)| (*k, v.to_string())).collect();
        self.0[i].samples.push(Sample { labels, value });
    }
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn name(v: &Value) -> &str {
    v["name"].as_str().unwrap_or("")
}

pub fn families(s: &Value) -> Vec<Family> {
    use Kind::{Counter, Gauge};
    let mut f = Families::default();
    for p in s["ports"].as_array().into_iter().flatten() {
        let port = [("port", name(p))];
        f.add(
            "pearl_port_info",
            "A port and the interface it drives.",
            Gauge,
            &[("port", name(p)), ("interface", p["interface"].as_str().unwrap_or(""))],
            1.0,
        );
        f.add(
            "pearl_port_rx_packets_total",
            "Frames received on the port, offloaded ones included.",
            Counter,
            &port,
            num(&p["rx_packets"]),
        );
        f.add("pearl_port_rx_bytes_total", "Bytes received on the port, offloaded ones included.", Counter, &port, num(&p["rx_bytes"]));
        f.add("pearl_port_tx_packets_total", "Frames sent on the port, offloaded ones included.", Counter, &port, num(&p["tx_packets"]));
        f.add("pearl_port_tx_bytes_total", "Bytes sent on the port, offloaded ones included.", Counter, &port, num(&p["tx_bytes"]));
        let offloaded = "Of the port's frames, those the kernel forwarded for a VR (flow offload), by direction.";
        let offloaded_bytes = "Of the port's bytes, those of frames the kernel forwarded for a VR, by direction.";
        for (direction, packets, bytes) in
            [("rx", "offloaded_rx_packets", "offloaded_rx_bytes"), ("tx", "offloaded_tx_packets", "offloaded_tx_bytes")]
        {
            let l = [("port", name(p)), ("direction", direction)];
            f.add("pearl_port_offloaded_packets_total", offloaded, Counter, &l, num(&p[packets]));
            f.add("pearl_port_offloaded_bytes_total", offloaded_bytes, Counter, &l, num(&p[bytes]));
        }
        let drops = "Frames the port dropped, by reason (malformed_* names the header at fault).";
        for (reason, key) in [
            ("tx_error", "tx_errors"),
            ("unclaimed", "unclaimed"),
            ("rx_dropped", "rx_dropped"),
            ("rx_error", "rx_errors"),
            ("vxlan_malformed", "vxlan_malformed"),
            ("vxlan_unknown_vni", "vxlan_unknown_vni"),
        ] {
            f.add("pearl_port_drops_total", drops, Counter, &[("port", name(p)), ("reason", reason)], num(&p[key]));
        }
        for (reason, n) in p["malformed"].as_object().into_iter().flatten() {
            f.add("pearl_port_drops_total", drops, Counter, &[("port", name(p)), ("reason", &format!("malformed_{reason}"))], num(n));
        }
    }
    for v in s["vrs"].as_array().into_iter().flatten() {
        let vr = [("vr", name(v))];
        f.add("pearl_vr_info", "A VR and its kind.", Gauge, &[("vr", name(v)), ("kind", v["kind"].as_str().unwrap_or(""))], 1.0);
        f.add("pearl_vr_rx_packets_total", "Packets the classifier gave the VR.", Counter, &vr, num(&v["rx_packets"]));
        f.add("pearl_vr_rx_bytes_total", "Bytes the classifier gave the VR.", Counter, &vr, num(&v["rx_bytes"]));
        let forwarded = "Packets the VR's fast path forwarded, offloaded ones included.";
        f.add("pearl_vr_forwarded_packets_total", forwarded, Counter, &vr, num(&v["forwarded_packets"]));
        let forwarded = "Bytes the VR's fast path forwarded, offloaded ones included.";
        f.add("pearl_vr_forwarded_bytes_total", forwarded, Counter, &vr, num(&v["forwarded_bytes"]));
        if let Some(n) = v["kernel_forwarded_packets"].as_u64() {
            let by_kernel = "Packets the VR's own kernel forwarded (all of a kernel VR's), from its namespace's IP MIB.";
            f.add("pearl_vr_kernel_forwarded_packets_total", by_kernel, Counter, &vr, n as f64);
        }
        f.add(
            "pearl_vr_offloaded_packets_total",
            "Of the forwarded packets, those the kernel forwarded for the fast path (flow offload).",
            Counter,
            &vr,
            num(&v["offloaded_packets"]),
        );
        f.add(
            "pearl_vr_offloaded_bytes_total",
            "Of the forwarded bytes, those of offloaded flows.",
            Counter,
            &vr,
            num(&v["offloaded_bytes"]),
        );
        for (reason, n) in v["exceptions"].as_object().into_iter().flatten() {
            f.add(
                "pearl_vr_exceptions_total",
                "Packets sent to the VR's slow path, by reason.",
                Counter,
                &[("vr", name(v)), ("reason", reason)],
                num(n),
            );
        }
        let r = &v["routed"];
        if r.is_object() {
            let fib = "Routes routed installed in the VR's FIB, by family.";
            f.add("pearl_vr_fib_routes", fib, Gauge, &[("vr", name(v)), ("family", "ipv4")], num(&r["routes_v4"]));
            f.add("pearl_vr_fib_routes", fib, Gauge, &[("vr", name(v)), ("family", "ipv6")], num(&r["routes_v6"]));
            f.add("pearl_vr_neighbors", "Resolved neighbours of the VR.", Gauge, &vr, num(&r["neighbors"]));
            let refused = "Kernel routes the fast path cannot carry out (sent to the kernel instead).";
            f.add("pearl_vr_routes_refused", refused, Gauge, &vr, num(&r["refused"]));
            let over = "Routes left out of the FIB because it reached limits.fib_entries.";
            f.add("pearl_vr_routes_over_quota", over, Gauge, &vr, num(&r["over_quota"]));
            let resyncs = "Full re-reads of the VR's kernel tables after the first.";
            f.add("pearl_vr_routed_resyncs_total", resyncs, Counter, &vr, num(&r["resyncs"]));
            let batches = "Route batches routed published into the VR's tables.";
            f.add("pearl_vr_routed_batches_total", batches, Counter, &vr, num(&r["batches"]));
        }
        let sp = &v["slow_path"];
        let drops = "Packets of the VR dropped, by reason.";
        for (reason, n) in [
            ("queue_full", &v["queue_drops"]),
            ("slow_path_full", &v["exception_drops"]),
            ("to_kernel", &sp["to_kernel_drops"]),
            ("from_kernel", &sp["from_kernel_drops"]),
        ] {
            f.add("pearl_vr_drops_total", drops, Counter, &[("vr", name(v)), ("reason", reason)], num(n));
        }
        if let Some(refused) = v["drops"].as_object() {
            for (reason, n) in refused {
                f.add("pearl_vr_drops_total", drops, Counter, &[("vr", name(v)), ("reason", reason.as_str())], num(n));
            }
        }
        for (counter, n) in v["kernel_drops"].as_object().into_iter().flatten() {
            f.add(
                "pearl_vr_kernel_drops_total",
                "Packets the VR's kernel dropped (of those the fast path handed it, and its own), by its MIB counter as nstat names it.",
                Counter,
                &[("vr", name(v)), ("counter", counter.as_str())],
                num(n),
            );
        }
        let impaired = "Packets the VR's impaired links (impair:) lost, and second copies they sent.";
        for (effect, key) in [("lost", "lost"), ("duplicated", "duplicated")] {
            f.add("pearl_vr_impaired_packets_total", impaired, Counter, &[("vr", name(v)), ("effect", effect)], num(&v["impaired"][key]));
        }
        let slow = "Packets through the VR's slow path: to and from its kernel, and sent out of ports.";
        for (direction, n) in
            [("to_kernel", &sp["to_kernel_packets"]), ("from_kernel", &sp["from_kernel_packets"]), ("sent", &sp["sent_packets"])]
        {
            f.add("pearl_vr_slow_path_packets_total", slow, Counter, &[("vr", name(v)), ("direction", direction)], num(n));
        }
        for q in v["queues"].as_array().into_iter().flatten() {
            let index = q["queue"].to_string();
            let l = [("vr", name(v)), ("port", q["port"].as_str().unwrap_or("")), ("queue", index.as_str())];
            f.add("pearl_queue_enqueued_packets_total", "Packets put in the queue.", Counter, &l, num(&q["enqueued_packets"]));
            let sent = "Packets the VR sent through the queue, offloaded ones included.";
            f.add("pearl_queue_sent_packets_total", sent, Counter, &l, num(&q["sent_packets"]));
            f.add(
                "pearl_queue_sent_bytes_total",
                "Bytes the VR sent through the queue, offloaded ones included.",
                Counter,
                &l,
                num(&q["sent_bytes"]),
            );
            let offloaded = "Of the queue's sent packets, those the kernel forwarded for the VR out of the port (flow offload).";
            f.add("pearl_queue_offloaded_packets_total", offloaded, Counter, &l, num(&q["offloaded_packets"]));
            let offloaded = "Of the queue's sent bytes, those the kernel forwarded for the VR out of the port.";
            f.add("pearl_queue_offloaded_bytes_total", offloaded, Counter, &l, num(&q["offloaded_bytes"]));
            f.add(
                "pearl_queue_dropped_packets_total",
                "Packets dropped because the queue was full.",
                Counter,
                &l,
                num(&q["dropped_packets"]),
            );
            f.add("pearl_queue_backlog_packets", "Packets waiting in the queue.", Gauge, &l, num(&q["backlog_packets"]));
            f.add("pearl_queue_weight", "The queue's WDRR weight among its VR's queues on the port.", Gauge, &l, num(&q["weight"]));
        }
    }
    for (i, w) in s["workers"].as_array().into_iter().flatten().enumerate() {
        let index = i.to_string();
        let worker = [("worker", index.as_str())];
        f.add("pearl_worker_rx_packets_total", "Frames the worker received.", Counter, &worker, num(&w["rx_packets"]));
        f.add("pearl_worker_rx_bytes_total", "Bytes the worker received.", Counter, &worker, num(&w["rx_bytes"]));
        f.add("pearl_worker_tx_packets_total", "Frames the worker sent.", Counter, &worker, num(&w["tx_packets"]));
        f.add("pearl_worker_tx_bytes_total", "Bytes the worker sent.", Counter, &worker, num(&w["tx_bytes"]));
        for (reason, n) in w["drops"].as_object().into_iter().flatten() {
            f.add(
                "pearl_worker_drops_total",
                "Frames the worker dropped, by reason.",
                Counter,
                &[("worker", index.as_str()), ("reason", reason)],
                num(n),
            );
        }
        f.add("pearl_worker_batches_total", "Rounds of the worker's poll loop.", Counter, &worker, num(&w["batches"]));
        f.add("pearl_worker_idle_polls_total", "Rounds that found nothing to do.", Counter, &worker, num(&w["idle_polls"]));
        f.add("pearl_worker_cpu_seconds_total", "CPU time the worker thread used.", Counter, &worker, num(&w["cpu_seconds"]));
        let stalls = "Rounds that began over 1 ms after the previous one while the worker was not pausing by choice.";
        f.add("pearl_worker_stalls_total", stalls, Counter, &worker, num(&w["stalls"]));
        let longest = "The longest gap between two rounds the worker did not choose, since pearld started.";
        f.add("pearl_worker_longest_stall_seconds", longest, Gauge, &worker, num(&w["longest_stall_seconds"]));
    }
    f.0
}

/// The node's resources (`GET /v1/node`): capacity (unbounded ones left out), granted, and
/// each VR's grants.
pub fn node_families(node: &NodeReport) -> Vec<Family> {
    let mut f = Families::default();
    for (resource, v) in node.capacity.0.iter().filter_map(|(r, v)| Some((r, (*v)?))) {
        f.add(
            "pearl_node_resource_capacity",
            "What the node has to grant VRs, by resource.",
            Kind::Gauge,
            &[("resource", resource)],
            v as f64,
        );
    }
    for (resource, v) in &node.granted.0 {
        f.add(
            "pearl_node_resource_granted",
            "What VRs were granted together, by resource.",
            Kind::Gauge,
            &[("resource", resource)],
            *v as f64,
        );
    }
    for vr in &node.vrs {
        for (resource, v) in &vr.resources.by_name {
            f.add(
                "pearl_vr_resource_granted",
                "What a VR was granted, by resource.",
                Kind::Gauge,
                &[("vr", &vr.name), ("resource", resource)],
                *v as f64,
            );
        }
    }
    f.0
}

pub fn render(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help.replace('\\', "\\\\").replace('\n', "\\n"));
        let _ = writeln!(out, "# TYPE {} {kind}", f.name);
        for s in &f.samples {
            out += f.name;
            if !s.labels.is_empty() {
                let labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
                let _ = write!(out, "{{{}}}", labels.join(","));
            }
            let _ = writeln!(out, " {}", number(s.value));
        }
    }
    out
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn number(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        x.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snapshot() -> Value {
        json!({
            "time_seconds": 10.5,
            "ports": [{"name": "p0", "interface": "veth\"0", "rx_packets": 5, "rx_bytes": 500, "tx_packets": 4, "tx_bytes": 400,
                       "offloaded_rx_packets": 3, "offloaded_rx_bytes": 300, "offloaded_tx_packets": 2, "offloaded_tx_bytes": 200,
                       "tx_errors": 1, "unclaimed": 2, "rx_dropped": 7, "rx_errors": 0, "malformed": {"truncated": 3}}],
            "vrs": [{"name": "red", "kind": "fast", "rx_packets": 9, "rx_bytes": 900, "forwarded_packets": 8, "forwarded_bytes": 800,
                     "offloaded_packets": 2, "offloaded_bytes": 200, "kernel_forwarded_packets": 11,
                     "queue_drops": 1, "exceptions": {"arp": 2}, "exception_drops": 0,
                     "drops": {"bad_checksum": 6, "martian_source": 0}, "kernel_drops": {"IpInAddrErrors": 2},
                     "routed": {"routes_v4": 3, "routes_v6": 1, "neighbors": 2, "refused": 0, "over_quota": 0,
                                "resyncs": 0, "batches": 4},
                     "slow_path": {"to_kernel_packets": 2, "to_kernel_drops": 0, "from_kernel_packets": 1, "from_kernel_drops": 0, "sent_packets": 1},
                     "queues": [{"port": "p0", "queue": 0, "weight": 1, "enqueued_packets": 8, "sent_packets": 7, "sent_bytes": 700,
                                 "offloaded_packets": 2, "offloaded_bytes": 200,
                                 "dropped_packets": 1, "backlog_packets": 0}]}],
            "workers": [{"rx_packets": 5, "rx_bytes": 500, "tx_packets": 4, "tx_bytes": 400,
                         "drops": {"malformed": 3, "unclaimed": 2, "tx_errors": 1, "queue_full": 1, "slow_path_full": 0},
                         "batches": 100, "idle_polls": 90, "stalls": 3, "longest_stall_seconds": 0.0125, "cpu_seconds": 0.25}]
        })
    }

    #[test]
    fn every_family_has_help_and_type_before_its_samples() {
        let text = render(&families(&snapshot()));
        let mut declared = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                declared.push(rest.split(' ').next().unwrap().to_string());
            } else if !line.starts_with("# HELP ") {
                let name = line.split(['{', ' ']).next().unwrap();
                assert_eq!(declared.last().map(String::as_str), Some(name), "{line}");
            }
        }
        let unique: std::collections::HashSet<_> = declared.iter().collect();
        assert_eq!(unique.len(), declared.len(), "a family is declared once");
    }

    #[test]
    fn samples_carry_their_labels_and_values() {
        let text = render(&families(&snapshot()));
        for line in [
            "pearl_port_info{port=\"p0\",interface=\"veth\\\"0\"} 1",
            "pearl_port_rx_packets_total{port=\"p0\"} 5",
            "pearl_port_drops_total{port=\"p0\",reason=\"malformed_truncated\"} 3",
            "pearl_port_drops_total{port=\"p0\",reason=\"rx_dropped\"} 7",
            "pearl_vr_exceptions_total{vr=\"red\",reason=\"arp\"} 2",
            "pearl_vr_drops_total{vr=\"red\",reason=\"queue_full\"} 1",
            "pearl_vr_drops_total{vr=\"red\",reason=\"bad_checksum\"} 6",
            "pearl_vr_kernel_drops_total{vr=\"red\",counter=\"IpInAddrErrors\"} 2",
            "pearl_vr_fib_routes{vr=\"red\",family=\"ipv6\"} 1",
            "pearl_vr_routed_batches_total{vr=\"red\"} 4",
            "pearl_queue_sent_bytes_total{vr=\"red\",port=\"p0\",queue=\"0\"} 700",
            "pearl_queue_offloaded_packets_total{vr=\"red\",port=\"p0\",queue=\"0\"} 2",
            "pearl_port_offloaded_bytes_total{port=\"p0\",direction=\"tx\"} 200",
            "pearl_vr_kernel_forwarded_packets_total{vr=\"red\"} 11",
            "pearl_worker_cpu_seconds_total{worker=\"0\"} 0.25",
            "pearl_worker_stalls_total{worker=\"0\"} 3",
            "pearl_worker_longest_stall_seconds{worker=\"0\"} 0.0125",
            "# TYPE pearl_worker_longest_stall_seconds gauge",
            "# TYPE pearl_queue_backlog_packets gauge",
            "# TYPE pearl_worker_batches_total counter",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn the_node_report_gives_the_bounded_capacities_the_grants_and_each_vrs_grants() {
        use crate::models::node::{FastSlots, NodeReport, NodeVr};
        use crate::models::resources::ResourceTable;
        use crate::models::vr_kind::VrKind;
        let report = NodeReport {
            capacity: ResourceTable(vec![("pps", Some(5000)), ("filters", None)]),
            granted: ResourceTable(vec![("pps", 1000), ("filters", 0)]),
            free: ResourceTable(vec![("pps", Some(4000)), ("filters", None)]),
            fast_slots: FastSlots { capacity: None, used: 1, free: None },
            vrs: vec![NodeVr { name: "red".into(), kind: VrKind::Fast, resources: vec![("pps", 1000)].into(), workers: vec![0] }],
        };
        let text = render(&node_families(&report));
        for line in [
            "pearl_node_resource_capacity{resource=\"pps\"} 5000",
            "pearl_node_resource_granted{resource=\"filters\"} 0",
            "pearl_vr_resource_granted{vr=\"red\",resource=\"pps\"} 1000",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        assert!(!text.contains("pearl_node_resource_capacity{resource=\"filters\"}"), "an unbounded resource has no capacity");
    }

    #[test]
    fn odd_values_are_spelled_as_prometheus_expects() {
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(1e6), "1000000");
        assert_eq!(escape("a\\b\nc"), "a\\\\b\\nc");
    }
}
