//! What pearld reads and answers over HTTP, apart from the protocol itself (hyper's, in
//! `serve.rs`): the request and response as the router sees them, the limits on what a client
//! may make pearld hold, and the check of a connection's first head, so that whatever is wrong
//! with a request is answered with a 4xx that names the part at fault, never a crash. The
//! check is hand-written because hyper refuses a malformed head with a bare status line.

use crate::api_error::ApiError;
use serde::Serialize;
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Request line plus headers.
pub const MAX_HEAD: usize = 16 * 1024;
pub const MAX_HEADERS: usize = 64;
pub const MAX_BODY: usize = 1024 * 1024;

#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// As sent, still percent-encoded, so that an encoded '/' cannot split a path segment.
    pub path: String,
    /// What follows the path's '?', still percent-encoded ("" when there is none).
    pub query: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Reads the first request's head, giving up at `deadline` (a client that trickles bytes must
/// not hold its connection for ever), and checks it: hyper answers a malformed head with a bare
/// status, and a client deserves to learn which part is at fault. Returns what was read, head
/// and any body bytes after it, for hyper to read again; `Ok(None)`: the client closed without
/// sending anything. Later requests on a kept-alive connection come from clients that already
/// sent one well-formed head, and are left to hyper alone.
pub async fn read_first_head<C: AsyncRead + Unpin>(c: &mut C, deadline: Instant) -> Result<Option<Vec<u8>>, ApiError> {
    let mut buf = Vec::with_capacity(1024);
    let mut scanned = 0;
    let head_len = loop {
        if let Some((end, _)) = head_end(&buf, scanned) {
            break end;
        }
        // The empty line may straddle two reads: look again at the last two bytes.
        scanned = buf.len().saturating_sub(2);
        if buf.len() > MAX_HEAD {
            return Err(head_too_large(&buf));
        }
        if read_some(c, &mut buf, deadline).await? == 0 {
            if buf.iter().all(|b| b.is_ascii_whitespace()) {
                return Ok(None);
            }
            return Err(ApiError::bad_request("request", "the connection closed before the end of the headers"));
        }
    };
    if head_len > MAX_HEAD {
        return Err(head_too_large(&buf[..head_len]));
    }
    let head = std::str::from_utf8(&buf[..head_len])
        .map_err(|_| ApiError::bad_request("headers", "the request line and headers must be UTF-8"))?;
    check_body_framing(&parse_head(head)?)?;
    Ok(Some(buf))
}

async fn read_some<C: AsyncRead + Unpin>(c: &mut C, buf: &mut Vec<u8>, deadline: Instant) -> Result<usize, ApiError> {
    let mut chunk = [0u8; 4096];
    match tokio::time::timeout_at(deadline.into(), c.read(&mut chunk)).await {
        Ok(Ok(n)) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(n)
        }
        // A reset or refused connection ends the request like a close.
        Ok(Err(_)) => Ok(0),
        Err(_) => Err(ApiError::new(408, Some("request"), "the request did not arrive in time")),
    }
}

/// Where the headers end (the empty line, CRLF or bare LF) and the body starts, looking from
/// `from` on.
fn head_end(buf: &[u8], from: usize) -> Option<(usize, usize)> {
    (from..buf.len()).find_map(|i| {
        if buf[i] != b'\n' {
            return None;
        }
        let rest = &buf[i + 1..];
        // Line endings before the request line are tolerated (RFC 9112 §2.2).
        let at_start = buf[..i].iter().all(|&b| b == b'\r' || b == b'\n');
        if at_start {
            return None;
        }
        match rest {
            [b'\n', ..] => Some((i, i + 2)),
            [b'\r', b'\n', ..] => Some((i, i + 3)),
            _ => None,
        }
    })
}

fn head_too_large(buf: &[u8]) -> ApiError {
    let line_ended = buf.iter().skip_while(|&&b| b == b'\r' || b == b'\n').any(|&b| b == b'\n');
    if line_ended {
        ApiError::new(431, Some("headers"), format!("the request line and headers exceed {MAX_HEAD} bytes"))
    } else {
        ApiError::new(414, Some("target"), format!("the request line exceeds {MAX_HEAD} bytes"))
    }
}

