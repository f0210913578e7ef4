//! A response type's JSON Schema in the OpenAPI 3.0 dialect, with every subschema inlined: the
//! document is read by clients that do not follow `$ref`s well, and by `validate`, which does not
//! follow them at all.

use schemars::generate::{Contract, SchemaSettings};
use schemars::transform::{transform_subschemas, Transform};
use schemars::{JsonSchema, Schema};
use serde_json::Value;

pub fn schema_of<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::openapi3();
    settings.inline_subschemas = true;
    // The schema of what pearld sends: a field skipped when unset is not required.
    settings.contract = Contract::Serialize;
    settings.meta_schema = None;
    settings.transforms.push(Box::new(AbsentRatherThanNull));
    let mut schema = settings.into_generator().into_root_schema_for::<T>();
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
