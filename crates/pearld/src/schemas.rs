//! JSON schemas of what the API sends and takes. Response schemas are generated from the types
//! in `models` (the bodies the handlers send) and are strict (every field that is always sent
//! required, no others allowed), so the schemathesis run in the system tests catches a response
//! that drifted from its document. The schemas of configuration bodies (`document`, `vr_spec`,
//! `vr_patch`, a route, a rule, queues, limits) and of the answers that echo the document are
//! generated from the configuration's grammar types (`pearl_control::grammar`), the types its parser
//! reads a document into: the grammar published is the grammar enforced, and the parser checks
//! it in depth, naming the field by its path in the document. The schemas of the other requests
//! and of parameters are written here, within what `validate` enforces.

use crate::models::deleted::Deleted;
use crate::models::error::ErrorBody;
use crate::models::errors::Errors;
use crate::models::fib::{FibLookup, FibPage};
use crate::models::health::Health;
use crate::models::impairment::{ImpairReply, Impairment};
use crate::models::migrated::Migrated;
use crate::models::node::NodeReport;
use crate::models::stats::Stats;
use crate::models::stopping::Stopping;
use crate::models::tables::{TableEntries, TableEntry, Tables};
use crate::models::vr::{Vr, VrList};
use crate::models::{grammar_of, schema_of};
use crate::validate::{GRAMMAR, NAME_PATTERN};
use pearl_control::grammar::{Document, LimitsSpec, MatchSpec, QueueSpec, RouteSpec, VrSpec};
use pearl_control::SETTABLE_VR_KEYS;
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

/// The configuration document (what the YAML file says, plus runtime changes).
pub fn document() -> Value {
    grammar_of::<Document>()
}

/// A net as its file states it.
pub fn net_spec() -> Value {
    grammar_of::<pearl_control::grammar::NetSpec>()
}

pub fn net_report() -> Value {
    schema_of::<crate::models::net::NetReport>()
}

pub fn net_list() -> Value {
    schema_of::<crate::models::net::NetList>()
}

pub fn net_name() -> Value {
    json!({"type": "string", "pattern": NAME_PATTERN, "example": "lab"})
}

pub fn link_name() -> Value {
    json!({"type": "string", "example": "red-blue"})
}

pub fn link_state() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["state"],
           "properties": {"state": {"type": "string", "enum": ["up", "down"]}}})
}

/// A VR as the YAML file states it.
pub fn vr_spec() -> Value {
    grammar_of::<VrSpec>()
}

/// Keys of a VR that may change while it runs, each replacing the VR's own: `vr_spec`'s, but
/// only those and none required.
pub fn vr_patch() -> Value {
    let mut schema = vr_spec();
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.retain(|k, _| SETTABLE_VR_KEYS.contains(&k.as_str()));
    }
    if let Some(s) = schema.as_object_mut() {
        s.remove("required");
    }
    schema["description"] = "Any of a running VR's settable keys, each replacing the VR's own".into();
    schema
}

pub fn route_spec() -> Value {
    grammar_of::<RouteSpec>()
}

/// A classifier rule as in a VR's `match` list (e.g. {"udp_dst": 4000, "priority": 20}).
pub fn filter_spec() -> Value {
    grammar_of::<MatchSpec>()
}

pub fn queues_spec() -> Value {
    grammar_of::<Vec<QueueSpec>>()
}

pub fn limits_spec() -> Value {
    grammar_of::<LimitsSpec>()
}

pub fn deleted() -> Value {
    schema_of::<Deleted>()
}

/// `{key: value}`: one of a VR's keys, as its entry in the document states it.
fn entry_of(key: &str, schema: Value) -> Value {
    let mut fields = Map::new();
    fields.insert(key.to_string(), schema);
    let mut entry = object(Value::Object(fields));
    entry[GRAMMAR] = "a VR's entry of the configuration document, as given".into();
    entry
}

pub fn routes() -> Value {
    entry_of("routes", grammar_of::<Vec<RouteSpec>>())
}

pub fn filters() -> Value {
    entry_of("match", grammar_of::<Vec<MatchSpec>>())
}

pub fn queues() -> Value {
    entry_of("queues", queues_spec())
}

