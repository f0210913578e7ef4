//! Fuzzes the API's JSON body validation (`crates/pearld/src/validate.rs`): a schema and a
//! value, both from the input (split at its first NUL byte), are checked without a panic, and a
//! refusal names where in the value it is. Compiled in by path: pearld is a binary crate.

#![no_main]

#[path = "../../crates/pearld/src/validate.rs"]
mod validate;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(2, |&b| b == 0);
    let (Some(schema), Some(value)) = (parts.next(), parts.next()) else { return };
    let (Ok(schema), Ok(value)) = (serde_json::from_slice::<Value>(schema), serde_json::from_slice::<Value>(value)) else {
        return;
    };
    if let Err(e) = validate::check(&schema, &value, "body") {
        assert!(e.field.starts_with("body") && !e.message.is_empty(), "{e:?}");
    }
});
