//! Who may use the API: `api: {admin_token}` for everything, and each VR's `token` for that VR
//! alone. Tokens are checked with the rest of the configuration (errors name the field, never
//! the secret) and read back by pearld from the validated document.

use crate::api_tls::{parse_tls, ApiTls};
use crate::at::At;
use crate::error::ConfigError;
use crate::fields::{optional, uint};
use crate::grammar::ApiSpec;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// Short tokens can be guessed; long ones gain nothing and bloat every request.
pub const TOKEN_LENGTH: core::ops::RangeInclusive<usize> = 16..=256;

/// Tokens that travel in a header, a URL or a shell word unquoted: base64, base64url, hex.
fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~+/=".contains(c)
}

fn token(s: &str, at: At<'_>) -> Result<String, ConfigError> {
    if !TOKEN_LENGTH.contains(&s.len()) {
        return Err(at.err(format!(
            "a token has {} to {} characters (e.g. `openssl rand -hex 24`)",
            TOKEN_LENGTH.start(),
            TOKEN_LENGTH.end()
        )));
    }
    if !s.chars().all(token_char) {
        return Err(at.err("a token holds only letters, digits and - . _ ~ + / ="));
    }
    Ok(s.to_string())
}

/// Requests per second a VR's token may make when `api.owner_requests_per_second` is not set.
pub const DEFAULT_OWNER_RATE: u32 = 100;
/// The most `api.owner_requests_per_second` may say.
const MAX_OWNER_RATE: u64 = 1_000_000;

/// `api: {admin_token, owner_requests_per_second, tls}`: the admin token and the TCP API's TLS.
pub(crate) fn parse_api(api: &ApiSpec, at: At<'_>, base_dir: &Path) -> Result<(Option<String>, Option<ApiTls>), ConfigError> {
    let rate_at = at.key("owner_requests_per_second");
    if let Some(rate) = api.owner_requests_per_second.map(|r| uint(r, MAX_OWNER_RATE, rate_at)).transpose()? {
        if rate == 0 {
            return Err(rate_at.err("must be positive"));
        }
    }
    let tls = optional(api.tls.as_ref(), at, "tls", |t, at| parse_tls(t, at, base_dir))?;
    Ok((optional(api.admin_token.as_deref(), at, "admin_token", token)?, tls))
}

/// The tokens met so far, so that each VR's is its own and none is the admin's.
pub(crate) struct Tokens {
    admin: Option<String>,
    /// Token → position of the VR that has it.
    seen: HashMap<String, usize>,
}

impl Tokens {
    pub fn new(admin: Option<String>) -> Tokens {
        Tokens { admin, seen: HashMap::new() }
    }

    /// The `token` of the VR at `position`, whose entry is at `vr`.
    pub fn check_vr(&mut self, t: Option<&str>, vr: At<'_>, position: usize) -> Result<(), ConfigError> {
        let Some(t) = optional(t, vr, "token", token)? else { return Ok(()) };
        self.claim(&t, position)
    }

    /// Token `t`, well-formed, for the VR at `position`.
    pub fn claim(&mut self, t: &str, position: usize) -> Result<(), ConfigError> {
        let field = || format!("vrs[{position}].token");
        if self.admin.is_none() {
            return Err(ConfigError::at(field(), "VR tokens need api.admin_token: without it the API is open to everyone"));
        }
        if self.admin.as_deref() == Some(t) {
            return Err(ConfigError::at(field(), "is the admin token; give each VR a token of its own"));
        }
        if let Some(first) = self.seen.insert(t.to_string(), position) {
            return Err(ConfigError::at(field(), format!("duplicate of vrs[{first}].token; give each VR a token of its own")));
        }
        Ok(())
    }
}

/// The tokens of a validated configuration document.
#[derive(Debug, PartialEq, Eq)]
pub struct Access {
    /// `None`: the API is open (its Unix socket is root's).
    pub admin: Option<String>,
    /// (token, VR name).
    pub owners: Vec<(String, String)>,
    /// How many requests per second each VR's token may make (bursts of as many).
    pub owner_rate: u32,
}

/// Who a token is.
#[derive(Debug, PartialEq, Eq)]
pub enum Holder<'a> {
    Admin,
    Owner(&'a str),
}

