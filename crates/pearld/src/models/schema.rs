//! A type's JSON Schema in the OpenAPI 3.0 dialect, with every subschema inlined: the document
//! is read by clients that do not follow `$ref`s well, and by `validate`, which does not follow
//! them at all. A response type's schema describes what pearld sends; a grammar type's
//! (`pearl_control::grammar`) what the configuration parser takes.

use crate::validate::GRAMMAR;
use schemars::generate::{Contract, SchemaSettings};
use schemars::transform::{transform_subschemas, Transform};
use schemars::{JsonSchema, Schema};
use serde_json::Value;

pub fn schema_of<T: JsonSchema>() -> Value {
    let mut settings = settings();
    // The schema of what pearld sends: a field skipped when unset is not required.
    settings.contract = Contract::Serialize;
    settings.transforms.push(Box::new(AbsentRatherThanNull));
    root(settings, |g| g.into_root_schema_for::<T>())
}

/// The schema of what the configuration's grammar type `T` takes (a key left out or null alike,
/// as in the YAML file), marked as the parser's to check in depth (`validate::GRAMMAR`).
pub fn grammar_of<T: JsonSchema>() -> Value {
    let mut settings = settings();
    settings.contract = Contract::Deserialize;
    let mut schema = root(settings, |g| g.into_root_schema_for::<T>());
    schema[GRAMMAR] = "checked by the configuration parser, which names the field by its path in the document".into();
    schema
}

fn settings() -> SchemaSettings {
    let mut settings = SchemaSettings::openapi3();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    settings
}

fn root(settings: SchemaSettings, generate: impl FnOnce(schemars::SchemaGenerator) -> Schema) -> Value {
    let mut schema = generate(settings.into_generator());
    // The type's Rust name says nothing to a client.
    schema.remove("title");
    schema.to_value()
}

/// A field skipped when unset is absent, never null, but schemars lets every `Option` be null
/// (`nullable`, and null among an enum's values).
#[derive(Clone)]
struct AbsentRatherThanNull;

impl Transform for AbsentRatherThanNull {
    fn transform(&mut self, schema: &mut Schema) {
        let required: Vec<Value> = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
        if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            for (name, property) in properties.iter_mut() {
                if !required.iter().any(|r| r == name.as_str()) {
                    if let Some(p) = property.as_object_mut() {
                        p.remove("nullable");
                        if let Some(values) = p.get_mut("enum").and_then(Value::as_array_mut) {
                            values.retain(|v| !v.is_null());
                        }
                    }
                }
            }
        }
        transform_subschemas(self, schema);
    }
}
