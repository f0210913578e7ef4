//! The OpenAPI 3.0 document, generated from the endpoint table the router serves from. It
//! states the tokens the running pearld asks for: none while no admin token is configured.

use crate::access::Access;
use crate::router::{Content, Endpoint, Place};
use crate::schemas;
use serde_json::{json, Map, Value};

pub fn document<C>(table: &[Endpoint<C>], tokens: bool) -> Value {
    let mut paths = Map::new();
    for e in table {
        let entry = paths.entry(e.path).or_insert_with(|| json!({}));
        entry[e.method.to_ascii_lowercase()] = operation(e, tokens);
    }
    let mut doc = json!({
        "openapi": "3.0.3",
        "info": {
            "title": "PEARL API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "pearld's HTTP/JSON API: live counters, VRs, runtime changes, Prometheus metrics and the \
                dashboard. Every refusal is a 4xx whose JSON body names the field at fault. With `api.admin_token` \
                configured, requests carry a token: the admin token may do everything; a VR's `token` reaches only \
                that VR (another VR is answered 404), and may not create or delete VRs, read the configuration or \
                /metrics, or set its limits, control plane or token (403).",
        },
        "paths": paths,
        "components": {"securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer", "description": "the admin token or a VR's token"},
            "basic": {"type": "http", "scheme": "basic", "description": "the token as the password (browsers)"},
        }},
    });
    if tokens {
        doc["security"] = json!([{"bearer": []}, {"basic": []}]);
    }
    doc
}

fn operation<C>(e: &Endpoint<C>, tokens: bool) -> Value {
    let mut responses = Map::new();
    for r in e.responses {
        let content = match r.content {
            Content::Json(schema) => json!({"application/json": {"schema": schema()}}),
            Content::Text(media) => json!({media: {"schema": {"type": "string"}}}),
        };
        responses.insert(r.status.to_string(), json!({"description": r.description, "content": content}));
    }
    responses.insert(
        "default".into(),
        json!({"description": "Refused: the body says why and names the field at fault",
               "content": {"application/json": {"schema": schemas::error()}}}),
    );
    let mut op = json!({
        "operationId": operation_id(e),
        "summary": e.summary,
        "responses": responses,
    });
    if !e.params.is_empty() {
        op["parameters"] = e
            .params
            .iter()
            .map(|p| {
                let (place, required) = match p.place {
                    Place::Path => ("path", true),
                    Place::Query => ("query", false),
                };
                json!({"name": p.name, "in": place, "required": required, "description": p.description, "schema": (p.schema)()})
            })
            .collect();
    }
    if let Some(schema) = e.body {
        op["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": schema()}}});
    }
    if tokens && e.access == Access::Public {
        op["security"] = json!([]);
    }
    op
}

