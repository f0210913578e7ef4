//! A document's value read into its grammar type, an error naming the path of what does not fit
//! in the configuration's words: `vrs[0].interfaces[1].mtu: expected an integer, not a string`,
//! `vrs[0].mtus: unknown field (expected one of: ...)`, `ports[0].name: is required`.

use crate::at::At;
use crate::error::ConfigError;
use serde::Deserialize;
use serde_json::Value;
use serde_path_to_error::Segment;

/// `value`, found at `at`, as a `T`.
pub(crate) fn read<'de, T: Deserialize<'de>>(value: &'de Value, at: At<'_>) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut path = at.to_string();
        for segment in e.path().iter() {
            match segment {
                Segment::Seq { index } => path.push_str(&format!("[{index}]")),
                Segment::Map { key } | Segment::Enum { variant: key } => push_key(&mut path, key),
                Segment::Unknown => {}
            }
        }
        explain(path, &e.into_inner().to_string())
    })
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// serde's message about the value at `path`, said as the configuration says it (and as the
/// hand-written parser before these types did); a missing key is named by its own path.
fn explain(mut path: String, message: &str) -> ConfigError {
    if let Some(rest) = message.strip_prefix("unknown field `") {
        // The path already ends at the key, read when it failed.
        let (_, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let names = names(expected);
        let said = if names.is_empty() { "unknown field".to_string() } else { format!("unknown field (expected one of: {names})") };
        return ConfigError::at(path, said);
    }
    if let Some(rest) = message.strip_prefix("missing field `") {
        push_key(&mut path, rest.trim_end_matches('`'));
        return ConfigError::at(path, "is required");
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        let (value, expected) = rest.split_once('`').unwrap_or((rest, ""));
        // The key names what is unknown: `unknown driver "x"`, `unknown placement "x"`.
        let what = match path.rsplit('.').next().unwrap_or_default().split('[').next().unwrap_or_default() {
            "code" => "code option",
            key => key,
        }
        .to_string();
        return ConfigError::at(path, format!("unknown {what} {value:?} ({})", names(expected)));
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some((got, expected)) = message.strip_prefix(prefix).and_then(|rest| rest.split_once(", expected ")) {
            return ConfigError::at(path, format!("expected {}, not {}", expected_form(expected), kind(got)));
        }
    }
    ConfigError::at(path, message)
}

/// serde's "expected one of `a`, `b`" (or "`a` or `b`", "`a`") as `a, b`.
fn names(expected: &str) -> String {
    expected.split('`').skip(1).step_by(2).collect::<Vec<_>>().join(", ")
}

/// What a field takes, in the configuration's words.
fn expected_form(expected: &str) -> &str {
    match expected {
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" | "usize" => "an integer",
        "f32" | "f64" => "a number",
        "a boolean" => "true or false",
        "a sequence" => "a list",
        e if e.starts_with("struct ") || e == "a map" => "a mapping",
        e => e,
    }
}

/// The kind of value given, never the value itself: a misplaced token must not be echoed.
fn kind(got: &str) -> &'static str {
    match got.split([' ', '`']).next().unwrap_or_default() {
        "string" => "a string",
        "integer" => "an integer",
        "floating" => "a fraction",
        "boolean" => "true or false",
        "map" => "a mapping",
        "sequence" => "a list",
        "unit" => "null",
        _ => "that",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_read_as_the_configuration_words_them() {
        let e = explain("vrs[0].mtus".into(), "unknown field `mtus`, expected one of `name`, `mtu`");
        assert_eq!(e.to_string(), "vrs[0].mtus: unknown field (expected one of: name, mtu)");
        let e = explain("ports[1]".into(), "missing field `name`");
        assert_eq!(e.to_string(), "ports[1].name: is required");
        let e = explain("ports[1].driver".into(), "unknown variant `dpdk`, expected `tap` or `pcap`");
        assert_eq!(e.to_string(), "ports[1].driver: unknown driver \"dpdk\" (tap, pcap)");
        let e = explain("vrs[0].token".into(), "invalid type: string \"secret-secret\", expected i64");
        assert_eq!(e.to_string(), "vrs[0].token: expected an integer, not a string");
        let e = explain("vrs".into(), "invalid type: map, expected a sequence");
        assert_eq!(e.to_string(), "vrs: expected a list, not a mapping");
    }
}
