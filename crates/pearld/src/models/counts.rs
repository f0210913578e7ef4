//! Counters by reason: an object of counts. The reasons are the data plane's and may grow, so the
//! schema names none.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};
use std::borrow::Cow;
use std::collections::BTreeMap;

pub struct Counts(pub Vec<(&'static str, u64)>);

impl Serialize for Counts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(reason, n)| (reason, n)))
    }
}

impl JsonSchema for Counts {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Counts".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        BTreeMap::<String, u64>::json_schema(generator)
    }
}
