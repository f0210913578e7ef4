//! GET requests to pearld over its Unix socket or its TCP address, one connection each.

use crate::failure::{Failure, DAEMON, NOT_FOUND};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

pub const DEFAULT_SOCKET: &str = "/run/pearl/pearl.sock";
const TIMEOUT: Duration = Duration::from_secs(10);
const HINT: &str =
    "Is pearld running? Point at its socket with --socket PATH or at its TCP API with --url http://HOST:PORT";

pub enum Target {
    Unix(String),
    /// `HOST:PORT`.
    Tcp(String),
}

impl Target {
    /// `http://HOST:PORT` (a trailing `/` is allowed).
    pub fn from_url(url: &str) -> Result<Target, Failure> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| Failure::usage(format!("--url {url:?}: use http://HOST:PORT (https is not served)")))?;
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.is_empty()
            || authority.contains('/')
            || authority.rsplit_once(':').is_none_or(|(_, p)| p.parse::<u16>().is_err())
        {
            return Err(Failure::usage(format!("--url {url:?}: use http://HOST:PORT, e.g. http://127.0.0.1:8080")));
        }
        Ok(Target::Tcp(authority.to_string()))
    }

    fn describe(&self) -> String {
        match self {
            Target::Unix(p) => p.clone(),
            Target::Tcp(a) => format!("http://{a}"),
        }
    }

    /// GETs `path` and returns its JSON. A 404 is `NOT_FOUND` with pearld's message; any other
    /// refusal, or no answer, is `DAEMON`.
    pub fn get(&self, path: &str) -> Result<Value, Failure> {
        let unreachable = |e: std::io::Error| {
            let extra = if e.kind() == std::io::ErrorKind::PermissionDenied {
                " (run as root or as a user allowed to open it)"
            } else {
                ""
            };
            Failure::new(DAEMON, format!("cannot reach pearld at {}: {e}{extra}. {HINT}", self.describe()))
        };
        let host = match self {
            Target::Unix(_) => "pearld",
            Target::Tcp(a) => a.as_str(),
        };
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\nConnection: close\r\n\r\n");
        let mut reply = Vec::new();
        match self {
            Target::Unix(p) => {
                let mut s = UnixStream::connect(p).map_err(unreachable)?;
                s.set_read_timeout(Some(TIMEOUT)).map_err(unreachable)?;
                s.write_all(request.as_bytes()).and_then(|_| s.read_to_end(&mut reply)).map_err(unreachable)?;
            }
            Target::Tcp(a) => {
                let addrs: Vec<_> = a.to_socket_addrs().map_err(unreachable)?.collect();
                let mut s =
                    addrs.iter().find_map(|addr| TcpStream::connect_timeout(addr, TIMEOUT).ok()).ok_or_else(|| {
                        unreachable(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused"))
                    })?;
                s.set_read_timeout(Some(TIMEOUT)).map_err(unreachable)?;
                s.write_all(request.as_bytes()).and_then(|_| s.read_to_end(&mut reply)).map_err(unreachable)?;
            }
        }
        parse_reply(&reply, path)
    }
}

fn parse_reply(reply: &[u8], path: &str) -> Result<Value, Failure> {
    let malformed = || Failure::new(DAEMON, format!("pearld sent a malformed answer to GET {path}"));
    let split = reply.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(malformed)?;
    let head = String::from_utf8_lossy(&reply[..split]);
    let body = &reply[split + 4..];
    let status: u16 = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(malformed)?;
    let json: Option<Value> = serde_json::from_slice(body).ok();
    if status == 200 {
        return json.ok_or_else(|| Failure::new(DAEMON, format!("pearld answered GET {path} with invalid JSON")));
    }
    let error = json.as_ref().and_then(|v| v["error"].as_str()).unwrap_or("no reason given").to_string();
    let field = json.as_ref().and_then(|v| v["field"].as_str()).map(|f| format!(" (field {f})")).unwrap_or_default();
    let code = if status == 404 { NOT_FOUND } else { DAEMON };
    Err(Failure::new(code, format!("pearld refused GET {path} ({status}): {error}{field}")))
}

/// A path segment with everything but unreserved characters percent-encoded.
pub fn segment(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_http_host_port() {
        assert!(matches!(Target::from_url("http://127.0.0.1:8080/"), Ok(Target::Tcp(a)) if a == "127.0.0.1:8080"));
        assert!(matches!(Target::from_url("http://[::1]:80"), Ok(Target::Tcp(a)) if a == "[::1]:80"));
        for bad in ["127.0.0.1:80", "https://h:1", "http://h", "http://h:x", "http://h:1/v1"] {
            assert_eq!(Target::from_url(bad).err().map(|f| f.code), Some(crate::failure::USAGE), "{bad}");
        }
    }

    #[test]
    fn refusals_carry_pearlds_reason_and_404_means_not_found() {
        let r = b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{\"error\":\"no VR named \\\"x\\\"\",\"field\":\"name\"}";
        let f = parse_reply(r, "/v1/vrs/x").unwrap_err();
        assert_eq!(f.code, NOT_FOUND);
        assert!(f.message.contains("no VR named \"x\"") && f.message.contains("(field name)"), "{}", f.message);
        assert_eq!(parse_reply(b"HTTP/1.1 400 Bad\r\n\r\n{}", "/x").unwrap_err().code, DAEMON);
        assert_eq!(parse_reply(b"garbage", "/x").unwrap_err().code, DAEMON);
        assert_eq!(parse_reply(b"HTTP/1.1 200 OK\r\n\r\n{\"a\":1}", "/x").unwrap()["a"], 1);
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(segment("red-1_x"), "red-1_x");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
    }
}
