//! Names and amounts of the configuration, each checked with an error that names the field and
//! says what it should be.

use crate::at::At;
use crate::error::ConfigError;

/// A name that names kernel objects too: 1 to `max` letters, digits, '-' or '_'.
pub(crate) fn name_like(s: &str, max: usize, at: At<'_>) -> Result<String, ConfigError> {
    let ok = !s.is_empty() && s.len() <= max && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        return Err(at.err(format!("{s:?}: use 1 to {max} letters, digits, '-' or '_'")));
    }
    Ok(s.to_string())
}

/// An amount of 0 to `max`.
pub(crate) fn uint(v: i64, max: u64, at: At<'_>) -> Result<u64, ConfigError> {
    if v < 0 || v as u64 > max {
        return Err(at.err(format!("{v} is out of range 0..={max}")));
    }
    Ok(v as u64)
}

/// An amount of 1 to `max`.
pub(crate) fn positive(v: i64, max: u64, at: At<'_>) -> Result<u64, ConfigError> {
    let v = uint(v, max, at)?;
    if v == 0 {
        return Err(at.err("must be positive"));
    }
    Ok(v)
}

/// `f` of the field `key` of `at`, if it is given.
pub(crate) fn optional<T: ?Sized, U>(
    value: Option<&T>,
    at: At<'_>,
    key: &str,
    f: impl FnOnce(&T, At<'_>) -> Result<U, ConfigError>,
) -> Result<Option<U>, ConfigError> {
    value.map(|v| f(v, at.key(key))).transpose()
}
