//! Amounts by name (counters by reason, resources by name), serialised as an object. The kinds
//! differ only in the names their schema allows, so the schema is a type parameter.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};
use std::borrow::Cow;
use std::marker::PhantomData;

/// The JSON Schema of an object of amounts: which names it may hold.
pub trait AmountsSchema {
    const NAME: &'static str;
    fn object_schema(generator: &mut SchemaGenerator) -> Schema;
}

pub struct Amounts<S> {
    pub by_name: Vec<(&'static str, u64)>,
    schema: PhantomData<S>,
}

impl<S> From<Vec<(&'static str, u64)>> for Amounts<S> {
    fn from(by_name: Vec<(&'static str, u64)>) -> Amounts<S> {
        Amounts { by_name, schema: PhantomData }
    }
}

impl<S> FromIterator<(&'static str, u64)> for Amounts<S> {
    fn from_iter<I: IntoIterator<Item = (&'static str, u64)>>(by_name: I) -> Amounts<S> {
        by_name.into_iter().collect::<Vec<_>>().into()
    }
}

impl<S> Serialize for Amounts<S> {
    fn serialize<Z: Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        s.collect_map(self.by_name.iter().map(|(name, n)| (name, n)))
    }
}

impl<S: AmountsSchema> JsonSchema for Amounts<S> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        S::NAME.into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        S::object_schema(generator)
    }
}
