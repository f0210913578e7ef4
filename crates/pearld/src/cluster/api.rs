//! The API of a node in a cluster: `GET /v1/cluster/nodes` (every node, up or down), and
//! `/v1/nets` answered from etcd rather than from this node's document: a net applied on any
//! node is stored for every node's agent to place, and shown cluster-wide (where each VR runs,
//! each link's kind, VNI and state).

use super::agent::{read, View};
use super::part::{self, check_nodes, without_nodes};
use super::place;
use super::store::StoreError;
use super::{keys, vni, Cluster};
use crate::api_error::ApiError;
use crate::ctx::Ctx;
use crate::http::Response;
use crate::router::Call;
use pearl_control::{config_from_document, document_with_net, net_blame, plan_net};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

fn unreachable(e: StoreError) -> ApiError {
    ApiError::new(503, None, format!("the cluster's store: {e}"))
}

fn view(c: &Cluster) -> Result<View, ApiError> {
    read(c.store.as_ref()).map_err(unreachable)
}

/// `GET /v1/cluster/nodes`.
pub fn nodes(c: &Cluster) -> Result<Response, ApiError> {
    let v = view(c)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut names: Vec<&String> = v.underlays.keys().chain(v.live.keys()).collect();
    names.sort();
    names.dedup();
    let (placed, _) = place::resolve(&v.nets, &v.assigns, &v.live);
    let nodes: Vec<Value> = names
        .into_iter()
        .map(|n| {
            let vrs: Vec<String> = placed.iter().filter(|(_, at)| *at == n).map(|((net, vr), _)| format!("{net}/{vr}")).collect();
            let running: Vec<&String> = v.owners.iter().filter(|(_, o)| *o == n).map(|((net, _), _)| net).collect();
            match v.live.get(n) {
                Some(r) => json!({"name": n, "state": "up", "since": r.since, "lease_age_s": now.saturating_sub(r.since), "lease_ttl_s": r.lease_ttl,
                                  "vrs": vrs, "running": running.len(), "underlay": r.underlay, "api": r.api,
                                  "capacity": r.capacity["capacity"], "granted": r.capacity["granted"], "free": r.capacity["free"]}),
                None => json!({"name": n, "state": "down", "vrs": vrs, "running": running.len(), "underlay": v.underlays.get(n), "api": null}),
            }
        })
        .collect();
    Ok(Response::json(200, &json!({"nodes": nodes, "scheduler": v.scheduler})))
}

/// `PUT /v1/nets/{name}` on a cluster: validated whole, as one node would make it, then stored.
pub fn net_put(c: &Cluster, ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let name = call.param("name").as_str().unwrap_or_default().to_string();
    let spec = call.body().clone();
    let invalid = |e: pearl_control::ConfigError| ApiError::new(422, Some(&e.path), e.to_string());
    check_nodes(&name, &spec).map_err(invalid)?;
    let whole = without_nodes(&spec);
    let plan = plan_net(&name, &whole).map_err(invalid)?;
    let (doc, _) = document_with_net(&json!({}), &name, Some(&whole)).map_err(invalid)?;
    config_from_document(&doc, &ctx.node.base_dir()).map_err(|e| invalid(net_blame(e, &doc, &plan)))?;
    let mut stored = spec;
    if let Some(o) = stored.as_object_mut() {
        o.remove("name");
    }
    c.store.put(&keys::net(&name), &stored.to_string(), None).map_err(unreachable)?;
    net_report(c, &name)
}

/// `DELETE /v1/nets/{name}`: the net, its VNIs and its placements go; each node removes its part.
pub fn net_delete(c: &Cluster, call: &Call) -> Result<Response, ApiError> {
    let name = call.param("name").as_str().unwrap_or_default().to_string();
    let v = view(c)?;
    if !v.nets.contains_key(&name) {
        return Err(ApiError::not_found("name", format!("no net named {name:?}; GET /v1/nets lists them")));
    }
    let s = c.store.as_ref();
    s.delete(&keys::net(&name), false).map_err(unreachable)?;
    vni::release(s, &name).map_err(unreachable)?;
    for (n, net, vr) in &v.assigns {
        if *net == name {
            s.delete(&keys::assign(n, net, vr), false).map_err(unreachable)?;
        }
    }
    Ok(Response::json(200, &json!({"deleted": name})))
}

