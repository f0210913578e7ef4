//! `resources:` amounts by name (the names of pearl-control's `RESOURCES`), each present only
//! when set.

use super::amounts::{Amounts, AmountsSchema};
use pearl_control::RESOURCES;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;

pub type ResourceAmounts = Amounts<ResourceNames>;

impl From<&pearl_control::Resources> for ResourceAmounts {
    fn from(r: &pearl_control::Resources) -> ResourceAmounts {
        RESOURCES.iter().zip(r.0).filter_map(|(name, amount)| Some((*name, amount?))).collect()
    }
}

/// Only the resources' names, each optional.
pub enum ResourceNames {}

impl AmountsSchema for ResourceNames {
    const NAME: &'static str = "ResourceAmounts";

    fn object_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "object", "additionalProperties": false, "properties": by_resource(generator.subschema_for::<u64>())})
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
        json_schema!({"type": "object", "additionalProperties": false, "required": RESOURCES, "properties": by_resource(generator.subschema_for::<T>())})
    }
}

/// `amount`'s schema under every resource's name.
fn by_resource(amount: Schema) -> Map<String, Value> {
    let amount = Value::from(amount);
    RESOURCES.iter().map(|r| (r.to_string(), amount.clone())).collect()
}