/// `GET /v1/vrs/{name}` → `get_v1_vrs_by_name`; `GET /` → `get_root`.
fn operation_id<C>(e: &Endpoint<C>) -> String {
    let words: Vec<String> = e
        .path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(p) => format!("by_{p}"),
            None => s.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
        })
        .collect();
    let tail = if words.is_empty() { "root".to_string() } else { words.join("_") };
    format!("{}_{tail}", e.method.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router;
    use crate::routes::ENDPOINTS;
    use crate::validate::{ANNOTATIONS, GRAMMAR, KEYWORDS, PATTERNS};
    use std::collections::BTreeSet;

    fn doc() -> Value {
        document(ENDPOINTS, true)
    }

    /// Every (method, path) of the document.
    fn operations(doc: &Value) -> BTreeSet<(String, String)> {
        let mut ops = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                ops.insert((method.to_ascii_uppercase(), path.clone()));
            }
        }
        ops
    }

    /// `path` with each parameter replaced by its schema's example.
    fn concrete(path: &str, op: &Value) -> String {
        let mut out = path.to_string();
        for p in op["parameters"].as_array().into_iter().flatten() {
            let example = &p["schema"]["example"];
            let text = example.as_str().map(str::to_string).unwrap_or_else(|| example.to_string());
            out = out.replace(&format!("{{{}}}", p["name"].as_str().unwrap()), &text);
        }
        out
    }

    #[test]
    fn the_router_serves_exactly_the_documented_operations() {
        let doc = doc();
        let served: BTreeSet<(String, String)> = ENDPOINTS.iter().map(|e| (e.method.to_string(), e.path.to_string())).collect();
        assert_eq!(served.len(), ENDPOINTS.len(), "an operation is in the table twice");
        assert_eq!(operations(&doc), served);
        for (method, path) in operations(&doc) {
            let op = &doc["paths"][&path][method.to_ascii_lowercase()];
            let url = concrete(&path, op);
            let (e, _) = router::find(ENDPOINTS, &method, &url).unwrap_or_else(|e| panic!("{method} {url}: {e:?}"));
            assert_eq!((e.method, e.path), (method.as_str(), path.as_str()), "{url} reaches another endpoint");
        }
        assert_eq!(router::find(ENDPOINTS, "GET", "/v2/nothing").err().map(|e| e.status), Some(404));
        assert_eq!(router::find(ENDPOINTS, "DELETE", "/openapi.json").err().map(|e| e.status), Some(405));
    }

    #[test]
    fn path_parameters_are_declared_with_examples_exactly_as_the_paths_name_them() {
        for e in ENDPOINTS {
            let in_path: BTreeSet<&str> = e.path.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}'))).collect();
            let declared: BTreeSet<&str> = e.params.iter().filter(|p| p.place == Place::Path).map(|p| p.name).collect();
            assert_eq!(in_path, declared, "{} {}", e.method, e.path);
            for p in e.params {
                assert!(!(p.schema)()["example"].is_null(), "{}: {{{}}} needs an example", e.path, p.name);
            }
        }
    }

    #[test]
    fn operations_are_named_uniquely_and_document_a_success() {
        let doc = doc();
        let mut ids = BTreeSet::new();
        for (method, path) in operations(&doc) {
            let op = &doc["paths"][&path][method.to_ascii_lowercase()];
            assert!(ids.insert(op["operationId"].as_str().unwrap().to_string()), "{method} {path}: operationId taken");
            assert!(!op["summary"].as_str().unwrap().is_empty(), "{method} {path}: no summary");
            let responses = op["responses"].as_object().unwrap();
            assert!(responses.keys().any(|k| k.starts_with('2')), "{method} {path}: no 2xx documented");
            assert!(responses.contains_key("default"));
        }
    }

    /// Walks every schema in the document and checks it uses only what `validate` enforces.
    fn check_schema(s: &Value, at: &str) {
        // The grammar's schemas are the configuration parser's to enforce, below their top.
        if s.get(GRAMMAR).is_some() {
            return;
        }
        for (k, v) in s.as_object().unwrap_or_else(|| panic!("{at}: not a schema")) {
            assert!(KEYWORDS.contains(&k.as_str()) || ANNOTATIONS.contains(&k.as_str()), "{at}: {k} is not enforced");
            match k.as_str() {
                "properties" => v.as_object().unwrap().iter().for_each(|(n, s)| check_schema(s, &format!("{at}.{n}"))),
                "items" => check_schema(v, &format!("{at}[]")),
                "additionalProperties" if v.is_object() => check_schema(v, &format!("{at}.*")),
                "pattern" => assert!(PATTERNS.iter().any(|(p, _)| p == v), "{at}: pattern {v} is not enforced"),
                // OpenAPI 3.0 names one type; a null is `nullable: true`, not a second type.
                "type" => assert!(v.is_string(), "{at}: type {v} is not one OpenAPI 3.0 type"),
                _ => {}
            }
        }
    }

    #[test]
    fn every_schema_uses_only_what_the_validator_enforces() {
        let doc = doc();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let at = format!("{method} {path}");
                for p in op["parameters"].as_array().into_iter().flatten() {
                    check_schema(&p["schema"], &at);
                }
                if let Some(body) = op.get("requestBody") {
                    check_schema(&body["content"]["application/json"]["schema"], &at);
                }
                for (status, r) in op["responses"].as_object().unwrap() {
                    for (_, media) in r["content"].as_object().into_iter().flatten() {
                        check_schema(&media["schema"], &format!("{at} {status}"));
                    }
                }
            }
        }
    }

    /// Walks a response schema: an object that lists its fields allows no others, and a field
    /// that may be null is always sent (a field left out when unset is never null).
    fn check_strict(s: &Value, at: &str) {
        // The document's entries echoed as they were given: a key may be left out or null.
        if s.get(GRAMMAR).is_some() {
            return;
        }
        if let Some(properties) = s["properties"].as_object() {
            assert_eq!(s["additionalProperties"], json!(false), "{at}: open to unknown fields");
            let required = s["required"].as_array().cloned().unwrap_or_default();
            for (name, p) in properties {
                let absent_or_null = p["nullable"] == json!(true) && !required.contains(&json!(name));
                assert!(!absent_or_null, "{at}.{name}: both optional and nullable");
                check_strict(p, &format!("{at}.{name}"));
            }
        }
        for (k, v) in s.as_object().into_iter().flatten() {
            if k == "items" || (k == "additionalProperties" && v.is_object()) {
                check_strict(v, &format!("{at}[]"));
            }
        }
    }

    #[test]
    fn response_objects_are_closed_and_their_nullable_fields_always_sent() {
        let doc = doc();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                for (status, r) in op["responses"].as_object().unwrap() {
                    for (_, media) in r["content"].as_object().into_iter().flatten() {
                        check_strict(&media["schema"], &format!("{method} {path} {status}"));
                    }
                }
            }
        }
    }

    #[test]
    fn tokens_are_asked_for_everywhere_but_the_public_operations_and_only_when_configured() {
        let doc = doc();
        assert_eq!(doc["security"], json!([{"bearer": []}, {"basic": []}]));
        for (method, path) in operations(&doc) {
            let op = &doc["paths"][&path][method.to_ascii_lowercase()];
            let public = matches!(path.as_str(), "/healthz" | "/openapi.json");
            assert_eq!(op.get("security") == Some(&json!([])), public, "{method} {path}");
        }
        let open = document(ENDPOINTS, false);
        assert!(open.get("security").is_none() && open["paths"]["/healthz"]["get"].get("security").is_none());
    }

    #[test]
    fn operation_ids_read_like_their_paths() {
        let e = ENDPOINTS.iter().find(|e| e.path == "/v1/vrs/{name}").unwrap();
        assert_eq!(operation_id(e), "get_v1_vrs_by_name");
        let root = ENDPOINTS.iter().find(|e| e.path == "/").unwrap();
        assert_eq!(operation_id(root), "get_root");
    }
}
