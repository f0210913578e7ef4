//! The API's endpoints: one table entry each, from which the router dispatches and the OpenAPI
//! document is generated.
//!
//! To add one: write a handler `fn(&Ctx, &Call) -> Result<Response, ApiError>`, the type of its
//! answer in `models/` (`#[derive(Serialize, JsonSchema)]`, which the handler fills and sends with
//! `Response::json`) and a function in `schemas.rs` generating its schema from that type (the
//! schemas of what it takes are written there, or generated from pearl-control's grammar types
//! for configuration bodies), and an entry below. An endpoint that takes a body declares
//! `body: Some(schema)`:
//! the router refuses a body that is not JSON or breaks the schema (400 naming the field) before
//! the handler runs, and the handler reads it with `call.body()`. Path parameters arrive as
//! `call.param("name")`, checked against their schema (give it an `example`: the OpenAPI test
//! uses it). Refuse what only the handler can judge with `ApiError` (404, 409, 422 …), naming
//! the field. Who may call it is its `access` (`access.rs`), which every entry must
//! give: `Owner` lets the token of the VR `{name}` names call it too (`auth.rs` keeps the
//! owner's body to what it may set), `Admin` keeps it the operator's.

use crate::auth;

use crate::access::Access;
use crate::api_error::ApiError;
use crate::changes;
use crate::handlers;
use crate::http::Response;
use crate::nets;
use crate::openapi;
use crate::plugin_tables;
use crate::router::{Call, Content, Endpoint, Param, Place, Reply};
use crate::schemas;
use crate::vr_query;
use serde_json::json;

use crate::ctx::Ctx;

const VR_NAME: Param = Param { name: "name", description: "The VR's name", schema: schemas::vr_name, place: Place::Path };
const ADDRESS: Param = Param { name: "address", description: "The route's network address", schema: schemas::address, place: Place::Path };
const LENGTH: Param =
    Param { name: "length", description: "The route's prefix length", schema: schemas::prefix_length, place: Place::Path };
const INTERFACE: Param =
    Param { name: "interface", description: "The VR interface's name", schema: schemas::interface_name, place: Place::Path };
const TABLE: Param =
    Param { name: "table", description: "The table's name (plugin.tables)", schema: schemas::table_name, place: Place::Path };
const KEY: Param = Param { name: "key", description: "The entry's key, in hexadecimal", schema: schemas::table_key, place: Place::Path };
const FIB_PARAMS: &[Param] = &[
    VR_NAME,
    Param {
        name: "family",
        description: "v4 or v6 (by default the family of prefix or after, else v4)",
        schema: schemas::family,
        place: Place::Query,
    },
    Param { name: "prefix", description: "Only this prefix and the routes inside it", schema: schemas::prefix, place: Place::Query },
    Param {
        name: "after",
        description: "Start after this prefix (the previous page's `next`)",
        schema: schemas::prefix,
        place: Place::Query,
    },
    Param { name: "limit", description: "At most this many routes (1000 unless given)", schema: schemas::fib_limit, place: Place::Query },
];
const FIB_LOOKUP_PARAMS: &[Param] =
    &[VR_NAME, Param { name: "address", description: "The address to look up", schema: schemas::address, place: Place::Query }];
const NET_NAME: Param = Param { name: "name", description: "The net's name", schema: schemas::net_name, place: Place::Path };
const LINK: Param = Param { name: "link", description: "The link, A-B", schema: schemas::link_name, place: Place::Path };
const INDEX: Param =
    Param { name: "index", description: "The rule's position in the VR's list", schema: schemas::index, place: Place::Path };

