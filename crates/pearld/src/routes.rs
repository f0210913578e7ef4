//! The API's endpoints: one table entry each, from which the router dispatches and the OpenAPI
//! document is generated.
//!
//! To add one: write a handler `fn(&Ctx, &Call) -> Result<Response, ApiError>`, its schemas in
//! `schemas.rs`, and an entry below. An endpoint that takes a body declares `body: Some(schema)`:
//! the router refuses a body that is not JSON or breaks the schema (400 naming the field) before
//! the handler runs, and the handler reads it with `call.body()`. Path parameters arrive as
//! `call.param("name")`, checked against their schema (give it an `example`: the OpenAPI test
//! uses it). Refuse what only the handler can judge with `ApiError` (404, 409, 422 …), naming
//! the field.

use crate::api_error::ApiError;
use crate::http::Response;
use crate::metrics;
use crate::node::Node;
use crate::openapi;
use crate::rates::Sampler;
use crate::router::{Call, Content, Endpoint, Param, Reply};
use crate::schemas;
use crate::stats;
use crate::vrs;
use serde_json::json;
use std::sync::Arc;

/// What handlers work on.
pub struct Ctx {
    pub node: Arc<Node>,
    pub rates: Arc<Sampler>,
}

const DASHBOARD: &str = include_str!("dashboard.html");
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

const VR_NAME: Param = Param { name: "name", description: "The VR's name", schema: schemas::vr_name };

pub static ENDPOINTS: &[Endpoint<Ctx>] = &[
    Endpoint {
        method: "GET",
        path: "/",
        summary: "The live dashboard: VRs, their ports, and per-VR and per-queue throughput",
        params: &[],
        body: None,
        responses: &[Reply {
            status: 200,
            description: "An HTML page that polls /v1/stats",
            content: Content::Text("text/html"),
        }],
        handler: dashboard,
    },
    Endpoint {
        method: "GET",
        path: "/healthz",
        summary: "Whether pearld is serving",
        params: &[],
        body: None,
        responses: &[Reply { status: 200, description: "pearld is up", content: Content::Json(schemas::health) }],
        handler: health,
    },
    Endpoint {
        method: "GET",
        path: "/openapi.json",
        summary: "This document",
        params: &[],
        body: None,
        responses: &[Reply {
            status: 200,
            description: "The OpenAPI 3.0 document",
            content: Content::Json(openapi_schema),
        }],
        handler: openapi_document,
    },
    Endpoint {
        method: "GET",
        path: "/metrics",
        summary: "Counters, rates and worker utilisation in the Prometheus text format",
        params: &[],
        body: None,
        responses: &[Reply {
            status: 200,
            description: "Prometheus exposition format 0.0.4",
            content: Content::Text("text/plain"),
        }],
        handler: prometheus,
    },
    Endpoint {
        method: "GET",
        path: "/v1/stats",
        summary: "Live counters per port, VR (exceptions, slow path, queues) and worker",
        params: &[],
        body: None,
        responses: &[Reply {
            status: 200,
            description: "A snapshot of every counter",
            content: Content::Json(schemas::stats),
        }],
        handler: stats_snapshot,
    },
    Endpoint {
        method: "GET",
        path: "/v1/vrs",
        summary: "Every VR: kind, code option, interfaces and ports, routes, queues, limits",
        params: &[],
        body: None,
        responses: &[Reply { status: 200, description: "The VRs", content: Content::Json(schemas::vr_list) }],
        handler: vr_list,
    },
    Endpoint {
        method: "GET",
        path: "/v1/vrs/{name}",
        summary: "One VR",
        params: &[VR_NAME],
        body: None,
        responses: &[
            Reply { status: 200, description: "The VR", content: Content::Json(schemas::vr) },
            Reply { status: 404, description: "No VR has this name", content: Content::Json(schemas::error) },
        ],
        handler: vr_show,
    },
];

fn openapi_schema() -> serde_json::Value {
    json!({"type": "object", "required": ["openapi", "info", "paths"]})
}

fn dashboard(_: &Ctx, _: &Call) -> Result<Response, ApiError> {
    Ok(Response::text("text/html; charset=utf-8", DASHBOARD))
}

fn health(_: &Ctx, _: &Call) -> Result<Response, ApiError> {
    Ok(Response::json(200, &json!({"status": "ok"})))
}

fn openapi_document(_: &Ctx, _: &Call) -> Result<Response, ApiError> {
    Ok(Response::json(200, &openapi::document(ENDPOINTS)))
}

fn prometheus(ctx: &Ctx, _: &Call) -> Result<Response, ApiError> {
    let mut text = metrics::render(&metrics::families(&stats::snapshot(&ctx.node)));
    text += &metrics::render(&ctx.rates.latest());
    Ok(Response::text(PROMETHEUS_TEXT, text))
}

fn stats_snapshot(ctx: &Ctx, _: &Call) -> Result<Response, ApiError> {
    Ok(Response::json(200, &stats::snapshot(&ctx.node)))
}

fn vr_list(ctx: &Ctx, _: &Call) -> Result<Response, ApiError> {
    Ok(Response::json(200, &json!({"vrs": vrs::list(&ctx.node)})))
}

fn vr_show(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let name = call.param("name").as_str().unwrap_or_default();
    match vrs::find(&ctx.node, name) {
        Some(vr) => Ok(Response::json(200, &vr)),
        None => Err(ApiError::not_found("name", format!("no VR named {name:?}; GET /v1/vrs lists them"))),
    }
}