impl Access {
    pub fn from_document(doc: &Value) -> Access {
        let owners = doc["vrs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|vr| Some((vr["token"].as_str()?.to_string(), vr["name"].as_str()?.to_string())))
            .collect();
        let owner_rate = doc["api"]["owner_requests_per_second"].as_u64().map_or(DEFAULT_OWNER_RATE, |r| r as u32);
        Access { admin: doc["api"]["admin_token"].as_str().map(str::to_string), owners, owner_rate }
    }

    pub fn holder(&self, token: &str) -> Option<Holder<'_>> {
        if self.admin.as_deref().is_some_and(|a| same(a, token)) {
            return Some(Holder::Admin);
        }
        // Every owner is compared, so the time taken does not tell which one matched.
        let mut found = None;
        for (t, vr) in &self.owners {
            if same(t, token) {
                found = Some(Holder::Owner(vr.as_str()));
            }
        }
        found
    }
}

/// Compares in time that depends on the length only, so a client cannot find a token byte by
/// byte from how long refusals take.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_config_in;
    use std::path::Path;

    const ADMIN: &str = "admin-0123456789abcdef";

    fn doc(api: &str, red_token: &str, blue_token: &str) -> String {
        format!(
            r#"
ports: [{{name: p0, interface: pe0}}]
{api}
vrs:
  - name: red
    interfaces: [{{name: eth0, port: p0, mac: "02:00:00:00:01:00"}}]
    {red_token}
  - name: blue
    interfaces: [{{name: eth0, port: p0, mac: "02:00:00:00:02:00"}}]
    {blue_token}
"#
        )
    }

    fn error(text: &str) -> String {
        parse_config_in(text, Path::new(".")).unwrap_err().to_string()
    }

    #[test]
    fn tokens_are_read_back_from_the_document() {
        let text = doc(&format!("api: {{admin_token: {ADMIN}}}"), "token: red-0123456789abcdef", "");
        parse_config_in(&text, Path::new(".")).unwrap();
        let access = Access::from_document(&crate::document_from_yaml(&text).unwrap());
        assert_eq!(access.holder(ADMIN), Some(Holder::Admin));
        assert_eq!(access.holder("red-0123456789abcdef"), Some(Holder::Owner("red")));
        assert_eq!(access.holder("red-0123456789abcdeX"), None);
        assert_eq!(access.holder(""), None);
        assert_eq!(access.owner_rate, DEFAULT_OWNER_RATE);
    }

    #[test]
    fn bad_tokens_are_refused_naming_the_field_not_the_secret() {
        let admin = format!("api: {{admin_token: {ADMIN}}}");
        let cases = [
            (doc("api: {admin_token: short}", "", ""), "api.admin_token: a token has 16 to 256 characters"),
            (doc("api: {admin_token: \"with space 0123456789\"}", "", ""), "api.admin_token: a token holds only"),
            (doc("api: {admin_tokens: x}", "", ""), "api.admin_tokens: unknown field"),
            (
                doc(&format!("api: {{admin_token: {ADMIN}, owner_requests_per_second: 0}}"), "", ""),
                "api.owner_requests_per_second: must be positive",
            ),
            (doc(&format!("api: {{admin_token: {ADMIN}, owner_requests_per_second: -3}}"), "", ""), "api.owner_requests_per_second"),
            (doc("", "token: red-0123456789abcdef", ""), "vrs[0].token: VR tokens need api.admin_token"),
            (doc(&admin, &format!("token: {ADMIN}"), ""), "vrs[0].token: is the admin token"),
            (doc(&admin, "token: same-0123456789abcdef", "token: same-0123456789abcdef"), "vrs[1].token: duplicate of vrs[0].token"),
            (doc(&admin, "token: 42", ""), "vrs[0].token: expected a string"),
        ];
        for (text, want) in cases {
            let got = error(&text);
            assert!(got.starts_with(want), "{got}\nwanted {want}");
            assert!(!got.contains("0123456789abcdef"), "the error shows a token: {got}");
        }
    }

    #[test]
    fn comparison_is_exact() {
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "abcd"));
    }
}