pub static ENDPOINTS: &[Endpoint<Ctx>] = &[
    Endpoint {
        method: "GET",
        path: "/",
        access: Access::Scoped,
        summary: "The live dashboard: VRs, their ports, and per-VR and per-queue throughput",
        params: &[],
        body: None,
        responses: &[Reply { status: 200, description: "An HTML page that polls /v1/stats", content: Content::Text("text/html") }],
        handler: handlers::dashboard,
    },
    Endpoint {
        method: "GET",
        path: "/healthz",
        access: Access::Public,
        summary: "Whether pearld is serving",
        params: &[],
        body: None,
        responses: &[Reply { status: 200, description: "pearld is up", content: Content::Json(schemas::health) }],
        handler: handlers::health,
    },
    Endpoint {
        method: "GET",
        path: "/openapi.json",
        access: Access::Public,
        summary: "This document",
        params: &[],
        body: None,
        responses: &[Reply { status: 200, description: "The OpenAPI 3.0 document", content: Content::Json(openapi_schema) }],
        handler: openapi_document,
    },
    Endpoint {
        method: "GET",
        path: "/metrics",
        access: Access::Admin,
        summary: "Counters, rates and worker utilisation in the Prometheus text format",
        params: &[],
        body: None,
        responses: &[Reply { status: 200, description: "Prometheus exposition format 0.0.4", content: Content::Text("text/plain") }],
        handler: handlers::prometheus,
    },
    Endpoint {
        method: "GET",
        path: "/v1/stats",
        access: Access::Scoped,
        summary: "Live counters per port, VR (exceptions, slow path, queues) and worker; the VRs searched and paged by the query",
        params: vr_query::PARAMS,
        body: None,
        responses: &[Reply { status: 200, description: "A snapshot of every counter", content: Content::Json(schemas::stats) }],
        handler: handlers::stats_snapshot,
    },
    Endpoint {
        method: "GET",
        path: "/v1/errors",
        access: Access::Admin,
        summary: "Every drop and exception counter by pipeline stage and reason, with its rate; named as /metrics names them",
        params: &[Param { name: "vr", description: "Only this VR's counters", schema: schemas::vr_name, place: Place::Query }],
        body: None,
        responses: &[
            Reply { status: 200, description: "The counters", content: Content::Json(schemas::errors) },
            Reply { status: 404, description: "No VR has this name", content: Content::Json(schemas::error) },
        ],
        handler: crate::errors::list,
    },
    Endpoint {
        method: "GET",
        path: "/v1/vrs",
        access: Access::Scoped,
        summary:
            "The VRs (every one, or those the query searches and pages): kind, code option, interfaces and ports, routes, queues, limits",
        params: vr_query::PARAMS,
        body: None,
        responses: &[Reply { status: 200, description: "The VRs", content: Content::Json(schemas::vr_list) }],
        handler: handlers::vr_list,
    },
    Endpoint {
        method: "GET",
        path: "/v1/vrs/{name}",
        access: Access::Owner,
        summary: "One VR",
        params: &[VR_NAME],
        body: None,
        responses: &[
            Reply { status: 200, description: "The VR", content: Content::Json(schemas::vr) },
            Reply { status: 404, description: "No VR has this name", content: Content::Json(schemas::error) },
        ],
        handler: handlers::vr_show,
    },
    Endpoint {
        method: "GET",
        path: "/v1/config",
        access: Access::Admin,
        summary: "The desired state: the configuration file's content plus every runtime change",
        params: &[],
        body: None,
        responses: &[Reply { status: 200, description: "The configuration document", content: Content::Json(schemas::document) }],
        handler: changes::config_get,
    },
    Endpoint {
        method: "GET",
        path: "/v1/node",
        access: Access::Admin,
        summary: "The node's resources: capacity, granted and free by resource, fast-path slots, each VR's requests (admin)",
        params: &[],
        body: None,
        responses: &[Reply { status: 200, description: "The node's resources", content: Content::Json(schemas::node) }],
        handler: handlers::node,
    },
    Endpoint {
        method: "GET",
        path: "/v1/cluster/nodes",
        access: Access::Admin,
        summary: "Every node of the cluster, up or down: lease age, VRs placed on it, capacity and what is free (admin)",
        params: &[],
        body: None,
        responses: &[
            Reply { status: 200, description: "The cluster's nodes", content: Content::Json(schemas::cluster_nodes) },
            Reply { status: 409, description: "This node is in no cluster", content: Content::Json(schemas::error) },
        ],
        handler: handlers::cluster_nodes,
    },
    Endpoint {
        method: "POST",
        path: "/v1/node/stop",
        access: Access::Admin,
        summary: "Removes every VR and everything PEARL made (the TAP holder included), then pearld exits 0; \
                  a stop signal instead leaves the VRs running for the next pearld (admin)",
        params: &[],
        body: None,
        responses: &[Reply { status: 202, description: "Stopping", content: Content::Json(schemas::stopping) }],
        handler: handlers::node_stop,
    },
    Endpoint {
        method: "PUT",
        path: "/v1/config",
        access: Access::Admin,
        summary: "Replaces the whole configuration (validated whole, applied atomically, stored)",
        params: &[],
        body: Some(schemas::document),
        responses: &[
            Reply { status: 200, description: "Applied; the new document", content: Content::Json(schemas::document) },
            Reply { status: 409, description: "Valid, but not possible at run time (e.g. ports)", content: Content::Json(schemas::error) },
            Reply { status: 422, description: "Invalid; `field` names the offending one", content: Content::Json(schemas::error) },
        ],
        handler: changes::config_put,
    },
    Endpoint {
        method: "GET",
        path: "/v1/nets",
        access: Access::Admin,
        summary: "The virtual networks: their VRs, hosts and links",
        params: &[],
        body: None,
        responses: &[Reply { status: 200, description: "The nets", content: Content::Json(schemas::net_list) }],
        handler: handlers::net_list,
    },
    Endpoint {
        method: "GET",
        path: "/v1/nets/{name}",
        access: Access::Admin,
        summary: "One virtual network: VRs, hosts, links with state and counters",
        params: &[NET_NAME],
        body: None,
        responses: &[
            Reply { status: 200, description: "The net", content: Content::Json(schemas::net_report) },
            Reply { status: 404, description: "No net has this name", content: Content::Json(schemas::error) },
        ],
        handler: handlers::net_get,
    },
    Endpoint {
        method: "PUT",
        path: "/v1/nets/{name}",
        access: Access::Admin,
        summary: "Makes or changes a virtual network (validated whole, applied as a diff)",
        params: &[NET_NAME],
        body: Some(schemas::net_spec),
        responses: &[
            Reply { status: 200, description: "Applied", content: Content::Json(schemas::net_report) },
            Reply { status: 422, description: "Invalid; `field` names the offending one", content: Content::Json(schemas::error) },
        ],
        handler: handlers::net_put,
    },
    Endpoint {
        method: "DELETE",
        path: "/v1/nets/{name}",
        access: Access::Admin,
        summary: "Destroys a virtual network: exactly what it made",
        params: &[NET_NAME],
        body: None,
        responses: &[
            Reply { status: 200, description: "Destroyed", content: Content::Json(schemas::deleted) },
            Reply { status: 404, description: "No net has this name", content: Content::Json(schemas::error) },
        ],
        handler: handlers::net_delete,
    },
    Endpoint {
        method: "PUT",
        path: "/v1/nets/{name}/links/{link}",
        access: Access::Admin,
        summary: "Sets a link's carrier up or down at both ends",
        params: &[NET_NAME, LINK],
        body: Some(schemas::link_state),
        responses: &[
            Reply { status: 200, description: "Set; the net", content: Content::Json(schemas::net_report) },
            Reply { status: 404, description: "No such net or link", content: Content::Json(schemas::error) },
        ],
        handler: nets::link_set,
    },
    Endpoint {
        method: "POST",
        path: "/v1/vrs",
        access: Access::Admin,
        summary: "Creates a VR (its namespace, TAPs, cgroup, daemons and fast-path state)",
        params: &[],
        body: Some(schemas::vr_spec),
        responses: &[
            Reply { status: 201, description: "Created", content: Content::Json(schemas::vr) },
            Reply { status: 422, description: "Invalid; `field` names the offending one", content: Content::Json(schemas::error) },
        ],
        handler: changes::vr_create,
    },
    Endpoint {
        method: "PATCH",
        path: "/v1/vrs/{name}",
        access: Access::Owner,
        summary: "Changes a running VR's routes, neighbors, match rules, queues, limits or control plane",
        params: &[VR_NAME],
        body: Some(schemas::vr_patch),
        responses: &[
            Reply { status: 200, description: "Changed", content: Content::Json(schemas::vr) },
            Reply { status: 404, description: "No VR has this name", content: Content::Json(schemas::error) },
            Reply { status: 422, description: "Invalid; `field` names the offending one", content: Content::Json(schemas::error) },
        ],
        handler: changes::vr_patch,
    },
    Endpoint {
        method: "DELETE",
        path: "/v1/vrs/{name}",
        access: Access::Admin,
        summary: "Deletes a VR and everything it had (namespace, TAPs, cgroup, processes, tables)",
        params: &[VR_NAME],
        body: None,
        responses: &[
            Reply { status: 200, description: "Deleted", content: Content::Json(schemas::deleted) },
            Reply { status: 404, description: "No VR has this name", content: Content::Json(schemas::error) },
        ],
        handler: changes::vr_delete,
    },
    Endpoint {
        method: "GET",
        path: "/v1/vrs/{name}/routes",
        access: Access::Owner,
        summary: "A VR's static routes",
        params: &[VR_NAME],
        body: None,
        responses: &[Reply { status: 200, description: "The routes", content: Content::Json(schemas::routes) }],
        handler: handlers::routes_get,
    },
    Endpoint {
        method: "POST",
        path: "/v1/vrs/{name}/routes",
        access: Access::Owner,
        summary: "Adds a static route to a VR",
        params: &[VR_NAME],
        body: Some(schemas::route_spec),
        responses: &[
            Reply { status: 201, description: "Added; the VR's routes", content: Content::Json(schemas::routes) },
            Reply { status: 422, description: "Invalid; `field` names the offending one", content: Content::Json(schemas::error) },
        ],
        handler: handlers::routes_add,
    },
    Endpoint {
        method: "DELETE",
        path: "/v1/vrs/{name}/routes/{address}/{length}",
        access: Access::Owner,
        summary: "Removes a VR's static route to address/length",
        params: &[VR_NAME, ADDRESS, LENGTH],
        body: None,
        responses: &[
            Reply { status: 200, description: "Removed", content: Content::Json(schemas::deleted) },
            Reply { status: 404, description: "No such VR or route", content: Content::Json(schemas::error) },
        ],
        handler: handlers::routes_remove,
    },
    Endpoint {
        method: "GET",
        path: "/v1/vrs/{name}/fib",
        access: Access::Owner,
        summary: "A VR's fast-path FIB as the workers read it (every route, whatever its origin), paged in address order",
        params: FIB_PARAMS,
        body: None,
        responses: &[
            Reply { status: 200, description: "A page of routes with their next hops", content: Content::Json(schemas::fib_page) },
            Reply { status: 400, description: "`prefix` or `after` is not a prefix of the family", content: Content::Json(schemas::error) },
            Reply { status: 404, description: "No VR has this name, or it has no fast-path FIB", content: Content::Json(schemas::error) },
        ],
        handler: crate::fib::page,
    },
    Endpoint {
        method: "GET",
        path: "/v1/vrs/{name}/fib/lookup",
        access: Access::Owner,
        summary: "The route the fast path's longest-prefix lookup finds for an address",
        params: FIB_LOOKUP_PARAMS,
        body: None,
        responses: &[
            Reply { status: 200, description: "The route (null: none)", content: Content::Json(schemas::fib_lookup) },
            Reply { status: 400, description: "`address` is missing or not an address", content: Content::Json(schemas::error) },
            Reply { status: 404, description: "No VR has this name, or it has no fast-path FIB", content: Content::Json(schemas::error) },
        ],
        handler: crate::fib::lookup,
    },
    Endpoint {
        method: "GET",
        path: "/v1/vrs/{name}/filters",
        access: Access::Owner,
        summary: "A VR's classifier rules (its `match` list)",
        params: &[VR_NAME],
        body: None,
        responses: &[Reply { status: 200, description: "The rules", content: Content::Json(schemas::filters) }],
        handler: handlers::filters_get,
    },
    Endpoint {
        method: "POST",
        path: "/v1/vrs/{name}/filters",
        access: Access::Owner,
        summary: "Adds a classifier rule to a VR",
        params: &[VR_NAME],
        body: Some(schemas::filter_spec),
        responses: &[
            Reply { status: 201, description: "Added; the VR's rules", content: Content::Json(schemas::filters) },
            Reply { status: 422, description: "Invalid; `field` names the offending one", content: Content::Json(schemas::error) },
        ],
        handler: handlers::filters_add,
    },
    Endpoint {
        method: "DELETE",
        path: "/v1/vrs/{name}/filters/{index}",
        access: Access::Owner,
        summary: "Removes a VR's classifier rule by its position in the list",
        params: &[VR_NAME, INDEX],
        body: None,
        responses: &[
            Reply { status: 200, description: "Removed", content: Content::Json(schemas::deleted) },
            Reply { status: 404, description: "No such VR or rule", content: Content::Json(schemas::error) },
        ],
        handler: handlers::filters_remove,
    },
    Endpoint {
        method: "GET",
        path: "/v1/vrs/{name}/tables",
        access: Access::Owner,
        summary: "A plugin VR's key-value tables (plugin.tables), which its program reads and writes",
        params: &[VR_NAME],
        body: None,
        responses: &[
            Reply { status: 200, description: "Each table's name, most entries and entries now", content: Content::Json(schemas::tables) },
            Reply { status: 404, description: "No VR has this name, or it is not a plugin VR", content: Content::Json(schemas::error) },
        ],
        handler: plugin_tables::list,
    },
    Endpoint {
        method: "GET",
        path: "/v1/vrs/{name}/tables/{table}",
        access: Access::Owner,
        summary: "A plugin VR table's entries, keys and values in hexadecimal",
        params: &[VR_NAME, TABLE],
        body: None,
        responses: &[
            Reply { status: 200, description: "The entries, by key", content: Content::Json(schemas::table_entries) },
            Reply { status: 404, description: "No such VR or table", content: Content::Json(schemas::error) },
        ],
        handler: plugin_tables::entries,
    },
    Endpoint {
        method: "PUT",
        path: "/v1/vrs/{name}/tables/{table}/{key}",
        access: Access::Owner,
        summary: "Sets an entry of a plugin VR's table; the program sees it from its next batch",
        params: &[VR_NAME, TABLE, KEY],
        body: Some(schemas::table_value),
        responses: &[
            Reply { status: 200, description: "Set", content: Content::Json(schemas::table_entry) },
            Reply { status: 400, description: "The key is not hexadecimal", content: Content::Json(schemas::error) },
            Reply { status: 404, description: "No such VR or table", content: Content::Json(schemas::error) },
            Reply {
                status: 422,
                description: "The value is not hexadecimal, a key or value is too long, or the table is full",
                content: Content::Json(schemas::error),
            },
        ],
        handler: plugin_tables::set,
    },
    Endpoint {
        method: "DELETE",
        path: "/v1/vrs/{name}/tables/{table}/{key}",
        access: Access::Owner,
        summary: "Removes an entry of a plugin VR's table",
        params: &[VR_NAME, TABLE, KEY],
        body: None,
        responses: &[
            Reply { status: 200, description: "Removed", content: Content::Json(schemas::deleted) },
            Reply { status: 400, description: "The key is not hexadecimal", content: Content::Json(schemas::error) },
            Reply { status: 404, description: "No such VR, table or key", content: Content::Json(schemas::error) },
        ],
        handler: plugin_tables::remove,
    },
    Endpoint {
        method: "PUT",
        path: "/v1/vrs/{name}/queues",
        access: Access::Owner,
        summary: "Replaces a VR's output queues (weights and lengths)",
        params: &[VR_NAME],
        body: Some(schemas::queues_spec),
        responses: &[
            Reply { status: 200, description: "Changed; the VR's queues", content: Content::Json(schemas::queues) },
            Reply { status: 422, description: "Invalid; `field` names the offending one", content: Content::Json(schemas::error) },
        ],
        handler: handlers::queues_put,
    },
    Endpoint {
        method: "PUT",
        path: "/v1/vrs/{name}/limits",
        access: Access::Admin,
        summary: "Replaces a VR's limits (rate, FIB entries, filters, CPU, memory)",
        params: &[VR_NAME],
        body: Some(schemas::limits_spec),
        responses: &[
            Reply { status: 200, description: "Changed; the VR's limits", content: Content::Json(schemas::limits) },
            Reply { status: 422, description: "Invalid; `field` names the offending one", content: Content::Json(schemas::error) },
        ],
        handler: handlers::limits_put,
    },
    Endpoint {
        method: "PUT",
        path: "/v1/vrs/{name}/interfaces/{interface}/impair",
        access: Access::Owner,
        summary: "Sets what the link out of a VR interface does to packets (delay, jitter, loss, duplication, rate); {} lifts it",
        params: &[VR_NAME, INTERFACE],
        body: Some(schemas::impairment),
        responses: &[
            Reply { status: 200, description: "Changed; the interface's impairment", content: Content::Json(schemas::impair_reply) },
            Reply { status: 404, description: "No such VR or interface", content: Content::Json(schemas::error) },
            Reply { status: 422, description: "Invalid; `field` names the offending one", content: Content::Json(schemas::error) },
        ],
        handler: changes::impair_put,
    },
    Endpoint {
        method: "POST",
        path: "/v1/vrs/{name}/migrate",
        access: Access::Admin,
        summary: "Moves a fast or kernel VR to the other data plane in place: namespace, daemons and sessions stay (admin)",
        params: &[VR_NAME],
        body: Some(schemas::migrate_spec),
        responses: &[
            Reply {
                status: 200,
                description: "Moved; the VR as it is now, and how long the move took",
                content: Content::Json(schemas::migrated),
            },
            Reply { status: 404, description: "No VR has this name", content: Content::Json(schemas::error) },
            Reply { status: 409, description: "The VR is neither fast nor kernel", content: Content::Json(schemas::error) },
            Reply {
                status: 422,
                description: "Refused whole (e.g. no fast-path slot left: `field` is node.fast_slots)",
                content: Content::Json(schemas::error),
            },
        ],
        handler: crate::migrate::vr_migrate,
    },
    Endpoint {
        method: "POST",
        path: "/v1/vrs/{name}/capture",
        access: Access::Owner,
        summary: "Captures one VR's frames at rx, tx or the slow path while forwarding goes on; answers a pcap",
        params: &[VR_NAME],
        body: Some(schemas::capture_spec),
        responses: &[
            Reply { status: 200, description: "A pcap file (bounded in frames, time and size)", content: Content::Text(handlers::PCAP) },
            Reply { status: 404, description: "No such VR or interface", content: Content::Json(schemas::error) },
        ],
        handler: handlers::capture,
    },
    Endpoint {
        method: "POST",
        path: "/v1/vrs/{name}/trace",
        access: Access::Owner,
        summary:
            "Traces the VR's next packets through the pipeline: port, extract, verdict, program decision, route, output or drop reason",
        params: &[VR_NAME],
        body: Some(schemas::trace_spec),
        responses: &[
            Reply {
                status: 200,
                description: "The packets traced (fewer if `seconds` ran out), each stage in words and as fields",
                content: Content::Json(schemas::trace),
            },
            Reply { status: 400, description: "A bad count, seconds or match (`field` names it)", content: Content::Json(schemas::error) },
            Reply { status: 404, description: "No such VR or port", content: Content::Json(schemas::error) },
        ],
        handler: handlers::trace,
    },
];

fn openapi_schema() -> serde_json::Value {
    json!({"type": "object", "required": ["openapi", "info", "paths"]})
}

fn openapi_document(ctx: &Ctx, _: &Call) -> Result<Response, ApiError> {
    Ok(Response::json(200, &openapi::document(ENDPOINTS, auth::enabled(ctx))))
}
