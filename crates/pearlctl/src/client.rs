//! Requests to pearld over its Unix socket or its TCP address, one connection each, carrying
//! the caller's token when it has one. A refusal becomes a `Failure` that passes pearld's
//! message and field on: 404 is `NOT_FOUND`, any other refusal or no answer is `DAEMON`.

use crate::failure::{Failure, DAEMON, NOT_FOUND};
use crate::tls::TlsTarget;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

pub const DEFAULT_SOCKET: &str = "/run/pearl/pearl.sock";
const TIMEOUT: Duration = Duration::from_secs(10);
const HINT: &str = "Is pearld running? Point at its socket with --socket PATH or at its TCP API with --url https://HOST:PORT";

pub enum Target {
    Unix(String),
    /// `HOST:PORT`, in TLS when the URL is `https`.
    Tcp(String, Option<TlsTarget>),
}

impl Target {
    /// `https://HOST:PORT` or `http://HOST:PORT` (a trailing `/` is allowed); `ca` is the PEM
    /// file that vouches for an https server's certificate.
    pub fn from_url(url: &str, ca: Option<&str>) -> Result<Target, Failure> {
        let (rest, tls) = match (url.strip_prefix("https://"), url.strip_prefix("http://")) {
            (Some(rest), _) => (rest, true),
            (None, Some(rest)) => (rest, false),
            _ => return Err(Failure::usage(format!("--url {url:?}: use https://HOST:PORT or http://HOST:PORT"))),
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        let Some((host, _)) =
            authority.rsplit_once(':').filter(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok() && !authority.contains('/'))
        else {
            return Err(Failure::usage(format!("--url {url:?}: use https://HOST:PORT, e.g. https://127.0.0.1:8443")));
        };
        if ca.is_some() && !tls {
            return Err(Failure::usage(format!("--ca: {url} is not https")));
        }
        let tls = if tls { Some(TlsTarget::new(host, ca)?) } else { None };
        Ok(Target::Tcp(authority.to_string(), tls))
    }

    fn describe(&self) -> String {
        match self {
            Target::Unix(p) => p.clone(),
            Target::Tcp(a, Some(_)) => format!("https://{a}"),
            Target::Tcp(a, None) => format!("http://{a}"),
        }
    }
}

pub struct Client {
    pub target: Target,
    pub token: Option<String>,
}

/// A successful answer: its media type and body.
pub struct Reply {
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Client {
    pub fn new(target: Target, token: Option<String>) -> Client {
        Client { target, token }
    }

    pub fn get(&self, path: &str) -> Result<Value, Failure> {
        self.call("GET", path, None)
    }

    /// Sends `method path` with `body` as JSON; returns the JSON answer.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, Failure> {
        let reply = self.fetch(method, path, body, Some(TIMEOUT))?;
        serde_json::from_slice(&reply.body).map_err(|_| Failure::new(DAEMON, format!("pearld answered {method} {path} with invalid JSON")))
    }

