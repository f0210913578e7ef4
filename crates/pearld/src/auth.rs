//! Who may call what. Without `api.admin_token` the API is open (its Unix socket is root's).
//! With one, every request but `GET /healthz` and `GET /openapi.json` carries a token, as
//! `Authorization: Bearer TOKEN` or, for a browser opening the dashboard, as the password of
//! HTTP Basic (the user name is ignored). The admin token may do everything. A VR's token
//! reaches that VR alone: it sees itself in `/v1/vrs` and `/v1/stats`, reads and changes its
//! routes, neighbours, filters and queues, and captures its traffic; it may not create or
//! delete VRs, read or replace the configuration, read `/metrics` (every VR's counters), or
//! set its own limits, control plane, plugin, token, imports from other VRs, NAT reservations,
//! placement or resources (the operator's share of the machine, files on the host, a way to probe other
//! tokens, other VRs' routes, the node's addresses, its fast-path slots). Another VR is answered 404 without its name,
//! whether it exists or not, so that names do not leak.

use crate::access::Access;
use crate::api_error::ApiError;
use crate::ctx::Ctx;
use crate::http::Request;
use crate::router::{Call, Caller, Endpoint, Guard};
use pearl_control::{Config, Holder};
use serde_json::Value;

/// Keys of a VR its owner may not set (see the module comment).
const ADMIN_KEYS: &[&str] = &["limits", "control_plane", "token", "leak", "nat", "placement", "resources", "plugin"];

const HOW: &str = "send `Authorization: Bearer TOKEN` with the admin token or your VR's token \
                   (pearlctl: --token TOKEN or PEARL_TOKEN)";

/// Whether the API asks for tokens at all.
pub fn enabled(ctx: &Ctx) -> bool {
    ctx.node.access().admin.is_some()
}

impl Guard for Ctx {
    fn caller(&self, e: &Endpoint<Ctx>, r: &Request) -> Result<Caller, ApiError> {
        // Before the document: a change in progress holds it, and health checks must not wait.
        if e.access == Access::Public {
            return Ok(Caller::Anyone);
        }
        let access = self.node.access();
        if access.admin.is_none() {
            return Ok(Caller::Admin);
        }
        let unauthorized = |why: &str| ApiError::new(401, Some("Authorization"), format!("{why}; {HOW}"));
        let token = credentials(r).map_err(unauthorized)?.ok_or_else(|| unauthorized("no token"))?;
        match access.holder(&token) {
            Some(Holder::Admin) => Ok(Caller::Admin),
            Some(Holder::Owner(vr)) if !self.owner_rates.admit(vr, access.owner_rate) => Err(ApiError::new(
                429,
                Some("Authorization"),
                format!(
                    "this VR's token is over its {} requests per second (api.owner_requests_per_second); retry in a second",
                    access.owner_rate
                ),
            )),
            Some(Holder::Owner(vr)) => Ok(Caller::Owner(vr.to_string())),
            None => Err(unauthorized("the token is neither the admin token nor a VR's")),
        }
    }

    fn permit(&self, e: &Endpoint<Ctx>, call: &Call) -> Result<(), ApiError> {
        let Caller::Owner(own) = call.caller() else { return Ok(()) };
        match e.access {
            Access::Public | Access::Scoped => Ok(()),
            Access::Admin => Err(ApiError::new(
                403,
                Some("Authorization"),
                format!(
                    "{} {} needs the admin token; a VR's token reaches its own VR only (GET and PATCH \
                     /v1/vrs/NAME, its routes, filters, queues and capture, /v1/vrs, /v1/stats)",
                    e.method, e.path
                ),
            )),
            Access::Owner if call.param("name").as_str() != Some(own.as_str()) => {
                Err(ApiError::not_found("name", "no VR of that name is visible to this token"))
            }
            Access::Owner => owner_may(&self.node.config(), own, e, call.body()),
        }
    }

    fn challenge(&self, e: &Endpoint<Ctx>) -> String {
        // A browser asks for Basic credentials and then sends them with the page's own requests.
        if e.path == "/" { "Basic realm=\"PEARL\", charset=\"UTF-8\"" } else { "Bearer realm=\"PEARL\"" }.to_string()
    }
}

/// The token of an `Authorization` header, if there is one.
fn credentials(r: &Request) -> Result<Option<String>, &'static str> {
    let Some(h) = r.header("authorization") else { return Ok(None) };
    let (scheme, value) = h.trim().split_once(' ').ok_or("the Authorization header has no token")?;
    if scheme.eq_ignore_ascii_case("bearer") {
        return Ok(Some(value.trim().to_string()));
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let pair = base64(value.trim()).and_then(|b| String::from_utf8(b).ok()).ok_or("Basic credentials are not base64")?;
        return Ok(Some(pair.split_once(':').map_or(pair.as_str(), |(_, password)| password).to_string()));
    }
    Err("the Authorization scheme is neither Bearer nor Basic")
}

fn base64(text: &str) -> Option<Vec<u8>> {
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for c in text.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6 | u32::from(v)) & 0xff_ffff;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// What an owner's change to its own VR may hold: no admin keys, and classifier rules that
/// cannot claim another VR's frames.
fn owner_may(config: &Config, own: &str, e: &Endpoint<Ctx>, body: &Value) -> Result<(), ApiError> {
    let rules: Vec<&Value> = match (e.method, e.path) {
        ("PATCH", "/v1/vrs/{name}") => {
            if let Some(k) = body.as_object().into_iter().flat_map(|o| o.keys()).find(|k| ADMIN_KEYS.contains(&k.as_str())) {
                return Err(ApiError::new(403, Some(k), format!("{k} is set by the admin token, not a VR's")));
            }
            body["match"].as_array().into_iter().flatten().collect()
        }
        ("POST", "/v1/vrs/{name}/filters") => vec![body],
        _ => Vec::new(),
    };
    rules.into_iter().try_for_each(|r| confined(config, own, r))
}