pub fn limits() -> Value {
    entry_of("limits", limits_spec())
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

/// `GET /v1/cluster/nodes`.
pub fn cluster_nodes() -> Value {
    let node = json!({"type": "object", "required": ["name", "state", "vrs", "running", "underlay", "api"], "additionalProperties": false, "properties": {
        "name": {"type": "string"}, "state": {"type": "string", "enum": ["up", "down"]},
        "since": {"type": "integer", "description": "when it registered (Unix seconds); up nodes only"},
        "lease_age_s": {"type": "integer", "description": "seconds since it registered under its lease; up nodes only"},
        "lease_ttl_s": {"type": "integer", "description": "its lease's TTL; up nodes only"},
        "vrs": {"type": "array", "items": {"type": "string"}, "description": "NET/VR placed on it"},
        "running": {"type": "integer", "description": "VRs it owns (runs)"},
        "underlay": {"type": "object", "nullable": true, "description": "{device, address, mtu} its tunnels end at"},
        "api": {"type": "string", "nullable": true, "description": "its TCP API, if it serves one; null on down nodes"},
        "capacity": {"type": "object", "description": "as GET /v1/node; up nodes only"},
        "granted": {"type": "object"}, "free": {"type": "object"}}});
    json!({"type": "object", "required": ["nodes", "scheduler"], "additionalProperties": false, "properties": {"nodes": {"type": "array", "items": node},
           "scheduler": {"type": "string", "nullable": true, "description": "the elected node placing `node: auto` VRs"}}})
}

/// `POST /v1/node/stop`.
pub fn stopping() -> Value {
    schema_of::<Stopping>()
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

/// What `POST /v1/vrs/{name}/trace` takes.
pub fn trace_spec() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "count": {"type": "integer", "minimum": 1, "maximum": pearl_dataplane::trace::MAX_COUNT, "description": "the next this many packets (default 10)"},
            "match": {"type": "object", "description": "only packets matching these conditions, as in the VR's match list (e.g. {\"ip_dst\": \"10.0.2.2/32\", \"ip_proto\": 1})"},
            "port": {"type": "string", "description": "only packets received on this port"},
            "seconds": {"type": "integer", "minimum": 1, "maximum": crate::trace::MAX_SECONDS, "description": "stop waiting after this long (default 5)"},
        },
    })
}

/// What `POST /v1/vrs/{name}/trace` answers.
pub fn trace() -> Value {
    let text = |d: &str| json!({"type": "string", "nullable": true, "description": d});
    let int = |d: &str| json!({"type": "integer", "nullable": true, "description": d});
    let packet = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["time_ns", "worker", "port", "len", "malformed", "vr", "rule", "queue", "program", "decision", "route",
                     "offloaded", "outcome", "tx", "text", "frame"],
        "properties": {
            "time_ns": {"type": "integer", "description": "when its batch was received, ns since the Unix epoch"},
            "worker": {"type": "integer"},
            "port": {"type": "string", "description": "the port it came in on"},
            "len": {"type": "integer"},
            "malformed": text("why extraction refused it"),
            "vr": text("the classifier's verdict"),
            "rule": int("the VR's match rule that claimed it (null: its interface MAC)"),
            "queue": int("the VR queue"),
            "program": text("the VR program's decision"),
            "decision": text("the decision after the lookup and source stages"),
            "route": {"type": "object", "nullable": true, "description": "the FIB route it took, as GET /v1/vrs/{name}/fib shows it"},
            "offloaded": {"type": "boolean", "description": "offered to the kernel's flow offload"},
            "outcome": {"type": "object", "nullable": true,
                        "description": "kind: out, refused, kernel, dropped, unclaimed or malformed; with port, queue, mac, reason as they apply"},
            "tx": {"type": "object", "nullable": true,
                   "description": "for a packet queued out of a port, what the port did when the worker transmitted it: result sent, refused (reason tx_errors, taken of handed), partly, dropped (reason port_gone) or not_seen"},
            "text": {"type": "array", "items": {"type": "string"}, "description": "each stage in words"},
            "frame": {"type": "string", "description": "the frame as received (its first 256 bytes), hex"},
        },
    });
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["vr", "count", "packets"],
        "properties": {
            "vr": {"type": "string"},
            "count": {"type": "integer"},
            "packets": {"type": "array", "items": packet},
        },
    })
}

pub fn errors() -> Value {
    schema_of::<Errors>()
}

pub fn fib_page() -> Value {
    schema_of::<FibPage>()
}

