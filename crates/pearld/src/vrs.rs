//! VRs as the API shows them: what each one is (kind, code option, interfaces and the ports they
//! sit on, routes, queues, limits, control plane) rather than what it counts (that is `stats`).

use crate::activity::Activity;
use crate::models::vr::{
    Bird, ControlPlane, Frr, Interface, Leak, Limits, MatchRule, Nat, Neighbor, Plugin, Process, Queue, Route, Slice, Vr, VrList,
};
use crate::models::vr_options::DataPlane;
use crate::node::Node;
use crate::router::Caller;
use crate::vr_query::VrQuery;
use pearl_control::{mac_text as mac, nat_ports_text, Config, FilterAction, PluginConfig, PluginModule, VrConfig, VrKind};
use pearl_dataplane::dataplane::vr_interface_mtu;
use pearl_vrproc::{Bird as BirdDaemon, DaemonStatus};

/// The VRs `caller` sees that `query` selects, and how many matched before paging.
pub fn list(node: &Node, caller: &Caller, query: &VrQuery, activity: &Activity) -> VrList {
    let config = node.config();
    let d = &node.dataplane;
    let selected = query.select(&config.vrs, caller, activity, |id| d.sum(|c| c.vrs[usize::from(id)].rx_packets.get()));
    VrList { vrs: selected.vrs.iter().map(|vr| view(node, &config, vr)).collect(), vrs_total: selected.total }
}

pub fn find(node: &Node, name: &str) -> Option<Vr> {
    let (config, vr) = node.vr_named(name)?;
    Some(view(node, &config, &vr))
}

fn view(node: &Node, config: &Config, vr: &VrConfig) -> Vr {
    let interface_name = |i: usize| vr.interfaces[i].name.clone();
    let mut ports: Vec<String> = Vec::new();
    for i in &vr.interfaces {
        let p = &config.ports[i.port].name;
        if !ports.contains(p) {
            ports.push(p.clone());
        }
    }
    let slices = &node.dataplane.layout().slices;
    // A plugin's program is its forwarding: no code option applies, and fuel is its budget.
    let fuel_per_packet = match vr.plugin.as_ref().map(|p| &p.module) {
        Some(PluginModule::Wasm { .. } | PluginModule::Xdp { .. }) => Some(vr.limits.fuel_per_packet),
        _ => None,
    };
    Vr {
        name: vr.name.clone(),
        id: vr.id,
        kind: vr.kind.into(),
        code: vr.plugin.is_none().then_some(vr.code),
        accept_source_route: vr.accept_source_route,
        // vmm names each VR's namespace after the VR.
        namespace: vr.name.clone(),
        ports,
        interfaces: vr
            .interfaces
            .iter()
            .map(|i| Interface {
                name: i.name.clone(),
                port: config.ports[i.port].name.clone(),
                mac: mac(i.mac),
                addresses: i.addresses.iter().map(ToString::to_string).collect(),
                mtu: vr_interface_mtu(config, i),
                urpf: i.urpf.into(),
                impair: (&i.impair).into(),
            })
            .collect(),
        routes: vr
            .routes
            .iter()
            .map(|r| Route { prefix: r.prefix.to_string(), via: r.via.to_string(), interface: interface_name(r.interface) })
            .collect(),
        neighbors: vr
            .neighbors
            .iter()
            .map(|n| Neighbor { ip: n.ip.to_string(), mac: mac(n.mac), interface: interface_name(n.interface) })
            .collect(),
        match_rules: vr.matches.iter().map(|m| match_rule(m, &interface_name)).collect(),
        queues: vr.queues.iter().map(|q| Queue { weight: q.weight, length: q.length }).collect(),
        limits: Limits {
            fib_entries: vr.limits.fib_entries,
            filters: vr.limits.filters,
            cpu_percent: vr.limits.cpu_percent,
            memory_mb: vr.limits.memory_mb,
            punt_pps: vr.limits.punt_pps,
            rate_mbps: vr.limits.rate_mbps,
            share: vr.limits.share,
            fuel_per_packet,
        },
        // `kind` is where the VR is; `data_plane` says it for clients that ask about placement.
        placement: vr.kind.is_placed().then(|| vr.placement.into()),
        data_plane: match vr.kind {
            VrKind::Fast => Some(DataPlane::Fast),
            VrKind::Kernel => Some(DataPlane::Kernel),
            VrKind::Shared | VrKind::Plugin => None,
        },
        resources: (!vr.resources.is_empty()).then(|| (&vr.resources).into()),
        distribution: vr.distribution.into(),
        workers: slices.workers_of(vr.id),
        slices: slices.of(vr.id).map(|held| held.iter().map(|s| Slice { worker: s.worker, pps: s.pps }).collect()),
        control_plane: vr.control_plane.as_ref().map(|c| control_plane(&vr.name, c)),
        processes: node.daemon_status(vr.id).map(|status| status.iter().map(process).collect()),
        health: None,
        leak: (!vr.leak.is_empty()).then(|| {
            vr.leak.iter().map(|l| Leak { from: l.from.clone(), prefixes: l.prefixes.iter().map(ToString::to_string).collect() }).collect()
        }),
        nat: vr.nat.as_ref().map(|nat| Nat {
            address: nat.address.to_string(),
            ports: nat_ports_text(nat),
            interface: vr.interfaces[nat.interface].name.clone(),
        }),
        plugin: vr.plugin.as_ref().map(plugin),
    }
}

