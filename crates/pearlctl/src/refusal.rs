//! pearld's refusal as a `Failure` that passes its reason and field on: 404 is `NOT_FOUND`, any
//! other refusal `DAEMON`.

use crate::failure::{Failure, DAEMON, NOT_FOUND};
use serde_json::Value;

/// pearld's reason, and the field it names when the reason does not already start with it.
pub fn refusal(what: &str, status: u16, body: &[u8]) -> Failure {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let error = json.as_ref().and_then(|v| v["error"].as_str()).unwrap_or("no reason given");
    let field = json.as_ref().and_then(|v| v["field"].as_str()).map(str::to_string);
    let named = field.as_deref().filter(|f| !error.starts_with(&format!("{f}:"))).map(|f| format!(" (field {f})")).unwrap_or_default();
    let code = if status == 404 { NOT_FOUND } else { DAEMON };
    Failure { field, ..Failure::new(code, format!("pearld refused {what} ({status}): {error}{named}")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_already_leading_the_reason_is_not_repeated() {
        let body = br#"{"error":"vrs[1].routes[0].via: 10.9.9.9 is on none of the VR's interface subnets","field":"vrs[1].routes[0].via"}"#;
        let f = refusal("POST /v1/vrs/red/routes", 422, body);
        assert_eq!(f.code, DAEMON);
        assert!(f.message.ends_with("interface subnets"), "{}", f.message);
        let f = refusal("GET /x", 400, b"not json");
        assert!(f.message.ends_with("(400): no reason given") && f.field.is_none(), "{}", f.message);
    }
}