    /// Sends a request and returns a 2xx answer as it came; `timeout` bounds each read.
    pub fn fetch(&self, method: &str, path: &str, body: Option<&Value>, timeout: Option<Duration>) -> Result<Reply, Failure> {
        let unreachable = |e: std::io::Error| {
            let extra =
                if e.kind() == std::io::ErrorKind::PermissionDenied { " (run as root or as a user allowed to open it)" } else { "" };
            Failure::new(DAEMON, format!("cannot reach pearld at {}: {e}{extra}. {HINT}", self.target.describe()))
        };
        let host = match &self.target {
            Target::Unix(_) => "pearld",
            Target::Tcp(a, _) => a.as_str(),
        };
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nAccept: */*\r\nConnection: close\r\n");
        if let Some(t) = &self.token {
            request += &format!("Authorization: Bearer {t}\r\n");
        }
        let body = body.map(Value::to_string).unwrap_or_default();
        if method != "GET" {
            request += &format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len());
        }
        request += "\r\n";
        request += &body;
        let mut reply = Vec::new();
        match &self.target {
            Target::Unix(p) => {
                let mut s = UnixStream::connect(p).map_err(unreachable)?;
                s.set_read_timeout(timeout).map_err(unreachable)?;
                s.write_all(request.as_bytes()).and_then(|_| s.read_to_end(&mut reply)).map_err(unreachable)?;
            }
            Target::Tcp(a, tls) => {
                let addrs: Vec<_> = a.to_socket_addrs().map_err(unreachable)?.collect();
                let mut s = addrs
                    .iter()
                    .find_map(|addr| TcpStream::connect_timeout(addr, TIMEOUT).ok())
                    .ok_or_else(|| unreachable(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused")))?;
                s.set_read_timeout(timeout).map_err(unreachable)?;
                match tls {
                    Some(tls) => tls.exchange(s, request.as_bytes(), &mut reply),
                    None => s.write_all(request.as_bytes()).and_then(|_| s.read_to_end(&mut reply).map(drop)),
                }
                .map_err(unreachable)?;
            }
        }
        parse_reply(&reply, &format!("{method} {path}"))
    }
}

fn parse_reply(reply: &[u8], what: &str) -> Result<Reply, Failure> {
    let malformed = || Failure::new(DAEMON, format!("pearld sent a malformed answer to {what}"));
    let split = reply.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(malformed)?;
    let head = String::from_utf8_lossy(&reply[..split]);
    let mut body = &reply[split + 4..];
    let status: u16 = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(malformed)?;
    let header = |name: &str| {
        head.lines().filter_map(|l| l.split_once(':')).find(|(n, _)| n.trim().eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string())
    };
    if let Some(n) = header("content-length").and_then(|n| n.parse::<usize>().ok()) {
        body = body.get(..n).ok_or_else(malformed)?;
    }
    if (200..300).contains(&status) {
        return Ok(Reply { content_type: header("content-type").unwrap_or_default(), body: body.to_vec() });
    }
    Err(refusal(what, status, body))
}

/// pearld's reason, and the field it names when the reason does not already start with it.
fn refusal(what: &str, status: u16, body: &[u8]) -> Failure {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let error = json.as_ref().and_then(|v| v["error"].as_str()).unwrap_or("no reason given");
    let field = json.as_ref().and_then(|v| v["field"].as_str()).map(str::to_string);
    let named = field.as_deref().filter(|f| !error.starts_with(&format!("{f}:"))).map(|f| format!(" (field {f})")).unwrap_or_default();
    let code = if status == 404 { NOT_FOUND } else { DAEMON };
    Failure { field, ..Failure::new(code, format!("pearld refused {what} ({status}): {error}{named}")) }
}

/// A path segment with everything but unreserved characters percent-encoded.
pub fn segment(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_https_or_http_host_port() {
        assert!(matches!(Target::from_url("http://127.0.0.1:8080/", None), Ok(Target::Tcp(a, None)) if a == "127.0.0.1:8080"));
        assert!(matches!(Target::from_url("http://[::1]:80", None), Ok(Target::Tcp(a, None)) if a == "[::1]:80"));
        assert!(matches!(Target::from_url("https://[::1]:443", None), Ok(Target::Tcp(a, Some(_))) if a == "[::1]:443"));
        assert!(matches!(Target::from_url("https://pearl.example:8443/", None), Ok(Target::Tcp(_, Some(_)))));
        for bad in ["127.0.0.1:80", "ftp://h:1", "http://h", "http://h:x", "http://h:1/v1", "https://:1"] {
            assert_eq!(Target::from_url(bad, None).err().map(|f| f.code), Some(crate::failure::USAGE), "{bad}");
        }
        let ca = concat!(env!("CARGO_MANIFEST_DIR"), "/../control/tests/data/tls-a.pem");
        assert!(matches!(Target::from_url("https://127.0.0.1:1", Some(ca)), Ok(Target::Tcp(_, Some(_)))));
        let refused = |url, ca| Target::from_url(url, Some(ca)).err().map(|f| (f.code, f.message)).unwrap();
        assert!(refused("http://127.0.0.1:1", ca).1.contains("is not https"));
        assert!(refused("https://127.0.0.1:1", "/nonexistent.pem").1.starts_with("--ca /nonexistent.pem"));
        let key = concat!(env!("CARGO_MANIFEST_DIR"), "/../control/tests/data/tls-a.key");
        assert!(refused("https://127.0.0.1:1", key).1.contains("holds no certificate"));
    }

    #[test]
    fn refusals_carry_pearlds_reason_and_404_means_not_found() {
        let r = b"HTTP/1.1 404 Not Found\r\n\r\n{\"error\":\"no VR named \\\"x\\\"\",\"field\":\"name\"}";
        let f = parse_reply(r, "GET /v1/vrs/x").err().unwrap();
        assert_eq!(f.code, NOT_FOUND);
        assert!(f.message.contains("no VR named \"x\"") && f.message.contains("(field name)"), "{}", f.message);
        assert_eq!(f.field.as_deref(), Some("name"));
        assert_eq!(parse_reply(b"HTTP/1.1 400 Bad\r\n\r\n{}", "GET /x").err().unwrap().code, DAEMON);
        assert_eq!(parse_reply(b"garbage", "GET /x").err().unwrap().code, DAEMON);
        let ok = parse_reply(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n\r\n{\"a\":1}", "POST /x").unwrap();
        assert_eq!((ok.content_type.as_str(), ok.body.as_slice()), ("application/json", &b"{\"a\":1}"[..]));
    }

    #[test]
    fn a_field_already_leading_the_reason_is_not_repeated() {
        let body = br#"{"error":"vrs[1].routes[0].via: 10.9.9.9 is on none of the VR's interface subnets","field":"vrs[1].routes[0].via"}"#;
        let f = refusal("POST /v1/vrs/red/routes", 422, body);
        assert_eq!(f.code, DAEMON);
        assert!(f.message.ends_with("interface subnets"), "{}", f.message);
    }

    #[test]
    fn the_body_ends_where_content_length_says() {
        let r = parse_reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}trailing", "GET /x").unwrap();
        assert_eq!(r.body, b"{}");
        assert_eq!(parse_reply(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}", "GET /x").err().unwrap().code, DAEMON);
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(segment("red-1_x"), "red-1_x");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
    }
}
