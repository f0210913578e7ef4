//! Checks a JSON value against the schemas the OpenAPI document publishes, so that what the
//! document promises about inputs is what the API enforces. Only the keywords the API's schemas
//! use are understood; a schema using another one is caught by `openapi`'s tests.
//!
//! Kept beside serde and the schemars-generated grammar schemas, which it defers to (a
//! [`GRAMMAR`] body is checked only for its type and required keys, then parsed by the
//! configuration's own code): what is left here is the hand schemas of the other bodies and of
//! path and query parameters, refused with a field path (`interfaces[0]`, `name`) and the bound
//! broken (`minItems`, `maxLength`, `minimum`, the name pattern, unknown fields with the known
//! ones listed). serde_json's errors carry a line and column, not a path, and check no bounds;
//! doing that by serde would take a typed body per endpoint, `serde_path_to_error` and the
//! bounds written again in code, out of reach of the document's tests.

use serde_json::Value;

/// Keywords understood here; the rest of a schema must be annotation only.
#[cfg(test)]
pub const KEYWORDS: &[&str] = &[
    "nullable",
    "type",
    "enum",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
];

/// Annotations that do not constrain a value.
#[cfg(test)]
pub const ANNOTATIONS: &[&str] = &["description", "example", "format", "title"];

/// Marks a schema generated from the configuration's grammar (`pearl_control::grammar`): only the
/// body's own type and required keys are checked here; what is inside is the configuration
/// parser's to check, which names the field by its path in the document (`vrs[2].interfaces[0]
/// .mtu`, answered 422) and holds a change made through the API to exactly the rules of the file.
pub const GRAMMAR: &str = "x-pearl-grammar";

/// `pattern` values the API's schemas may use, each with the check that enforces it: there is
/// no regex engine here, and the document must not promise what is not checked.
pub const PATTERNS: &[(&str, Matcher)] = &[(NAME_PATTERN, is_name)];

type Matcher = fn(&str) -> bool;

/// A VR name, which is also its namespace's name (the configuration's rule).
pub const NAME_PATTERN: &str = "^[A-Za-z0-9_-]{1,12}$";

