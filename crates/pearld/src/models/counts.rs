//! Counters by reason: an object of counts. The reasons are the data plane's and may grow, so the
//! schema names none.

use super::amounts::{Amounts, AmountsSchema};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use std::collections::BTreeMap;

pub type Counts = Amounts<AnyReason>;

pub enum AnyReason {}

impl AmountsSchema for AnyReason {
    const NAME: &'static str = "Counts";

    fn object_schema(generator: &mut SchemaGenerator) -> Schema {
        BTreeMap::<String, u64>::json_schema(generator)
    }
}
