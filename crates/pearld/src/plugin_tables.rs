//! `/v1/vrs/{name}/tables`: a plugin VR's key-value tables, which its program reads and writes
//! as it runs and its owner through these endpoints (SPP's slice memory). Keys and values
//! cross the API as hexadecimal text; a change takes effect at the program's next batch.

use crate::api_error::ApiError;
use crate::ctx::Ctx;
use crate::http::Response;
use crate::models::deleted::Deleted;
use crate::models::tables::{KeyValue, TableEntries, TableEntry, TableSummary, Tables};
use crate::router::Call;
use pearl_plugin::{PluginTables, TableError};

pub fn list(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let tables = tables_of(ctx, call)?;
    let tables = tables.summary().into_iter().map(|(name, max_entries, entries)| TableSummary { name, max_entries, entries }).collect();
    Ok(Response::json(200, &Tables { tables }))
}

pub fn entries(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let (tables, table) = (tables_of(ctx, call)?, table_param(call));
    let entries = tables.entries(table).map_err(refusal)?;
    let max = tables.summary().into_iter().find(|(n, ..)| n == table).map_or(0, |(_, max, _)| max);
    let entries = entries.iter().map(|(k, v)| KeyValue { key: hex(k), value: hex(v) }).collect();
    Ok(Response::json(200, &TableEntries { table, max_entries: max, entries }))
}

pub fn set(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let (tables, table) = (tables_of(ctx, call)?, table_param(call));
    let key = key_param(call)?;
    let text = call.body()["value"].as_str().unwrap_or_default();
    let value = unhex(text)
        .ok_or_else(|| ApiError::new(422, Some("value"), format!("{text:?} is not bytes in hexadecimal (e.g. \"0a000001\")")))?;
    tables.set(table, &key, &value).map_err(refusal)?;
    Ok(Response::json(200, &TableEntry { table, key: hex(&key), value: hex(&value) }))
}

pub fn remove(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let (tables, table) = (tables_of(ctx, call)?, table_param(call));
    let key = key_param(call)?;
    match tables.remove(table, &key).map_err(refusal)? {
        true => Ok(Response::json(200, &Deleted { deleted: format!("{table}/{}", hex(&key)) })),
        false => Err(ApiError::not_found("key", format!("table {table:?} has no key {}", hex(&key)))),
    }
}

fn tables_of(ctx: &Ctx, call: &Call) -> Result<PluginTables, ApiError> {
    let name = call.param("name").as_str().unwrap_or_default();
    let (_, vr) = ctx.node.vr_named(name).ok_or_else(|| ApiError::not_found("name", format!("no VR named {name:?}")))?;
    ctx.node.plugin_tables(vr.id).ok_or_else(|| ApiError::not_found("name", format!("VR {name:?} is not a plugin VR: it has no tables")))
}

fn table_param(call: &Call) -> &str {
    call.param("table").as_str().unwrap_or_default()
}

fn key_param(call: &Call) -> Result<Vec<u8>, ApiError> {
    let text = call.param("key").as_str().unwrap_or_default();
    unhex(text)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| ApiError::bad_request("key", format!("{text:?} is not a key in hexadecimal (e.g. 0a000001)")))
}

fn refusal(e: TableError) -> ApiError {
    match e {
        TableError::NoTable(_) => ApiError::not_found("table", e.to_string()),
        TableError::KeyTooLong(_) => ApiError::new(422, Some("key"), e.to_string()),
        TableError::ValueTooLong(_) => ApiError::new(422, Some("value"), e.to_string()),
        TableError::Full { .. } => ApiError::new(422, Some("key"), e.to_string()),
        TableError::Map { .. } => ApiError::new(422, Some("key"), e.to_string()),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_cross_as_hexadecimal() {
        assert_eq!(hex(&[0x0a, 0, 0, 1]), "0a000001");
        assert_eq!(unhex("0a000001"), Some(vec![0x0a, 0, 0, 1]));
        assert_eq!(unhex("0A"), Some(vec![0x0a]));
        assert_eq!(unhex(""), Some(vec![]));
        for bad in ["0", "zz", "é0", "0a0"] {
            assert_eq!(unhex(bad), None, "{bad:?}");
        }
    }
}
