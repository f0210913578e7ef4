//! `pearlctl dashboard [--listen 127.0.0.1:8077]`: serves pearld's dashboard on a loopback
//! address, read-only, through pearlctl's own connection (its socket, or --url, with its token),
//! until interrupted. pearld's API on a TCP port would be open to every local user without
//! `api.admin_token`, and the API can start programs as root (a VR's `control_plane`); this
//! passes on only what the page reads: the page itself, `GET /v1/stats`, `GET /v1/vrs` and a VR
//! page's `GET /v1/vrs/{name}/fib` (its "trace 10 packets", a POST, is refused).

use crate::client::Client;
use crate::failure::Failure;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8077";
/// A request head longer than this is not the dashboard's.
const MAX_HEAD: usize = 8192;

pub fn run(client: &Client, listen: &str) -> Result<(), Failure> {
    let addr: SocketAddr = listen.parse().map_err(|_| Failure::usage(format!("--listen: {listen:?} is not an IP address and port")))?;
    if !addr.ip().is_loopback() {
        return Err(Failure::usage(format!("--listen: {addr} is not a loopback address (the dashboard shows every VR's counters)")));
    }
    // Reachable and allowed first, so a wrong socket or token is told now rather than by a blank page.
    client.get("/v1/stats?limit=1")?;
    let listener = TcpListener::bind(addr).map_err(|e| Failure::new(crate::failure::DAEMON, format!("--listen {addr}: {e}")))?;
    println!("dashboard on http://{}/ (read-only; Ctrl-C stops)", listener.local_addr().map_or(addr, |a| a));
    for stream in listener.incoming().flatten() {
        // One request per connection, in turn: the page polls four times a second.
        let _ = serve(client, stream);
    }
    Ok(())
}

fn serve(client: &Client, mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let Some((method, target)) = request_line(&mut BufReader::new(stream.try_clone()?))? else {
        return answer(&mut stream, "400 Bad Request", "text/plain", b"bad request\n");
    };
    if method != "GET" || !allowed(&target) {
        return answer(&mut stream, "403 Forbidden", "text/plain", b"pearlctl dashboard passes on the dashboard's reads alone\n");
    }
    match client.fetch("GET", &target, None, Some(Duration::from_secs(10))) {
        Ok(reply) => answer(&mut stream, "200 OK", &reply.content_type, &reply.body),
        Err(f) => answer(&mut stream, "502 Bad Gateway", "text/plain", format!("{}\n", f.message).as_bytes()),
    }
}

/// What the page reads: itself, the stats and VR list with any query, and a VR's FIB (a name
/// as VR names are spelled, so that no path escapes it).
fn allowed(target: &str) -> bool {
    let path = target.split('?').next().unwrap_or("");
    let fib_of = path.strip_prefix("/v1/vrs/").and_then(|rest| rest.strip_suffix("/fib"));
    let a_name = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    matches!(path, "/" | "/v1/stats" | "/v1/vrs") || fib_of.is_some_and(a_name)
}

/// The method and target of the request, its head read to the blank line; `None` if it is not one.
fn request_line(r: &mut impl BufRead) -> std::io::Result<Option<(String, String)>> {
    let (mut first, mut read) = (String::new(), 0);
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line)?;
        read += n;
        if n == 0 || read > MAX_HEAD {
            return Ok(None);
        }
        if first.is_empty() {
            first = line;
        } else if line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut words = first.split_whitespace();
    Ok(match (words.next(), words.next(), words.next()) {
        (Some(m), Some(t), Some(v)) if v.starts_with("HTTP/1.") && t.starts_with('/') => Some((m.to_string(), t.to_string())),
        _ => None,
    })
}

fn answer(stream: &mut TcpStream, status: &str, content_type: &str, body: &[u8]) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_pages_reads_pass() {
        for t in ["/", "/v1/stats?sort=busiest&limit=20", "/v1/vrs?name=red", "/v1/vrs/red/fib?family=v6&limit=1"] {
            assert!(allowed(t), "{t}");
        }
        for t in [
            "/v1/config",
            "/metrics",
            "/v1/vrs/red",
            "/v1/stats/../config",
            "//v1/stats",
            "/v1/vrs/../config/fib",
            "/v1/vrs/a/b/fib",
            "/v1/vrs//fib",
            "/v1/vrs/%2e%2e/fib",
        ] {
            assert!(!allowed(t), "{t}");
        }
    }

    #[test]
    fn the_request_line_is_read_through_the_head() {
        let mut r = &b"GET /v1/stats?limit=20 HTTP/1.1\r\nHost: x\r\n\r\n"[..];
        assert_eq!(request_line(&mut r).unwrap(), Some(("GET".into(), "/v1/stats?limit=20".into())));
        let mut r = &b"GET /v1/stats\r\n\r\n"[..];
        assert_eq!(request_line(&mut r).unwrap(), None, "not HTTP/1");
        let mut r = &b"GET / HTTP/1.1\r\nHost: x\r\n"[..];
        assert_eq!(request_line(&mut r).unwrap(), None, "cut short");
    }
}
