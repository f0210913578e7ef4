//! `/v1/nets`: virtual networks applied, shown and destroyed as one. A net is an entry of the
//! document's `nets:`, and what it adds to `vrs:` and `ports:` (pearl-control's `net`), so it
//! is validated and applied like any change: a changed link touches the two VR entries and the
//! ports it made, nothing else. Before the change, the hosts and veths it needs are made; a
//! refused change removes them again; after it, what the old net had and the new one has not is
//! removed. (Ports are a change pearld applies by starting again over its VRs: the VRs, their
//! TAPs and daemons live on.)

use crate::api_error::ApiError;
use crate::ctx::Ctx;
use crate::desired::{ChangeError, Edit};
use crate::http::Response;
use crate::models::deleted::Deleted;
use crate::models::net::{Direction, LinkTraffic, NetHost, NetLink, NetList, NetReport};
use crate::net_hosts::{self, HostsError};
use crate::node::Node;
use crate::router::Call;
use pearl_control::{config_from_document, document_with_net, net_blame, net_plans, plan_net, HostPlan, LinkEnd, LinkPlan, NetPlan};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, OnceLock};

fn invalid(e: pearl_control::ConfigError) -> ApiError {
    ChangeError::Invalid(e).into()
}

fn net_name(call: &Call) -> String {
    call.param("name").as_str().unwrap_or_default().to_string()
}

/// The plan of net `name` in the document, if it has one.
fn planned(ctx: &Ctx, name: &str) -> Result<Option<NetPlan>, ApiError> {
    planned_in(&ctx.node.document(), name)
}

fn planned_in(doc: &Value, name: &str) -> Result<Option<NetPlan>, ApiError> {
    doc.get("nets").and_then(|n| n.get(name)).map(|spec| plan_net(name, spec)).transpose().map_err(invalid)
}

pub fn net_list(ctx: &Ctx, _: &Call) -> Result<Response, ApiError> {
    let plans = net_plans(&ctx.node.document()).map_err(invalid)?;
    Ok(Response::json(200, &NetList { nets: plans.iter().map(|p| report(ctx, p)).collect() }))
}

pub fn net_get(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let name = net_name(call);
    let plan = planned(ctx, &name)?.ok_or_else(|| not_found(&name))?;
    Ok(Response::json(200, &report(ctx, &plan)))
}

fn not_found(name: &str) -> ApiError {
    ApiError::not_found("name", format!("no net named {name:?}; GET /v1/nets lists them"))
}

pub fn net_put(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let name = net_name(call);
    let new = land(&ctx.node, &name, Some(call.body()), None)?.expect("a net given");
    Ok(Response::json(200, &report(ctx, &new)))
}

/// A cluster node's part of net `name` (pearld's cluster agent): the net entry `spec` (none:
/// nothing of it here) and its tunnel ports, in place of the ports named `old_ports`. Lands as
/// an apply does; an unchanged part is no change at all (false).
pub fn land_part(node: &Node, name: &str, spec: Option<&Value>, ports: &[Value], old_ports: &BTreeSet<String>) -> Result<bool, ApiError> {
    let doc = node.document();
    let held: Vec<&Value> =
        doc["ports"].as_array().into_iter().flatten().filter(|p| p["name"].as_str().is_some_and(|n| old_ports.contains(n))).collect();
    let same_ports = held.len() == ports.len() && ports.iter().all(|p| held.contains(&p));
    let same_spec = doc.get("nets").and_then(|n| n.get(name)) == spec;
    if same_ports && same_spec {
        return Ok(false);
    }
    if spec.is_none() && doc.get("nets").and_then(|n| n.get(name)).is_none() {
        node.change(Edit::Whole(Box::new(|doc| {
            swap_ports(doc, ports, old_ports);
            Ok(())
        })))?;
        return Ok(true);
    }
    if let Some(new) = spec.map(|s| plan_net(name, s)).transpose().map_err(invalid)? {
        let had = planned_in(&doc, name)?;
        for h in &new.hosts {
            let known = had.as_ref().is_some_and(|o| o.hosts.iter().any(|x| x.netns == h.netns));
            if !known && std::path::Path::new("/run/netns").join(&h.netns).exists() {
                net_hosts::remove_host(h);
            }
        }
    }
    land(node, name, spec, Some((ports, old_ports)))?;
    Ok(true)
}