fn is_name(s: &str) -> bool {
    (1..=12).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A refusal: the path of the field at fault (`interfaces[0].mac`) and what is wrong with it.
#[derive(Debug, PartialEq, Eq)]
pub struct Invalid {
    pub field: String,
    pub message: String,
}

pub fn check(schema: &Value, v: &Value, at: &str) -> Result<(), Invalid> {
    let fail = |message: String| Err(Invalid { field: at.to_string(), message });
    if v.is_null() && schema["nullable"] == Value::Bool(true) {
        return Ok(());
    }
    if let Some(t) = schema["type"].as_str() {
        if !has_type(v, t) {
            return fail(format!("must be {} (got {})", article(t), type_of(v)));
        }
    }
    if let Some(options) = schema["enum"].as_array() {
        if !options.contains(v) {
            let list: Vec<String> = options.iter().map(Value::to_string).collect();
            return fail(format!("must be one of {}", list.join(", ")));
        }
    }
    match v {
        Value::Object(fields) => {
            for name in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                if !fields.contains_key(name) {
                    return Err(Invalid { field: join(at, name), message: "is required".into() });
                }
            }
            if schema.get(GRAMMAR).is_some() {
                return Ok(());
            }
            for (name, value) in fields {
                let sub = &schema["properties"][name];
                if !sub.is_null() {
                    check(sub, value, &join(at, name))?;
                } else if schema["additionalProperties"] == Value::Bool(false) {
                    let known: Vec<&String> = schema["properties"].as_object().into_iter().flat_map(|p| p.keys()).collect();
                    return Err(Invalid {
                        field: join(at, name),
                        message: format!(
                            "is not a known field (known: {})",
                            known.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
                        ),
                    });
                } else if schema["additionalProperties"].is_object() {
                    check(&schema["additionalProperties"], value, &join(at, name))?;
                }
            }
        }
        Value::Array(_) if schema.get(GRAMMAR).is_some() => {}
        Value::Array(items) => {
            if let Some(min) = schema["minItems"].as_u64() {
                if (items.len() as u64) < min {
                    return fail(format!("must hold at least {min} item(s)"));
                }
            }
            if let Some(max) = schema["maxItems"].as_u64() {
                if items.len() as u64 > max {
                    return fail(format!("may hold at most {max} item(s)"));
                }
            }
            if schema["items"].is_object() {
                for (i, item) in items.iter().enumerate() {
                    check(&schema["items"], item, &format!("{at}[{i}]"))?;
                }
            }
        }
        Value::String(s) => {
            let chars = s.chars().count() as u64;
            if schema["minLength"].as_u64().is_some_and(|min| chars < min) {
                return fail(format!("must be at least {} character(s) long", schema["minLength"]));
            }
            if schema["maxLength"].as_u64().is_some_and(|max| chars > max) {
                return fail(format!("may be at most {} character(s) long", schema["maxLength"]));
            }
            if let Some(p) = schema["pattern"].as_str() {
                let ok = PATTERNS.iter().find(|(known, _)| *known == p).is_some_and(|(_, f)| f(s));
                if !ok {
                    return fail(format!("{s:?} does not match {p}"));
                }
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if schema["minimum"].as_f64().is_some_and(|min| x < min) {
                return fail(format!("must be at least {}", schema["minimum"]));
            }
            if schema["maximum"].as_f64().is_some_and(|max| x > max) {
                return fail(format!("may be at most {}", schema["maximum"]));
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
    Ok(())
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        "null" => v.is_null(),
        _ => false,
    }
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a fraction",
        Value::Number(_) => "an integer",
        Value::Null => "null",
    }
}

fn article(t: &str) -> String {
    match t {
        "object" | "array" | "integer" => format!("an {t}"),
        _ => format!("a {t}"),
    }
}

fn join(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_string()
    } else {
        format!("{at}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vr_request() -> Value {
        json!({
            "type": "object",
            "required": ["name", "interfaces"],
            "additionalProperties": false,
            "properties": {
                "name": {"type": "string", "pattern": NAME_PATTERN},
                "kind": {"type": "string", "enum": ["fast", "kernel"]},
                "weight": {"type": "integer", "minimum": 1, "maximum": 100},
                "interfaces": {"type": "array", "minItems": 1, "maxItems": 2, "items": {
                    "type": "object", "required": ["mac"],
                    "properties": {"mac": {"type": "string", "minLength": 17, "maxLength": 17}}
                }},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }
        })
    }

    fn field_of(v: Value) -> String {
        check(&vr_request(), &v, "").expect_err("must be refused").field
    }

    #[test]
    fn a_valid_value_passes() {
        let v = json!({"name": "red-1", "kind": "fast", "weight": 3, "interfaces": [{"mac": "02:00:00:00:00:01"}], "labels": {"a": "b"}});
        assert_eq!(check(&vr_request(), &v, ""), Ok(()));
    }

    #[test]
    fn each_violation_names_its_field() {
        let base = || json!({"name": "red", "interfaces": [{"mac": "02:00:00:00:00:01"}]});
        let with = |k: &str, v: Value| {
            let mut b = base();
            b[k] = v;
            b
        };
        assert_eq!(field_of(json!([])), "");
        assert_eq!(field_of(json!({"interfaces": []})), "name");
        assert_eq!(field_of(with("name", json!("has space"))), "name");
        assert_eq!(field_of(with("name", json!("thirteen-long"))), "name");
        assert_eq!(field_of(with("name", json!(7))), "name");
        assert_eq!(field_of(with("kind", json!("plugin"))), "kind");
        assert_eq!(field_of(with("weight", json!(0))), "weight");
        assert_eq!(field_of(with("weight", json!(101))), "weight");
        assert_eq!(field_of(with("weight", json!(1.5))), "weight");
        assert_eq!(field_of(with("interfaces", json!([]))), "interfaces");
        assert_eq!(field_of(with("interfaces", json!([{}, {}, {}]))), "interfaces");
        assert_eq!(field_of(with("interfaces", json!([{"mac": "02"}]))), "interfaces[0].mac");
        assert_eq!(field_of(with("interfaces", json!([{"mac": "02:00:00:00:00:01"}, {}]))), "interfaces[1].mac");
        assert_eq!(field_of(with("labels", json!({"a": 1}))), "labels.a");
        assert_eq!(field_of(with("colour", json!("red"))), "colour");
    }

    #[test]
    fn a_grammar_schema_is_checked_at_its_top_only() {
        let mut schema = vr_request();
        schema[GRAMMAR] = "the parser's".into();
        let inside = json!({"name": "has space", "interfaces": "none", "colour": "red"});
        assert_eq!(check(&schema, &inside, ""), Ok(()), "what is inside is the parser's to judge, naming the document's path");
        assert_eq!(check(&schema, &json!({"interfaces": []}), "").unwrap_err().field, "name");
        assert_eq!(check(&schema, &json!([]), "").unwrap_err().field, "");
    }

    #[test]
    fn null_passes_only_where_the_schema_allows_it() {
        let schema = json!({"type": "object", "nullable": true});
        assert_eq!(check(&schema, &Value::Null, "routed"), Ok(()));
        assert_eq!(check(&json!({"type": "object"}), &Value::Null, "routed").unwrap_err().field, "routed");
    }

    #[test]
    fn messages_say_what_to_fix() {
        let e = check(&vr_request(), &json!({"name": "red", "interfaces": [], "x": 1}), "").unwrap_err();
        assert_eq!(e.message, "must hold at least 1 item(s)");
        let e = check(&vr_request(), &json!({"name": "red", "interfaces": [{"mac": "02:00:00:00:00:01"}], "x": 1}), "").unwrap_err();
        assert!(e.message.starts_with("is not a known field (known: "), "{}", e.message);
    }
}