/// `GET /v1/nets` on a cluster.
pub fn net_list(c: &Cluster) -> Result<Response, ApiError> {
    let v = view(c)?;
    let nets: Vec<Value> = v.nets.keys().map(|n| report(&v, n)).collect();
    Ok(Response::json(200, &json!({"nets": nets})))
}

/// `GET /v1/nets/{name}` on a cluster.
pub fn net_get(c: &Cluster, call: &Call) -> Result<Response, ApiError> {
    net_report(c, call.param("name").as_str().unwrap_or_default())
}

fn net_report(c: &Cluster, name: &str) -> Result<Response, ApiError> {
    let v = view(c)?;
    if !v.nets.contains_key(name) {
        return Err(ApiError::not_found("name", format!("no net named {name:?}; GET /v1/nets lists them")));
    }
    Ok(Response::json(200, &report(&v, name)))
}

/// A net as the cluster runs it: each VR's node and state, each link's kind, VNI and state.
fn report(v: &View, name: &str) -> Value {
    let spec = &v.nets[name];
    let (placed, _) = place::resolve(&v.nets, &v.assigns, &v.live);
    let mut vr_node: HashMap<String, String> =
        placed.iter().filter(|((n, _), _)| n == name).map(|((_, vr), at)| (vr.clone(), at.clone())).collect();
    for ((net, vr), owner) in &v.owners {
        if net == name {
            vr_node.insert(vr.clone(), owner.clone());
        }
    }
    let vrs: Vec<Value> = part::wanted(spec)
        .into_iter()
        .map(|(vr, want)| {
            let at = vr_node.get(&vr);
            let owned = v.owners.get(&(name.to_string(), vr.clone()));
            let state = match (at, owned) {
                (Some(n), Some(o)) if n == o && v.live.contains_key(o) => "running",
                (Some(n), _) if !v.live.contains_key(n) => "node-down",
                (None, _) => "unplaced",
                _ => "starting",
            };
            json!({"name": vr, "node": at, "wanted": match want { part::Wanted::Node(n) => n, part::Wanted::Auto => "auto".into() }, "state": state})
        })
        .collect();
    let cross: Vec<(String, String, String)> = part::cross_links(spec, &vr_node);
    let links: Vec<Value> = spec["links"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            let key = part::link_key(l);
            let down_by_hand = l["state"] == "down";
            let (kind, nodes) = match cross.iter().find(|(k, _, _)| *k == key) {
                Some((_, a, b)) => ("vxlan", vec![a.clone(), b.clone()]),
                None => (
                    if l["a"].as_str().zip(l["b"].as_str()).is_some_and(|(a, b)| is_vr(spec, a) && is_vr(spec, b)) {
                        "wire"
                    } else {
                        "veth"
                    },
                    vec![],
                ),
            };
            let up = !down_by_hand && nodes.iter().all(|n| v.live.contains_key(n));
            json!({"name": key.replace('|', "-"), "a": l["a"], "b": l["b"], "kind": kind, "nodes": nodes,
                   "vni": v.vnis.get(&(name.to_string(), key.clone())), "state": if up { "up" } else { "down" }})
        })
        .collect();
    json!({"name": name, "vrs": vrs, "links": links, "hosts": spec["hosts"].as_array().into_iter().flatten().map(|h| json!({"name": h["name"]})).collect::<Vec<_>>()})
}

fn is_vr(spec: &Value, end: &str) -> bool {
    let vr = end.split_once('/').map_or(end, |(v, _)| v);
    spec["vrs"].as_array().into_iter().flatten().any(|x| x["name"] == vr)
}