/// `doc`'s ports named `old` replaced by `ports`.
fn swap_ports(doc: &mut Value, ports: &[Value], old: &BTreeSet<String>) {
    let list = doc.as_object_mut().expect("a document is a mapping").entry("ports").or_insert_with(|| Value::Array(Vec::new()));
    if let Some(list) = list.as_array_mut() {
        list.retain(|p| !p["name"].as_str().is_some_and(|n| old.contains(n)));
        list.extend(ports.iter().cloned());
    }
}

/// Net `name` as `spec` says (none: destroyed), with `tunnels` (ports, and the old ones they
/// replace) in the same change: hosts and veths made before, what the old net had and the new
/// one has not removed after.
fn land(
    node: &Node,
    name: &str,
    spec: Option<&Value>,
    tunnels: Option<(&[Value], &BTreeSet<String>)>,
) -> Result<Option<NetPlan>, ApiError> {
    let Some(spec) = spec else {
        let old = planned_in(&node.document(), name)?.ok_or_else(|| not_found(name))?;
        node.change(Edit::Whole(Box::new(|doc| {
            *doc = document_with_net(doc, name, None).map_err(ChangeError::Invalid)?.0;
            if let Some((ports, old)) = tunnels {
                swap_ports(doc, ports, old);
            }
            Ok(())
        })))?;
        remove_outside(&old, None, &Made::default());
        return Ok(None);
    };
    let new = plan_net(name, spec).map_err(invalid)?;
    let old = planned_in(&node.document(), name)?;
    let edit = |doc: &Value| -> Result<Value, pearl_control::ConfigError> {
        let (mut doc, _) = document_with_net(doc, name, Some(spec))?;
        if let Some((ports, old)) = tunnels {
            swap_ports(&mut doc, ports, old);
        }
        Ok(doc)
    };
    // Validated whole before anything is made.
    let doc = edit(&node.document()).map_err(invalid)?;
    config_from_document(&doc, &node.base_dir()).map_err(|e| invalid(net_blame(e, &doc, &new)))?;
    let made = make_outside(old.as_ref(), &new).map_err(|e| ApiError::new(409, Some("hosts"), e.to_string()))?;
    let changed = node.change(Edit::Whole(Box::new(|doc| {
        *doc = edit(doc).map_err(ChangeError::Invalid)?;
        Ok(())
    })));
    if let Err(e) = changed {
        take_back(&made);
        return Err(match e {
            ChangeError::Invalid(e) => invalid(net_blame(e, &doc, &new)),
            e => e.into(),
        });
    }
    if let Some(old) = &old {
        remove_outside(old, Some(&new), &made);
    }
    set_states(&new, old.as_ref());
    Ok(Some(new))
}

pub fn net_delete(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let name = net_name(call);
    land(&ctx.node, &name, None, None)?;
    Ok(Response::json(200, &Deleted { deleted: name }))
}

/// `PUT /v1/nets/{name}/links/{link}` `{state: up|down}`: the link's `state:` in the net, and
/// its carrier at both ends at once.
pub fn link_set(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let name = net_name(call);
    let link = call.param("link").as_str().unwrap_or_default().to_string();
    let state = call.body()["state"].as_str().unwrap_or_default().to_string();
    let plan = planned(ctx, &name)?.ok_or_else(|| not_found(&name))?;
    let found: Vec<usize> = (0..plan.links.len()).filter(|&i| names_link(&plan.links[i], &link)).collect();
    let i = match found.as_slice() {
        [i] => *i,
        [] => return Err(ApiError::not_found("link", format!("net {name} has no link {link:?} (net show {name} lists them)"))),
        _ => return Err(ApiError::bad_request("link", format!("{link:?} names several links; name it NODE/INTERFACE-NODE/INTERFACE"))),
    };
    ctx.node.change(Edit::Whole(Box::new(|doc| {
        let entry = &mut doc["nets"][&name]["links"][i];
        entry["state"] = Value::String(state.clone());
        Ok(())
    })))?;
    let plan = planned(ctx, &name)?.ok_or_else(|| not_found(&name))?;
    set_carrier(&plan.links[i], state == "up");
    Ok(Response::json(200, &report(ctx, &plan)))
}