/// A rule is the owner's to make if it names, as `in_port`, a port no other VR sits on, or as
/// `eth_dst`, one of the VR's own MACs: otherwise it could take frames meant for another VR.
fn confined(config: &Config, own: &str, rule: &Value) -> Result<(), ApiError> {
    let Some(vr) = config.vrs.iter().find(|v| v.name == own) else { return Ok(()) };
    let alone: Vec<&str> = vr
        .interfaces
        .iter()
        .map(|i| i.port)
        .filter(|p| config.vrs.iter().filter(|v| v.name != own).all(|v| v.interfaces.iter().all(|i| i.port != *p)))
        .map(|p| config.ports[p].name.as_str())
        .collect();
    let port_ok = rule["in_port"].as_str().is_some_and(|p| alone.contains(&p));
    let mac_ok =
        rule["eth_dst"].as_str().is_some_and(|m| vr.interfaces.iter().any(|i| pearl_control::mac_text(i.mac).eq_ignore_ascii_case(m)));
    if port_ok || mac_ok {
        return Ok(());
    }
    Err(ApiError::new(
        403,
        Some("in_port"),
        format!(
            "a VR's token may add rules that name in_port as a port only this VR sits on ({}) or eth_dst as one \
             of its MACs, so that they cannot take another VR's frames",
            if alone.is_empty() { "it has none".to_string() } else { alone.join(", ") }
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::ENDPOINTS;

    fn rule_of(method: &str, path: &str) -> Access {
        ENDPOINTS.iter().find(|e| e.method == method && e.path == path).expect("endpoint").access
    }

    #[test]
    fn every_endpoint_has_the_rule_the_module_comment_states() {
        assert_eq!(rule_of("GET", "/healthz"), Access::Public);
        assert_eq!(rule_of("GET", "/v1/stats"), Access::Scoped);
        assert_eq!(rule_of("GET", "/"), Access::Scoped);
        for (m, p) in [
            ("GET", "/metrics"),
            ("GET", "/v1/config"),
            ("PUT", "/v1/config"),
            ("POST", "/v1/vrs"),
            ("DELETE", "/v1/vrs/{name}"),
            ("PUT", "/v1/vrs/{name}/limits"),
            ("GET", "/v1/errors"),
        ] {
            assert_eq!(rule_of(m, p), Access::Admin, "{m} {p}");
        }
        for (m, p) in [
            ("GET", "/v1/vrs/{name}"),
            ("PATCH", "/v1/vrs/{name}"),
            ("POST", "/v1/vrs/{name}/routes"),
            ("DELETE", "/v1/vrs/{name}/filters/{index}"),
            ("PUT", "/v1/vrs/{name}/queues"),
            ("GET", "/v1/vrs/{name}/fib"),
            ("GET", "/v1/vrs/{name}/fib/lookup"),
        ] {
            assert_eq!(rule_of(m, p), Access::Owner, "{m} {p}");
        }
    }

    fn with_auth(value: &str) -> Request {
        Request {
            method: "GET".into(),
            path: "/".into(),
            query: String::new(),
            headers: vec![("authorization".into(), value.into())],
            body: vec![],
        }
    }

    #[test]
    fn tokens_come_as_bearer_or_as_the_basic_password() {
        assert_eq!(credentials(&with_auth("Bearer abc")).unwrap().as_deref(), Some("abc"));
        // base64("x:the-token")
        assert_eq!(credentials(&with_auth("Basic eDp0aGUtdG9rZW4=")).unwrap().as_deref(), Some("the-token"));
        assert!(credentials(&with_auth("Basic !!!")).is_err());
        assert!(credentials(&with_auth("Digest abc")).is_err());
        assert!(credentials(&with_auth("Bearer")).is_err());
        let none = Request { method: "GET".into(), path: "/".into(), query: String::new(), headers: vec![], body: vec![] };
        assert_eq!(credentials(&none).unwrap(), None);
    }

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64("aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64("").unwrap(), b"");
    }

    #[test]
    fn an_owner_rule_must_stay_on_its_own_ports_or_macs() {
        let config = pearl_control::parse_config(
            r#"
ports: [{name: p0, interface: a}, {name: p1, interface: b}, {name: p2, interface: c}]
vrs:
  - name: red
    interfaces:
      - {name: eth0, port: p0, mac: "02:00:00:00:01:00"}
      - {name: eth1, port: p2, mac: "02:00:00:00:01:01"}
  - name: blue
    interfaces: [{name: eth0, port: p1, mac: "02:00:00:00:02:00"}, {name: eth1, port: p2, mac: "02:00:00:00:02:01"}]
"#,
        )
        .unwrap();
        let ok = |v: Value| confined(&config, "red", &v).is_ok();
        assert!(ok(serde_json::json!({"in_port": "p0", "udp_dst": 4000})));
        assert!(ok(serde_json::json!({"eth_dst": "02:00:00:00:01:01", "udp_dst": 4000})));
        assert!(!ok(serde_json::json!({"udp_dst": 4000})), "any port");
        assert!(!ok(serde_json::json!({"in_port": "p2", "udp_dst": 4000})), "a port blue sits on too");
        assert!(!ok(serde_json::json!({"in_port": "p1"})), "blue's port");
        assert!(!ok(serde_json::json!({"eth_dst": "02:00:00:00:02:00"})), "blue's MAC");
    }
}