pub fn fib_lookup() -> Value {
    schema_of::<FibLookup>()
}

pub fn family() -> Value {
    json!({"type": "string", "enum": ["v4", "v6"], "example": "v4"})
}

pub fn prefix() -> Value {
    json!({"type": "string", "maxLength": 50, "example": "10.9.0.0/16"})
}

pub fn fib_limit() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": 10000, "example": 100})
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Whether `v` fits `schema`, for the keywords the grammar's schemas use (a check of the
    /// schemas themselves: `validate` leaves what is below their top to the parser).
    fn fits(schema: &Value, v: &Value) -> bool {
        if v.is_null() && schema["nullable"] == json!(true) {
            return true;
        }
        if let Some(options) = schema["anyOf"].as_array().or(schema["oneOf"].as_array()) {
            return options.iter().any(|o| fits(o, v));
        }
        if let Some(values) = schema["enum"].as_array() {
            return values.contains(v);
        }
        match (schema["type"].as_str(), v) {
            (Some("object"), Value::Object(fields)) => {
                let required = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str);
                required.clone().all(|r| fields.contains_key(r))
                    && fields.iter().all(|(k, f)| match schema["properties"].get(k) {
                        Some(p) => fits(p, f),
                        None if schema["additionalProperties"] == json!(false) => false,
                        None => schema["additionalProperties"].is_null() || fits(&schema["additionalProperties"], f),
                    })
            }
            (Some("array"), Value::Array(items)) => items.iter().all(|i| fits(&schema["items"], i)),
            (Some("string"), Value::String(_)) | (Some("boolean"), Value::Bool(_)) => true,
            (Some("integer"), Value::Number(n)) => n.is_i64() || n.is_u64(),
            (Some("number"), Value::Number(_)) => true,
            (Some(_), _) => false,
            (None, _) => true,
        }
    }

    fn examples() -> Vec<Value> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let docs: Vec<Value> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .map(|p| pearl_control::document_from_yaml(&std::fs::read_to_string(p).unwrap()).unwrap())
            .collect();
        assert!(docs.len() >= 2);
        docs
    }

    #[test]
    fn the_published_grammar_takes_every_example_and_refuses_unknown_keys_where_the_parser_does() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let schema = document();
        for doc in examples() {
            pearl_control::config_from_document(&doc, &dir).unwrap();
            assert!(fits(&schema, &doc), "{doc}");
            let unknown = [
                ("", "wrokers", "wrokers"),
                ("/vrs/0", "mtus", "vrs[0].mtus"),
                ("/vrs/0/interfaces/0", "mtus", "vrs[0].interfaces[0].mtus"),
                ("/ports/0", "rate", "ports[0].rate"),
            ];
            for (pointer, key, path) in unknown {
                let mut bad = doc.clone();
                bad.pointer_mut(pointer).unwrap()[key] = 1.into();
                assert!(!fits(&schema, &bad), "{path}");
                assert_eq!(pearl_control::config_from_document(&bad, &dir).unwrap_err().path, path);
            }
        }
        let rule = json!({"udp_dst": {"value": 4000, "mask": 65532}, "priority": 5, "queue": 0});
        assert!(fits(&filter_spec(), &rule) && !fits(&filter_spec(), &json!({"udp_dst": "4000"})));
        assert!(fits(&queues_spec(), &json!([{"weight": 2}, {}])) && !fits(&queues_spec(), &json!([{"weight": 1.5}])));
        // Either form of a port range; null as good as left out; an interface's key is not a VR's.
        for ports in [json!(20000), json!("20000-20999")] {
            assert!(fits(&vr_spec(), &json!({"name": "red", "nat": {"address": "10.0.0.1", "ports": ports}, "routes": null})));
        }
        assert!(!fits(&vr_spec(), &json!({"name": "red", "mtu": 1500})) && !fits(&vr_spec(), &json!({"interfaces": []})));
    }

    #[test]
    fn a_running_vrs_patch_takes_exactly_its_settable_keys() {
        let patch = vr_patch();
        let mut keys: Vec<&str> = patch["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        let mut settable = SETTABLE_VR_KEYS.to_vec();
        keys.sort_unstable();
        settable.sort_unstable();
        assert_eq!(keys, settable, "every settable key is a VR key");
        assert!(patch.get("required").is_none() && patch[GRAMMAR].is_string());
    }
}