/// `red-blue`, or `red/eth1-blue/eth1` where two links join the same nodes.
fn names_link(l: &LinkPlan, name: &str) -> bool {
    l.name == name || format!("{}-{}", end_name(&l.ends[0]), end_name(&l.ends[1])) == name
}

fn end_name(e: &LinkEnd) -> String {
    match e {
        LinkEnd::Vr { vr, interface, .. } => format!("{vr}/{interface}"),
        LinkEnd::Host { netns, interface } => format!("{}/{interface}", netns.split_once('-').map_or(netns.as_str(), |(_, h)| h)),
    }
}

/// What an apply made outside the document, for taking it back.
#[derive(Default)]
struct Made {
    hosts: Vec<HostPlan>,
    veths: Vec<LinkPlan>,
}

fn same_link(a: &LinkPlan, b: &LinkPlan) -> bool {
    a.name == b.name && a.ends == b.ends
}

/// Makes the hosts of `new` that `old` has not as they are (with their veths), and the veths
/// that are new.
fn make_outside(old: Option<&NetPlan>, new: &NetPlan) -> Result<Made, HostsError> {
    let had_link = |l: &LinkPlan| old.is_some_and(|o| o.links.iter().any(|x| same_link(x, l)));
    let touches = |l: &LinkPlan, h: &HostPlan| l.ends.iter().any(|e| matches!(e, LinkEnd::Host { netns, .. } if *netns == h.netns));
    let changed: Vec<&HostPlan> = new
        .hosts
        .iter()
        .filter(|h| {
            let same = old.is_some_and(|o| o.hosts.contains(h));
            !same || new.links.iter().any(|l| touches(l, h) && !had_link(l))
        })
        .collect();
    let mut made = Made::default();
    let result = (|| {
        for h in &changed {
            if old.is_some_and(|o| o.hosts.iter().any(|x| x.netns == h.netns)) {
                net_hosts::remove_host(h);
            }
            net_hosts::make_host(h)?;
            made.hosts.push((*h).clone());
        }
        for l in new.links.iter().filter(|l| l.is_veth()) {
            if !had_link(l) || changed.iter().any(|h| touches(l, h)) {
                if had_link(l) {
                    net_hosts::remove_veth(l);
                }
                net_hosts::make_veth(l)?;
                made.veths.push(l.clone());
            }
        }
        for h in &changed {
            net_hosts::configure_host(h)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(made),
        Err(e) => {
            take_back(&made);
            Err(e)
        }
    }
}

fn take_back(made: &Made) {
    for l in &made.veths {
        net_hosts::remove_veth(l);
    }
    for h in &made.hosts {
        net_hosts::remove_host(h);
    }
}

/// Removes what `old` made and `new` (if any) has not, but nothing `made` just now.
fn remove_outside(old: &NetPlan, new: Option<&NetPlan>, made: &Made) {
    for l in old.links.iter().filter(|l| l.is_veth()) {
        let kept = new.is_some_and(|n| n.links.iter().any(|x| same_link(x, l))) || made.veths.iter().any(|x| same_link(x, l));
        if !kept {
            net_hosts::remove_veth(l);
        }
    }
    for h in &old.hosts {
        let kept = new.is_some_and(|n| n.hosts.iter().any(|x| x.netns == h.netns));
        if !kept {
            net_hosts::remove_host(h);
        }
    }
}

/// Each link's carrier as `new` says, where it differs from `old` (or is down).
fn set_states(new: &NetPlan, old: Option<&NetPlan>) {
    for l in &new.links {
        let was_up = old.and_then(|o| o.links.iter().find(|x| same_link(x, l))).is_none_or(|x| x.up);
        if l.up != was_up || !l.up {
            set_carrier(l, l.up);
        }
    }
}

/// A configuration file's `nets:` as a net applied adds them: each net's VRs and ports put in
/// its document, an error in them said at the net's field.
pub fn expand_file_nets(mut doc: Value, base_dir: &std::path::Path) -> Result<Value, pearl_control::ConfigError> {
    let names: Vec<String> = doc.get("nets").and_then(Value::as_object).map(|n| n.keys().cloned().collect()).unwrap_or_default();
    for name in names {
        let spec = doc["nets"][&name].clone();
        let (next, plan) = document_with_net(&doc, &name, Some(&spec))?;
        let plan = plan.expect("a net given");
        config_from_document(&next, base_dir).map_err(|e| net_blame(e, &next, &plan))?;
        doc = next;
    }
    Ok(doc)
}

/// Why a file's nets' missing hosts were not made at start.
#[derive(Debug, thiserror::Error)]
pub enum MissingHostsError {
    /// ERROR (a net that does not plan, naming its field)
    #[error("{0}")]
    Plan(#[from] pearl_control::ConfigError),
    /// nets.NAME: ERROR (a host or veth of that net)
    #[error("nets.{net}: {error}")]
    Made { net: String, error: HostsError },
}

/// The hosts (and their veths) of `doc`'s nets that do not exist, made before the ports on
/// those veths open: a file's nets at a first start; nothing when pearld starts again.
pub fn make_missing_hosts(doc: &Value) -> Result<(), MissingHostsError> {
    for plan in net_plans(doc)? {
        let absent = |netns: &str| !std::path::Path::new("/run/netns").join(netns).exists();
        let hosts: Vec<HostPlan> = plan.hosts.iter().filter(|h| absent(&h.netns)).cloned().collect();
        let touches_absent = |l: &LinkPlan| l.ends.iter().any(|e| matches!(e, LinkEnd::Host { netns, .. } if absent(netns)));
        let links = plan.links.iter().filter(|l| !l.is_veth() || touches_absent(l)).cloned().collect();
        let missing = NetPlan { hosts, links, ..plan.clone() };
        if missing.hosts.is_empty() {
            continue;
        }
        // Planned against the net without those hosts, they and their veths are new.
        let without = NetPlan { hosts: Vec::new(), links: plan.links.iter().filter(|l| !l.is_veth()).cloned().collect(), ..plan.clone() };
        make_outside(Some(&without), &missing).map_err(|error| MissingHostsError::Made { net: plan.name.clone(), error })?;
    }
    Ok(())
}

/// `doc` without its nets: their VRs, ports and the tunnel ports (`px…`) a cluster's part
/// added. Their hosts' namespaces are left (their VR may run on another node of this machine);
/// `land_part` replaces such a leftover when the host is this node's again.
pub fn without_nets(doc: &Value) -> Result<Value, pearl_control::ConfigError> {
    let mut doc = doc.clone();
    let names: Vec<String> = doc.get("nets").and_then(Value::as_object).map(|n| n.keys().cloned().collect()).unwrap_or_default();
    for name in names {
        doc = document_with_net(&doc, &name, None)?.0;
    }
    if let Some(ports) = doc.get_mut("ports").and_then(Value::as_array_mut) {
        ports.retain(|p| !p["name"].as_str().is_some_and(|n| n.starts_with("px")));
    }
    Ok(doc)
}

/// `node stop`: every net's hosts go with the VRs (their veths with them).
pub fn remove_hosts(doc: &Value) {
    for plan in net_plans(doc).unwrap_or_default() {
        plan.hosts.iter().for_each(net_hosts::remove_host);
    }
}

/// The carriers of every net's links as the document says, once pearld (started again)
/// has opened its wires.
pub fn restore_states(doc: &Value) {
    for plan in net_plans(doc).unwrap_or_default() {
        for l in plan.links.iter().filter(|l| !l.up) {
            set_carrier(l, false);
        }
    }
}

/// Carrier changes by link (its first VR end's port).
fn changes() -> &'static Mutex<HashMap<String, u64>> {
    static CHANGES: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
    CHANGES.get_or_init(Mutex::default)
}

fn set_carrier(l: &LinkPlan, up: bool) {
    if let Err(e) = net_hosts::set_carrier(l, up) {
        tracing::warn!("link {}: {e}", l.name);
    }
    if let Some(LinkEnd::Vr { port, .. }) = l.ends.iter().find(|e| matches!(e, LinkEnd::Vr { .. })) {
        if let Some(state) = crate::wires::state(port) {
            state.set_up(up);
        }
        let mut c = changes().lock().unwrap_or_else(|e| e.into_inner());
        *c.entry(port.clone()).or_default() += 1;
    }
}

fn report(ctx: &Ctx, plan: &NetPlan) -> NetReport {
    let counted = changes().lock().unwrap_or_else(|e| e.into_inner()).clone();
    let d = &ctx.node.dataplane;
    d.refresh_offloaded();
    let layout = d.layout();
    let time_seconds = crate::stats::monotonic_seconds();
    let links = plan
        .links
        .iter()
        .map(|l| {
            let ports: Vec<String> =
                l.ends.iter().filter_map(|e| if let LinkEnd::Vr { port, .. } = e { Some(port.clone()) } else { None }).collect();
            let first = ports.first().cloned().unwrap_or_default();
            NetLink {
                name: l.name.clone(),
                a: end_name(&l.ends[0]),
                b: end_name(&l.ends[1]),
                kind: if l.is_veth() { "veth" } else { "wire" }.into(),
                state: if l.up { "up" } else { "down" }.into(),
                carrier_changes: counted.get(&first).copied().unwrap_or(0),
                dropped: crate::wires::state(&first).map_or(0, |s| s.dropped()),
                traffic: traffic(d, &layout.config, l),
                ports,
            }
        })
        .collect();
    NetReport {
        name: plan.name.clone(),
        time_seconds,
        vrs: plan.vrs.iter().filter_map(|v| v["name"].as_str().map(String::from)).collect(),
        hosts: plan.hosts.iter().map(|h| NetHost { name: h.name.clone(), namespace: h.netns.clone() }).collect(),
        links,
    }
}

/// What crossed link `l` each way, counted at the port of its first VR end: a frame that port
/// sent went away from that end.
fn traffic(d: &pearl_dataplane::Dataplane, config: &pearl_control::Config, l: &LinkPlan) -> LinkTraffic {
    let Some((at, port)) = l.ends.iter().enumerate().find_map(|(i, e)| match e {
        LinkEnd::Vr { port, .. } => config.ports.iter().position(|p| p.name == *port).map(|p| (i, p)),
        LinkEnd::Host { .. } => None,
    }) else {
        return LinkTraffic::default();
    };
    let sent = Direction { packets: d.sum(|c| c.ports[port].tx_packets.get()), bytes: d.sum(|c| c.ports[port].tx_bytes.get()) };
    let received = Direction { packets: d.sum(|c| c.ports[port].rx_packets.get()), bytes: d.sum(|c| c.ports[port].rx_bytes.get()) };
    if at == 0 {
        LinkTraffic { a_to_b: sent, b_to_a: received }
    } else {
        LinkTraffic { a_to_b: received, b_to_a: sent }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_lapsed_cluster_node_starts_without_its_nets_and_their_tunnels() {
        let vr = |name: &str, port: Option<&str>| {
            let mut i = json!({"name": "eth0", "mac": "02:00:00:00:00:01", "addresses": ["10.0.0.1/24"]});
            if let Some(p) = port {
                i["port"] = json!(p);
            }
            json!({"name": name, "interfaces": [i]})
        };
        let net = json!({"vrs": [vr("red", Some("px00000001"))]});
        let tunnel = json!({"name": "px00000001", "interface": "u0", "driver": "af_packet"});
        let kept = json!({"name": "p0", "interface": "lo", "driver": "af_packet"});
        let base = json!({"ports": [kept.clone(), tunnel], "vrs": [vr("blue", Some("p0"))]});
        let (doc, _) = document_with_net(&base, "lab", Some(&net)).unwrap();
        assert_eq!(doc["vrs"].as_array().unwrap().len(), 2);
        let left = without_nets(&doc).unwrap();
        assert_eq!(left, json!({"ports": [kept], "vrs": [vr("blue", Some("p0"))]}), "the VR of no net and its port stay");
    }
}
