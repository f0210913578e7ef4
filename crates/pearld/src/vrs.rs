//! VRs as the API shows them: what each one is (kind, code option, interfaces and the ports they
//! sit on, routes, queues, limits, control plane) rather than what it counts (that is `stats`).

use crate::activity::Activity;
use crate::node::Node;
use crate::router::Caller;
use crate::vr_query::VrQuery;
use pearl_control::{mac_text as mac, nat_ports_text, Config, ControlPlane, FilterAction, MatchRule, PluginModule, VrConfig};
use pearl_dataplane::dataplane::vr_interface_mtu;
use pearl_vrproc::{Bird, DaemonStatus};
use serde_json::{json, Value};

/// The VRs `caller` sees that `query` selects, and how many matched before paging.
pub fn list(node: &Node, caller: &Caller, query: &VrQuery, activity: &Activity) -> (Vec<Value>, usize) {
    let config = node.config();
    let d = &node.dataplane;
    let selected = query.select(&config.vrs, caller, activity, |id| d.sum(|c| c.vrs[usize::from(id)].rx_packets.get()));
    (selected.vrs.iter().map(|vr| view(node, &config, vr)).collect(), selected.total)
}

pub fn find(node: &Node, name: &str) -> Option<Value> {
    let config = node.config();
    // From the end: a VR just created, whose answer this makes, is the last of thousands.
    config.vrs.iter().rev().find(|vr| vr.name == name).map(|vr| view(node, &config, vr))
}

