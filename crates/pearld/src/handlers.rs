//! The handlers of the endpoints of `routes.rs` that are a line or two over the modules doing
//! the work: node and VR reports, the list edits of routes and filters, trace and capture.

use crate::api_error::ApiError;
use crate::capture;
use crate::changes;
use crate::cluster;
use crate::ctx::Ctx;
use crate::http::Response;
use crate::metrics;
use crate::models::health::{Health, Status};
use crate::models::node::NodeReport;
use crate::nets;
use crate::router::Call;
use crate::stats;
use crate::trace;
use crate::vr_health;
use crate::vr_query::VrQuery;
use crate::vrs;
use pearl_dataplane::capture::CapturePoint;

const DASHBOARD: &str = include_str!("dashboard.html");
pub const PCAP: &str = "application/vnd.tcpdump.pcap";
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

pub fn dashboard(_: &Ctx, _: &Call) -> Result<Response, ApiError> {
    Ok(Response::text("text/html; charset=utf-8", DASHBOARD))
}

pub fn health(_: &Ctx, _: &Call) -> Result<Response, ApiError> {
    Ok(Response::json(200, &Health { status: Status::Ok }))
}

pub fn prometheus(ctx: &Ctx, _: &Call) -> Result<Response, ApiError> {
    let mut text = metrics::render(&metrics::families(&stats::snapshot(&ctx.node)));
    text += &metrics::render(&metrics::node_families(&node_report(ctx)));
    text += &metrics::render(&ctx.rates.latest());
    Ok(Response::text(PROMETHEUS_TEXT, text))
}

fn node_report(ctx: &Ctx) -> NodeReport {
    let config = ctx.node.config();
    crate::capacity::report(&config, &ctx.node.capacity(&config), &ctx.node.dataplane.layout().slices)
}

pub fn node(ctx: &Ctx, _: &Call) -> Result<Response, ApiError> {
    Ok(Response::json(200, &node_report(ctx)))
}

pub fn node_stop(ctx: &Ctx, _: &Call) -> Result<Response, ApiError> {
    let vrs = ctx.node.config().vrs.len();
    crate::shutdown::tear_down();
    Ok(Response::json(202, &crate::models::stopping::Stopping { vrs }))
}

pub fn stats_snapshot(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    Ok(Response::text("application/json", stats::visible_text(&ctx.node, call.caller(), &VrQuery::of(call), &ctx.activity)))
}

pub fn vr_list(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let mut list = vrs::list(&ctx.node, call.caller(), &VrQuery::of(call), &ctx.activity);
    list.vrs.iter_mut().for_each(|vr| vr_health::attach(ctx, vr));
    Ok(Response::json(200, &list))
}

pub fn vr_show(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let name = call.param("name").as_str().unwrap_or_default();
    match vrs::find(&ctx.node, name) {
        Some(mut vr) => {
            vr_health::attach(ctx, &mut vr);
            Ok(Response::json(200, &vr))
        }
        None => Err(ApiError::not_found("name", format!("no VR named {name:?}; GET /v1/vrs lists them"))),
    }
}

pub fn routes_get(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    changes::list_get(ctx, call, "routes")
}

pub fn routes_add(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    changes::list_add(ctx, call, "routes")
}

pub fn routes_remove(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let address = call.param("address").as_str().unwrap_or_default();
    let length = call.param("length").as_u64().unwrap_or_default();
    let ip: Option<std::net::IpAddr> = address.parse().ok();
    // Addresses are compared as addresses: 2001:DB8:: is the route written 2001:db8::.
    let same = |r: &serde_json::Value| {
        let Some((a, l)) = r["prefix"].as_str().and_then(|p| p.split_once('/')) else { return false };
        l.parse() == Ok(length) && (a == address || (ip.is_some() && a.parse().ok() == ip))
    };
    changes::list_remove(ctx, call, "routes", &format!("route {address}/{length}"), |_, r| same(r))
}

pub fn filters_get(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    changes::list_get(ctx, call, "match")
}

pub fn filters_add(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    changes::list_add(ctx, call, "match")
}

pub fn filters_remove(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let index = call.param("index").as_u64().unwrap_or(u64::MAX) as usize;
    changes::list_remove(ctx, call, "match", &format!("rule {index}"), |i, _| i == index)
}

pub fn queues_put(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    changes::vr_set(ctx, call, "queues")
}

pub fn limits_put(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    changes::vr_set(ctx, call, "limits")
}

pub fn trace(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let body = call.body();
    let name = changes::name_of(call);
    let req = trace::Request {
        vr: &name,
        count: body["count"].as_u64().unwrap_or(10),
        filter: body.get("match"),
        port: body["port"].as_str(),
        seconds: body["seconds"].as_u64().unwrap_or(5),
    };
    Ok(Response::json(200, &trace::trace(&ctx.node, &req)?))
}

pub fn capture(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let body = call.body();
    let point = match body["point"].as_str().unwrap_or("rx") {
        "tx" => CapturePoint::Tx,
        "slow" => CapturePoint::Slow,
        _ => CapturePoint::Rx,
    };
    let name = changes::name_of(call);
    let req = capture::Request {
        vr: &name,
        point,
        interface: body["interface"].as_str(),
        count: body["count"].as_u64().unwrap_or(1000),
        seconds: body["seconds"].as_u64().unwrap_or(5),
    };
    match capture::capture(&ctx.node, &req) {
        Ok(pcap) => Ok(Response::text(PCAP, pcap)),
        Err(r) => Err(ApiError::new(r.status, Some(r.field), r.message)),
    }
}

/// `/v1/nets` answered by the cluster on a node in one, by the node's own document otherwise.
pub fn net_list(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    match cluster::active() {
        Some(c) => cluster::api::net_list(c),
        None => nets::net_list(ctx, call),
    }
}

pub fn net_get(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    match cluster::active() {
        Some(c) => cluster::api::net_get(c, call),
        None => nets::net_get(ctx, call),
    }
}

pub fn net_put(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    match cluster::active() {
        Some(c) => cluster::api::net_put(c, ctx, call),
        None => nets::net_put(ctx, call),
    }
}

pub fn net_delete(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    match cluster::active() {
        Some(c) => cluster::api::net_delete(c, call),
        None => nets::net_delete(ctx, call),
    }
}

pub fn cluster_nodes(_: &Ctx, _: &Call) -> Result<Response, ApiError> {
    match cluster::active() {
        Some(c) => cluster::api::nodes(c),
        None => Err(ApiError::new(409, None, "this node is in no cluster (pearld --cluster URL --node NAME)")),
    }
}
