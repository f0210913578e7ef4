//! JSON schemas of what the API sends and takes. Response schemas are generated from the types
//! in `models` (the bodies the handlers send) and are strict (every field that is always sent
//! required, no others allowed), so the schemathesis run in the system tests catches a response
//! that drifted from its document. The schemas of requests and parameters are written here,
//! within what `validate` enforces; those of configuration bodies (`document`, `vr_spec` ...)
//! only name the keys, as pearl-control's parser checks the grammar in depth and names the field.
//! The answers that echo the document (`document`, a VR's `routes`, `filters`, `queues`,
//! `limits`) are described as loosely, for the same reason: their entries are its grammar.

use crate::models::deleted::Deleted;
use crate::models::error::ErrorBody;
use crate::models::health::Health;
use crate::models::impairment::{ImpairReply, Impairment};
use crate::models::migrated::Migrated;
use crate::models::node::NodeReport;
use crate::models::schema_of;
use crate::models::stats::Stats;
use crate::models::tables::{TableEntries, TableEntry, Tables};
use crate::models::vr::{Vr, VrList};
use crate::validate::NAME_PATTERN;
use serde_json::{json, Map, Value};

/// An object with exactly these fields.
fn object(fields: Value) -> Value {
    with_optional(fields, json!({}))
}

/// An object with `fields` always and `optional` sometimes, and no others.
fn with_optional(fields: Value, optional: Value) -> Value {
    let required: Vec<Value> = fields.as_object().expect("fields").keys().map(|k| Value::from(k.as_str())).collect();
    let mut properties: Map<String, Value> = fields.as_object().cloned().unwrap_or_default();
    properties.extend(optional.as_object().cloned().unwrap_or_default());
    // OpenAPI 3.0 wants a `required` list to name at least one property.
    match required.is_empty() {
        true => json!({"type": "object", "additionalProperties": false, "properties": properties}),
        false => json!({"type": "object", "additionalProperties": false, "required": required, "properties": properties}),
    }
}

fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

pub fn vr_name() -> Value {
    json!({"type": "string", "pattern": NAME_PATTERN, "example": "red"})
}

pub fn error() -> Value {
    schema_of::<ErrorBody>()
}

pub fn health() -> Value {
    schema_of::<Health>()
}

pub fn stats() -> Value {
    schema_of::<Stats>()
}

/// An interface's `impair:`, as `PUT .../impair` takes it and the VR shows it.
pub fn impairment() -> Value {
    schema_of::<Impairment>()
}

pub fn vr() -> Value {
    schema_of::<Vr>()
}

pub fn vr_list() -> Value {
    schema_of::<VrList>()
}

/// A request body the configuration parser validates in depth (naming the field); the schema
/// only says it is an object with these keys.
fn config_object(required: &[&str]) -> Value {
    json!({"type": "object", "required": required})
}

/// The configuration document (what the YAML file says, plus runtime changes).
pub fn document() -> Value {
    json!({"type": "object", "description": "the configuration: workers, node, ports, vrs (as in the YAML file)"})
}

/// A VR as the YAML file states it.
pub fn vr_spec() -> Value {
    config_object(&["name", "interfaces"])
}

/// Keys of a VR that may change while it runs.
pub fn vr_patch() -> Value {
    json!({
        "type": "object",
        "description": "any of: code, routes, neighbors, match, queues, limits, control_plane, token, accept_source_route, leak, nat, placement, resources (each replaces the VR's own)",
    })
}

pub fn route_spec() -> Value {
    config_object(&["prefix", "via"])
}

/// A classifier rule as in a VR's `match` list (e.g. {"udp_dst": 4000, "priority": 20}).
pub fn filter_spec() -> Value {
    json!({"type": "object"})
}

pub fn queues_spec() -> Value {
    json!({"type": "array", "items": config_object(&["weight"])})
}

pub fn limits_spec() -> Value {
    json!({"type": "object"})
}

pub fn deleted() -> Value {
    schema_of::<Deleted>()
}

/// `{key: [...]}`: one of a VR's lists.
pub fn list_of(key: &str) -> Value {
    let mut fields = Map::new();
    fields.insert(key.to_string(), array(json!({"type": "object"})));
    object(Value::Object(fields))
}

pub fn routes() -> Value {
    list_of("routes")
}

pub fn filters() -> Value {
    list_of("match")
}

pub fn queues() -> Value {
    list_of("queues")
}

pub fn limits() -> Value {
    object(json!({"limits": {"type": "object"}}))
}

pub fn address() -> Value {
    json!({"type": "string", "example": "198.51.100.0"})
}

pub fn prefix_length() -> Value {
    json!({"type": "integer", "minimum": 0, "maximum": 128, "example": 24})
}

pub fn interface_name() -> Value {
    json!({"type": "string", "example": "eth0"})
}

pub fn impair_reply() -> Value {
    schema_of::<ImpairReply>()
}

pub fn table_name() -> Value {
    json!({"type": "string", "maxLength": 32, "example": "blocked"})
}

pub fn table_key() -> Value {
    json!({"type": "string", "maxLength": 128, "example": "0a090001"})
}

pub fn tables() -> Value {
    schema_of::<Tables>()
}

pub fn table_entries() -> Value {
    schema_of::<TableEntries>()
}

/// `{"value": HEX}`: an entry's new value.
pub fn table_value() -> Value {
    json!({"type": "object", "required": ["value"], "properties": {"value": {"type": "string", "example": "01"}}})
}

pub fn table_entry() -> Value {
    schema_of::<TableEntry>()
}

pub fn index() -> Value {
    json!({"type": "integer", "minimum": 0, "example": 0})
}

/// `GET /v1/node` (null: unbounded).
pub fn node() -> Value {
    schema_of::<NodeReport>()
}

/// What `POST /v1/vrs/{name}/migrate` takes.
pub fn migrate_spec() -> Value {
    json!({
        "type": "object", "required": ["to"], "additionalProperties": false,
        "properties": {"to": {"type": "string", "enum": ["fast", "kernel"], "description": "the data plane to forward the VR's packets"}},
    })
}

/// What `POST /v1/vrs/{name}/migrate` answers: the VR as it is now, and how the move went.
pub fn migrated() -> Value {
    schema_of::<Migrated>()
}

/// What `POST /v1/vrs/{name}/capture` takes.
pub fn capture_spec() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "point": {"type": "string", "enum": ["rx", "tx", "slow"], "description": "where on the VR's path (default rx)"},
            "interface": {"type": "string", "description": "only frames through this VR interface"},
            "count": {"type": "integer", "minimum": 1, "maximum": crate::capture::MAX_COUNT, "description": "stop after this many frames (default 1000)"},
            "seconds": {"type": "integer", "minimum": 1, "maximum": crate::capture::MAX_SECONDS, "description": "stop after this long (default 5)"},
        },
    })
}