fn plugin(plugin: &PluginConfig) -> Plugin {
    let tables = (!plugin.tables.is_empty()).then(|| plugin.tables.iter().cloned().collect());
    match &plugin.module {
        PluginModule::Wasm { path, bytes } => Plugin {
            wasm: Some(path.display().to_string()),
            bytes: Some(bytes.len()),
            config: Some(plugin.config.clone()),
            tables,
            ..Plugin::default()
        },
        PluginModule::Process { argv } => {
            Plugin { process: Some(argv.clone()), config: Some(plugin.config.clone()), tables, ..Plugin::default() }
        }
        PluginModule::Xdp { path, bytes, section } => Plugin {
            xdp: Some(path.display().to_string()),
            bytes: Some(bytes.len()),
            section: section.clone(),
            tables,
            ..Plugin::default()
        },
    }
}

fn control_plane(vr: &str, c: &pearl_control::ControlPlane) -> ControlPlane {
    match c {
        pearl_control::ControlPlane::Frr(frr) => ControlPlane {
            frr: Some(Frr { daemons: frr.daemons.clone(), config: frr.config.display().to_string() }),
            ..ControlPlane::default()
        },
        pearl_control::ControlPlane::Bird(bird) => ControlPlane {
            bird: Some(Bird { config: bird.config.display().to_string(), socket: BirdDaemon::socket_of(vr).display().to_string() }),
            ..ControlPlane::default()
        },
        pearl_control::ControlPlane::Command(c) => ControlPlane { command: Some(c.argv.clone()), ..ControlPlane::default() },
    }
}

fn process(d: &DaemonStatus) -> Process {
    Process { name: d.name.clone(), running: d.running, restarts: d.restarts, pid: d.pid, last_exit: d.last_exit.clone() }
}

fn match_rule(m: &pearl_control::MatchRule, interface_name: &impl Fn(usize) -> String) -> MatchRule {
    let mut r = MatchRule { priority: m.priority, queue: m.queue, ..MatchRule::default() };
    match m.action {
        Some(FilterAction::Out { interface, mac: next_hop }) => {
            r.out = Some(interface_name(interface));
            r.mac = next_hop.map(mac);
        }
        Some(FilterAction::Slow) => r.slow = Some(true),
        Some(FilterAction::Drop) => r.drop = Some(true),
        None => {}
    }
    r
}
