//! `resources:` amounts by name (the names of pearl-control's `RESOURCES`), each present only
//! when set.

use pearl_control::RESOURCES;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;

pub struct ResourceAmounts(pub Vec<(&'static str, u64)>);

impl From<&pearl_control::Resources> for ResourceAmounts {
    fn from(r: &pearl_control::Resources) -> ResourceAmounts {
        ResourceAmounts(RESOURCES.iter().zip(r.0).filter_map(|(name, amount)| Some((*name, amount?))).collect())
    }
}

impl Serialize for ResourceAmounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(name, amount)| (name, amount)))
    }
}

impl JsonSchema for ResourceAmounts {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "ResourceAmounts".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let amount = Value::from(generator.subschema_for::<u64>());
        let properties: Map<String, Value> = RESOURCES.iter().map(|r| (r.to_string(), amount.clone())).collect();
        json_schema!({"type": "object", "additionalProperties": false, "properties": properties})
    }
}

/// An amount of every resource, by name: what the node has, grants or has free.
pub struct ResourceTable<T>(pub Vec<(&'static str, T)>);

impl<T: Serialize> Serialize for ResourceTable<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(name, amount)| (name, amount)))
    }
}

impl<T: JsonSchema> JsonSchema for ResourceTable<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("ResourceTable_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let amount = Value::from(generator.subschema_for::<T>());
        let properties: Map<String, Value> = RESOURCES.iter().map(|r| (r.to_string(), amount.clone())).collect();
        json_schema!({"type": "object", "additionalProperties": false, "required": RESOURCES, "properties": properties})
    }
}
