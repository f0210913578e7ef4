//! Requests to pearld, one connection each, carrying the caller's token when it has one. The
//! HTTP is hyper's client, as pearld's server is hyper's: framing (Content-Length or chunked),
//! answers cut short and malformed heads are a maintained library's job rather than a
//! hand-written parser's. An answer is read whole before it is returned; a refusal becomes a
//! `Failure` (`refusal.rs`).

use crate::connect::connect;
use crate::failure::{Failure, DAEMON};
use crate::refusal::refusal;
use crate::target::Target;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{ACCEPT, AUTHORIZATION, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use hyper::{Request, StatusCode};
use serde_json::Value;
use std::io;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(10);
const HINT: &str = "Is pearld running? Point at its socket with --socket PATH (or PEARL_SOCKET) or at its TCP API with --url https://HOST:PORT (or PEARL_URL)";

pub struct Client {
    target: Target,
    token: Option<String>,
}

/// A successful answer: its media type and body.
pub struct Reply {
    pub content_type: String,
    pub body: Vec<u8>,
}

/// Why no whole answer came.
enum Broken {
    Unreachable(io::Error),
    TimedOut(Duration),
    /// Not HTTP, or cut short.
    Malformed,
}

impl Client {
    pub fn new(target: Target, token: Option<String>) -> Client {
        Client { target, token }
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    pub fn get(&self, path: &str) -> Result<Value, Failure> {
        self.call("GET", path, None)
    }

    /// Sends `method path` with `body` as JSON; returns the JSON answer.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, Failure> {
        let reply = self.fetch(method, path, body, Some(TIMEOUT))?;
        serde_json::from_slice(&reply.body).map_err(|_| Failure::new(DAEMON, format!("pearld answered {method} {path} with invalid JSON")))
    }

    /// Sends a request and returns a 2xx answer as it came. `timeout` bounds the whole exchange;
    /// without one only connecting is bounded (by 10 s).
    pub fn fetch(&self, method: &str, path: &str, body: Option<&Value>, timeout: Option<Duration>) -> Result<Reply, Failure> {
        let what = format!("{method} {path}");
        let request = self.request(method, path, body)?;
        // Current-thread: pearlctl waits on one request at a time, so worker threads would only
        // cost their start. One runtime per request: dropping it ends the connection's task.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
        let answer = runtime.map_err(Broken::Unreachable).and_then(|r| {
            r.block_on(async {
                match timeout {
                    Some(t) => tokio::time::timeout(t, exchange(&self.target, request)).await.unwrap_or(Err(Broken::TimedOut(t))),
                    None => exchange(&self.target, request).await,
                }
            })
        });
        let (status, content_type, body) = answer.map_err(|b| self.failure(b, &what))?;
        if status.is_success() {
            return Ok(Reply { content_type, body });
        }
        Err(refusal(&what, status.as_u16(), &body))
    }

    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Request<Full<Bytes>>, Failure> {
        let body = body.map(Value::to_string).unwrap_or_default();
        // `Connection: close`: one request per connection, so pearld frees its slot at once.
        let mut request =
            Request::builder().method(method).uri(path).header(HOST, self.target.host()).header(ACCEPT, "*/*").header(CONNECTION, "close");
        if let Some(t) = &self.token {
            request = request.header(AUTHORIZATION, format!("Bearer {t}"));
        }
        if method != "GET" {
            request = request.header(CONTENT_TYPE, "application/json").header(CONTENT_LENGTH, body.len());
        }
        request.body(Full::new(Bytes::from(body))).map_err(|e| Failure::usage(format!("cannot send {method} {path}: {e}")))
    }

    fn failure(&self, broken: Broken, what: &str) -> Failure {
        let e = match broken {
            Broken::Malformed => return Failure::new(DAEMON, format!("pearld sent a malformed answer to {what}")),
            Broken::TimedOut(t) => io::Error::new(io::ErrorKind::TimedOut, format!("no answer within {t:?}")),
            Broken::Unreachable(e) => e,
        };
        let extra = if e.kind() == io::ErrorKind::PermissionDenied { " (run as root or as a user allowed to open it)" } else { "" };
        Failure::new(DAEMON, format!("cannot reach pearld at {}: {e}{extra}. {HINT}", self.target.describe()))
    }
}

/// Connects, sends, and reads the answer whole: its status, media type and body.
async fn exchange(target: &Target, request: Request<Full<Bytes>>) -> Result<(StatusCode, String, Vec<u8>), Broken> {
    let connected = tokio::time::timeout(TIMEOUT, connect(target)).await.map_err(|_| Broken::TimedOut(TIMEOUT))?;
    let answer = connected.map_err(Broken::Unreachable)?.send_request(request).await.map_err(Broken::from)?;
    let content_type = answer.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let status = answer.status();
    let body = answer.into_body().collect().await.map_err(Broken::from)?.to_bytes();
    Ok((status, content_type, body.to_vec()))
}

impl From<hyper::Error> for Broken {
    /// A failed read or write is the connection's fault; a bad head or an answer that ends
    /// early is the answer's.
    fn from(e: hyper::Error) -> Broken {
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            match c.downcast_ref::<io::Error>() {
                Some(io) if io.kind() == io::ErrorKind::UnexpectedEof => break,
                Some(io) => return Broken::Unreachable(io::Error::new(io.kind(), io.to_string())),
                None => cause = c.source(),
            }
        }
        Broken::Malformed
    }
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
    use crate::failure::NOT_FOUND;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;
    use std::thread::JoinHandle;

    /// A client of a socket whose one connection gets `answer` and is closed, or, with no
    /// answer, is held open until the client leaves; the thread returns the request's head.
    fn serving(name: &str, answer: Option<&'static [u8]>) -> (Client, JoinHandle<String>) {
        let path = std::env::temp_dir().join(format!("pearlctl-{}-{name}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        let client = Client::new(Target::Unix(path.display().to_string()), Some("t0ké".into()));
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let _ = std::fs::remove_file(&path);
            let head = read_head(&mut s);
            match answer {
                Some(a) => s.write_all(a).unwrap(),
                None => while s.read(&mut [0]).is_ok_and(|n| n > 0) {},
            }
            head
        });
        (client, server)
    }

    /// The request line and headers, in lower case.
    fn read_head(s: &mut impl Read) -> String {
        let mut head = Vec::new();
        let mut byte = [0];
        while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap() == 1 {
            head.push(byte[0]);
        }
        String::from_utf8(head).unwrap().to_ascii_lowercase()
    }

    #[test]
    fn refusals_carry_pearlds_reason_and_404_means_not_found() {
        let answer = b"HTTP/1.1 404 Not Found\r\nContent-Length: 44\r\n\r\n{\"error\":\"no VR named \\\"x\\\"\",\"field\":\"name\"}";
        let (client, server) = serving("404", Some(answer));
        let f = client.get("/v1/vrs/x").err().unwrap();
        assert_eq!(f.code, NOT_FOUND);
        assert!(f.message.starts_with("pearld refused GET /v1/vrs/x (404): no VR named \"x\" (field name)"), "{}", f.message);
        assert_eq!(f.field.as_deref(), Some("name"));
        let head = server.join().unwrap();
        assert!(head.starts_with("get /v1/vrs/x http/1.1\r\n") && head.contains("\r\nauthorization: bearer t0ké\r\n"), "{head}");
        let (client, _) = serving("400", Some(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\n\r\n{}"));
        assert_eq!(client.call("POST", "/x", Some(&serde_json::json!({}))).err().unwrap().code, DAEMON);
    }

    #[test]
    fn a_chunked_answer_is_read_whole() {
        let answer =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        let (client, _) = serving("chunked", Some(answer));
        let reply = client.fetch("GET", "/x", None, None).unwrap();
        assert_eq!((reply.content_type.as_str(), reply.body.as_slice()), ("application/json", &b"{\"a\":1}"[..]));
    }

    #[test]
    fn an_answer_cut_short_or_not_http_is_malformed() {
        for (name, answer) in
            [("short", &b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}"[..]), ("garbage", b"garbage\r\n\r\n"), ("none", b"")]
        {
            let (client, _) = serving(name, Some(answer));
            let f = client.get("/x").err().unwrap();
            assert_eq!((f.code, f.message.as_str()), (DAEMON, "pearld sent a malformed answer to GET /x"), "{name}");
        }
    }

    #[test]
    fn a_pearld_that_never_answers_times_out() {
        let (client, server) = serving("silent", None);
        let f = client.fetch("GET", "/x", None, Some(Duration::from_millis(200))).err().unwrap();
        assert_eq!(f.code, DAEMON);
        assert!(f.message.contains(": no answer within 200ms. Is pearld running?"), "{}", f.message);
        server.join().unwrap();
    }

    #[test]
    fn no_socket_is_unreachable_with_a_hint() {
        let f = Client::new(Target::Unix("/nonexistent/pearl.sock".into()), None).get("/x").err().unwrap();
        assert_eq!(f.code, DAEMON);
        assert!(f.message.starts_with("cannot reach pearld at /nonexistent/pearl.sock: No such file"), "{}", f.message);
        assert!(f.message.ends_with(HINT), "{}", f.message);
    }

    #[test]
    fn over_tcp_the_host_is_the_address_and_a_closed_port_is_unreachable() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let head = read_head(&mut s);
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]").unwrap();
            head
        });
        let client = Client::new(Target::Tcp(address.clone(), None), None);
        assert_eq!(client.get("/x").unwrap(), serde_json::json!([]));
        let head = server.join().unwrap();
        assert!(head.contains(&format!("\r\nhost: {address}\r\n")) && !head.contains("authorization"), "{head}");
        let f = client.get("/x").err().unwrap();
        assert_eq!(f.code, DAEMON);
        assert!(f.message.starts_with(&format!("cannot reach pearld at http://{address}: connection refused. ")), "{}", f.message);
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(segment("red-1_x"), "red-1_x");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
    }
}
