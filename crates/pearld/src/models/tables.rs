//! A plugin VR's tables (`/v1/vrs/{name}/tables`), keys and values in hexadecimal.

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tables {
    pub tables: Vec<TableSummary>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TableSummary {
    pub name: String,
    pub max_entries: usize,
    pub entries: usize,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TableEntries<'a> {
    pub table: &'a str,
    pub max_entries: usize,
    pub entries: Vec<KeyValue>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

// What setting an entry answers.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TableEntry<'a> {
    pub table: &'a str,
    pub key: String,
    pub value: String,
}