fn parse_head(head: &str) -> Result<Request, ApiError> {
    let mut lines = head.trim_start_matches(['\r', '\n']).split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let line = lines.next().unwrap_or("");
    let parts: Vec<&str> = line.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Err(ApiError::bad_request("request", format!("the request line {line:?} is not METHOD TARGET HTTP/1.1")));
    };
    if method.is_empty() || !method.bytes().all(is_token) {
        return Err(ApiError::bad_request("method", format!("{method:?} is not a method name")));
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(ApiError::bad_request("version", format!("{version:?} is not supported; use HTTP/1.1")));
    }
    let target = absolute_to_origin(target);
    if !target.starts_with('/') || target.bytes().any(|b| b.is_ascii_control() || b > 0x7e) {
        return Err(ApiError::bad_request("target", format!("{target:?} is not a path such as /v1/stats")));
    }
    let target = target.split('#').next().unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers = Vec::new();
    for l in lines {
        if l.starts_with([' ', '\t']) {
            return Err(ApiError::bad_request("headers", "folded header lines are not supported"));
        }
        let Some((name, value)) = l.split_once(':') else {
            return Err(ApiError::bad_request("headers", format!("the header line {l:?} has no ':'")));
        };
        if name.is_empty() || !name.bytes().all(is_token) {
            return Err(ApiError::bad_request("headers", format!("{name:?} is not a header name")));
        }
        let value = value.trim_matches([' ', '\t']);
        if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return Err(ApiError::bad_request(name, "the value holds control characters"));
        }
        headers.push((name.to_ascii_lowercase(), value.to_string()));
        if headers.len() > MAX_HEADERS {
            return Err(ApiError::new(431, Some("headers"), format!("more than {MAX_HEADERS} headers")));
        }
    }
    if version == "HTTP/1.0" && headers.iter().any(|(n, _)| n == "transfer-encoding") {
        return Err(ApiError::bad_request("Transfer-Encoding", "HTTP/1.0 has no chunked bodies; send Content-Length"));
    }
    Ok(Request { method: method.to_string(), path: path.to_string(), query: query.to_string(), headers, body: Vec::new() })
}

/// `http://host:port/path` (what a client talking to a proxy sends) → `/path`.
fn absolute_to_origin(target: &str) -> &str {
    for scheme in ["http://", "https://"] {
        if let Some(rest) = target.strip_prefix(scheme) {
            return rest.find('/').map_or("/", |i| &rest[i..]);
        }
    }
    target
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `%XX` escapes decoded; `None` if an escape is broken or the result is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Whether the body is framed as hyper reads it and within `MAX_BODY` as far as the head tells:
/// refusing a too-large body before it is sent spares both sides the bytes.
pub fn check_body_framing(r: &Request) -> Result<(), ApiError> {
    if let Some(e) = r.header("expect") {
        if !e.eq_ignore_ascii_case("100-continue") {
            return Err(ApiError::new(417, Some("Expect"), format!("{e:?} is not supported")));
        }
    }
    if let Some(te) = r.header("transfer-encoding") {
        // The last coding frames the body; chunked is the only framing HTTP/1.1 knows.
        let last = te.rsplit(',').next().unwrap_or("").trim();
        if !last.eq_ignore_ascii_case("chunked") {
            return Err(ApiError::bad_request("Transfer-Encoding", format!("{te:?} does not end in chunked")));
        }
        return Ok(());
    }
    let mut length = None;
    for (_, v) in r.headers.iter().filter(|(n, _)| n == "content-length") {
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ApiError::bad_request("Content-Length", format!("{v:?} is not a byte count")));
        }
        let n = v.parse::<usize>().unwrap_or(usize::MAX);
        if length.is_some_and(|l| l != n) {
            return Err(ApiError::bad_request("Content-Length", "given twice with different values"));
        }
        length = Some(n);
    }
    if length.unwrap_or(0) > MAX_BODY {
        return Err(too_large());
    }
    Ok(())
}

pub fn too_large() -> ApiError {
    ApiError::new(413, Some("Content-Length"), format!("the body may hold at most {MAX_BODY} bytes"))
}

pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, v: &impl Serialize) -> Response {
        let mut body = serde_json::to_vec(v).expect("a response body always serialises");
        body.push(b'\n');
        Response { status, content_type: "application/json", headers: Vec::new(), body }
    }

    pub fn text(content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response { status: 200, content_type, headers: Vec::new(), body: body.into() }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }

    /// The answer as sent when the connection's first head is refused, before hyper serves it:
    /// head and body, closing the connection after it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        for (n, v) in &self.headers {
            head += &format!("{n}: {v}\r\n");
        }
        head += "\r\n";
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;
    use tokio::io::ReadBuf;

    /// A connection that yields `input` in `chunk`-byte reads.
    struct Fake {
        input: Vec<u8>,
        at: usize,
        chunk: usize,
    }

    impl AsyncRead for Fake {
        fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            let n = buf.remaining().min(self.chunk).min(self.input.len() - self.at);
            buf.put_slice(&self.input[self.at..self.at + n]);
            self.at += n;
            Poll::Ready(Ok(()))
        }
    }
    fn read_in_chunks(bytes: &[u8], chunk: usize) -> Result<Option<Vec<u8>>, ApiError> {
        let mut c = Fake { input: bytes.to_vec(), at: 0, chunk };
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(read_first_head(&mut c, Instant::now() + Duration::from_secs(5)))
    }

    fn read(bytes: &[u8]) -> Result<Option<Vec<u8>>, ApiError> {
        read_in_chunks(bytes, 4096)
    }

    fn refusal(bytes: &[u8]) -> (u16, String) {
        let e = read(bytes).expect_err("must be refused");
        (e.status, e.field.unwrap_or_default())
    }

    #[test]
    fn the_first_head_is_read_whole_whatever_the_read_sizes_and_what_follows_is_kept() {
        let raw = b"POST /v1/vrs?kind=fast HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
        let head = raw.len() - b"hello".len();
        for chunk in [1, 3, 7, 4096] {
            let read = read_in_chunks(raw, chunk).unwrap().unwrap();
            assert!(read.len() >= head && raw.starts_with(&read), "{chunk}: {read:?}");
        }
    }

    #[test]
    fn a_head_parses_into_method_path_query_and_lower_case_headers() {
        let r = parse_head("POST /v1/vrs?kind=fast#top HTTP/1.1\r\nHost: x\r\nX-Token: T\r").unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str(), r.query.as_str()), ("POST", "/v1/vrs", "kind=fast"));
        assert_eq!((r.header("host"), r.header("x-token")), (Some("x"), Some("T")));
    }

    #[test]
    fn bare_line_feeds_leading_blank_lines_and_absolute_targets_are_tolerated() {
        assert!(read(b"\r\nGET http://h:1/v1/stats HTTP/1.0\nA: b\n\n").unwrap().is_some());
        let r = parse_head("\r\nGET http://h:1/v1/stats HTTP/1.0\nA: b").unwrap();
        assert_eq!(r.path, "/v1/stats");
        assert_eq!(r.header("a"), Some("b"));
    }

    #[test]
    fn an_empty_connection_is_no_request() {
        assert!(read(b"").unwrap().is_none());
        assert!(read(b"\r\n").unwrap().is_none());
    }

    #[test]
    fn malformed_requests_are_refused_naming_the_part() {
        let cases: &[(&[u8], u16, &str)] = &[
            (b"GET /x\r\n\r\n", 400, "request"),
            (b"GET  /x HTTP/1.1\r\n\r\n", 400, "request"),
            (b"G(T /x HTTP/1.1\r\n\r\n", 400, "method"),
            (b"GET /x HTTP/2.0\r\n\r\n", 400, "version"),
            (b"GET x HTTP/1.1\r\n\r\n", 400, "target"),
            (b"GET /\x7f HTTP/1.1\r\n\r\n", 400, "target"),
            (b"GET /x HTTP/1.1\r\nno colon\r\n\r\n", 400, "headers"),
            (b"GET /x HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400, "headers"),
            (b"GET /x HTTP/1.1\r\nBad Name: b\r\n\r\n", 400, "headers"),
            (b"GET /x HTTP/1.1\r\nA: \x01\r\n\r\n", 400, "A"),
            (b"GET /x HTTP/1.1\r\n\xff: b\r\n\r\n", 400, "headers"),
            (b"POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "Content-Length"),
            (b"POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, "Content-Length"),
            (b"POST /x HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413, "Content-Length"),
            (b"POST /x HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n", 413, "Content-Length"),
            (b"POST /x HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "Transfer-Encoding"),
            (b"POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "Transfer-Encoding"),
            (b"POST /x HTTP/1.1\r\nExpect: magic\r\n\r\n", 417, "Expect"),
            (b"GET /x HTTP/1.1\r\nHost: x", 400, "request"),
        ];
        for (raw, status, field) in cases {
            assert_eq!(refusal(raw), (*status, field.to_string()), "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn oversized_heads_get_414_or_431() {
        let long_line = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(refusal(long_line.as_bytes()), (414, "target".into()));
        let big_header = format!("GET / HTTP/1.1\r\nA: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(refusal(big_header.as_bytes()), (431, "headers".into()));
        let many: String = (0..=MAX_HEADERS).map(|i| format!("H{i}: v\r\n")).collect();
        assert_eq!(refusal(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes()), (431, "headers".into()));
    }

    #[test]
    fn percent_decoding_refuses_broken_escapes_and_invalid_utf8() {
        assert_eq!(percent_decode("a%2Fb%20").as_deref(), Some("a/b "));
        assert_eq!(percent_decode("%"), None);
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%ff"), None);
    }

    /// A client that connected and sends nothing more.
    struct Stalled;

    impl AsyncRead for Stalled {
        fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, _: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            Poll::Pending
        }
    }
    #[test]
    fn a_client_that_stalls_is_answered_408_at_its_deadline() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let start = Instant::now();
        let e = rt.block_on(read_first_head(&mut Stalled, start + Duration::from_millis(50))).expect_err("must time out");
        assert_eq!((e.status, e.field.as_deref()), (408, Some("request")));
        assert!(start.elapsed() >= Duration::from_millis(50));
    }

    #[test]
    fn a_response_states_its_length_and_closes() {
        let out = Response::json(404, &serde_json::json!({"error": "x"})).with_header("Allow", "GET").to_bytes();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 404 Not Found\r\n"), "{text}");
        assert!(text.contains("Content-Length: 14\r\n") && text.contains("Connection: close\r\nAllow: GET\r\n\r\n"), "{text}");
        assert!(text.ends_with("{\"error\":\"x\"}\n"));
    }
}