fn view(node: &Node, config: &Config, vr: &VrConfig) -> Value {
    let interface_name = |i: usize| vr.interfaces[i].name.clone();
    let mut ports: Vec<String> = Vec::new();
    for i in &vr.interfaces {
        let p = &config.ports[i.port].name;
        if !ports.contains(p) {
            ports.push(p.clone());
        }
    }
    let mut limits = json!({
        "fib_entries": vr.limits.fib_entries,
        "filters": vr.limits.filters,
        "cpu_percent": vr.limits.cpu_percent,
        "memory_mb": vr.limits.memory_mb,
        "punt_pps": vr.limits.punt_pps,
    });
    if let Some(rate) = vr.limits.rate_mbps {
        limits["rate_mbps"] = rate.into();
    }
    if let Some(share) = vr.limits.share {
        limits["share"] = share.into();
    }
    let mut v = json!({
        "name": vr.name,
        "id": vr.id,
        "kind": vr.kind.name(),
        "code": vr.code.name(),
        "accept_source_route": vr.accept_source_route,
        // vmm names each VR's namespace after the VR.
        "namespace": vr.name,
        "ports": ports,
        "interfaces": vr.interfaces.iter().map(|i| json!({
            "name": i.name,
            "port": config.ports[i.port].name,
            "mac": mac(i.mac),
            "addresses": i.addresses.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "mtu": vr_interface_mtu(config, i),
            "urpf": i.urpf.name(),
            "impair": i.impair.to_fields().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        })).collect::<Vec<_>>(),
        "routes": vr.routes.iter().map(|r| json!({
            "prefix": r.prefix.to_string(), "via": r.via.to_string(), "interface": interface_name(r.interface),
        })).collect::<Vec<_>>(),
        "neighbors": vr.neighbors.iter().map(|n| json!({
            "ip": n.ip.to_string(), "mac": mac(n.mac), "interface": interface_name(n.interface),
        })).collect::<Vec<_>>(),
        "match_rules": vr.matches.iter().map(|m| match_rule(m, &interface_name)).collect::<Vec<_>>(),
        "queues": vr.queues.iter().map(|q| json!({"weight": q.weight, "length": q.length})).collect::<Vec<_>>(),
        "limits": limits,
    });
    if vr.kind.is_placed() {
        // `kind` is where the VR is; `data_plane` says it for clients that ask about placement.
        v["placement"] = vr.placement.name().into();
        v["data_plane"] = vr.kind.name().into();
    }
    if let Some(plugin) = &vr.plugin {
        // Its program is the plugin: no code option applies.
        v.as_object_mut().expect("an object").remove("code");
        v["plugin"] = match &plugin.module {
            PluginModule::Wasm { path, bytes } => {
                v["limits"]["fuel_per_packet"] = vr.limits.fuel_per_packet.into();
                json!({"wasm": path.display().to_string(), "bytes": bytes.len(), "config": plugin.config})
            }
            PluginModule::Process { argv } => json!({"process": argv, "config": plugin.config}),
            PluginModule::Xdp { path, bytes, section } => {
                v["limits"]["fuel_per_packet"] = vr.limits.fuel_per_packet.into();
                let mut xdp = json!({"xdp": path.display().to_string(), "bytes": bytes.len()});
                if let Some(section) = section {
                    xdp["section"] = section.as_str().into();
                }
                xdp
            }
        };
        if !plugin.tables.is_empty() {
            v["plugin"]["tables"] = plugin.tables.iter().map(|(n, max)| (n.clone(), json!(max))).collect::<serde_json::Map<_, _>>().into();
        }
    }
    v["distribution"] = vr.distribution.name().into();
    let slices = &node.dataplane.layout().slices;
    v["workers"] = slices.workers_of(vr.id).into();
    if let Some(held) = slices.of(vr.id) {
        v["slices"] = held.iter().map(|s| json!({"worker": s.worker, "pps": s.pps})).collect::<Vec<_>>().into();
    }
    if !vr.resources.is_empty() {
        v["resources"] = vr.resources.iter().map(|(r, a)| (r.to_string(), json!(a))).collect::<serde_json::Map<_, _>>().into();
    }
    if !vr.leak.is_empty() {
        v["leak"] = vr
            .leak
            .iter()
            .map(|l| json!({"from": l.from, "prefixes": l.prefixes.iter().map(ToString::to_string).collect::<Vec<_>>()}))
            .collect();
    }
    if let Some(nat) = &vr.nat {
        let interface = &vr.interfaces[nat.interface].name;
        v["nat"] = json!({"address": nat.address.to_string(), "ports": nat_ports_text(nat), "interface": interface});
    }
    match &vr.control_plane {
        Some(ControlPlane::Frr(frr)) => {
            v["control_plane"] = json!({"frr": {"daemons": frr.daemons, "config": frr.config.display().to_string()}})
        }
        // The socket is where `birdc -s` reaches this VR's BIRD.
        Some(ControlPlane::Bird(bird)) => {
            let socket = Bird::socket_of(&vr.name).display().to_string();
            v["control_plane"] = json!({"bird": {"config": bird.config.display().to_string(), "socket": socket}});
        }
        Some(ControlPlane::Command(c)) => v["control_plane"] = json!({"command": c.argv}),
        None => {}
    }
    if let Some(status) = node.daemon_status(vr.id) {
        v["processes"] = status.iter().map(process).collect();
    }
    v
}

/// A control-plane process: what it is, whether it runs, how often it was restarted.
fn process(d: &DaemonStatus) -> Value {
    let mut p = json!({"name": d.name, "running": d.running, "restarts": d.restarts});
    if let Some(pid) = d.pid {
        p["pid"] = pid.into();
    }
    p
}

/// A `match` rule's priority and queue, and a filter VR's action (`out` and `mac`, `slow` or
/// `drop`) as its configuration states it.
fn match_rule(m: &MatchRule, interface_name: &impl Fn(usize) -> String) -> serde_json::Value {
    let mut r = json!({"priority": m.priority, "queue": m.queue});
    match m.action {
        Some(FilterAction::Out { interface, mac: next_hop }) => {
            r["out"] = interface_name(interface).into();
            if let Some(next_hop) = next_hop {
                r["mac"] = mac(next_hop).into();
            }
        }
        Some(FilterAction::Slow) => r["slow"] = true.into(),
        Some(FilterAction::Drop) => r["drop"] = true.into(),
        None => {}
    }
    r
}
