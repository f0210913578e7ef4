//! The API socket: HTTP/1.0 over a Unix socket, read-only for now (`GET /v1/stats`). Requests
//! are served one at a time on their own thread, never on a worker.

use crate::stats;
use crate::node::Node;
use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub struct Api {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

pub fn serve(path: &str, node: Arc<Node>) -> io::Result<Api> {
    let path = PathBuf::from(path);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // A socket left by a previous run that died would make bind fail.
    if UnixStream::connect(&path).is_err() {
        let _ = std::fs::remove_file(&path);
    }
    let listener = UnixListener::bind(&path)?;
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new().name("pearl-api".into()).spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(mut s) = conn {
                    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                    let _ = handle(&mut s, &node);
                }
            }
        })?
    };
    Ok(Api { path, stop, thread })
}

impl Api {
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = UnixStream::connect(&self.path);
        let _ = self.thread.join();
        let _ = std::fs::remove_file(Path::new(&self.path));
    }
}

fn handle(s: &mut UnixStream, node: &Node) -> io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 512];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut words = head.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, body) = match (method, target) {
        ("GET", "/v1/stats") => ("200 OK", stats::snapshot(node).to_string()),
        ("GET", "/healthz") => ("200 OK", "{\"status\":\"ok\"}".to_string()),
        ("GET", _) => ("404 Not Found", format!("{{\"error\":\"no resource {target:?}\"}}")),
        _ => ("405 Method Not Allowed", format!("{{\"error\":\"method {method:?} is not supported\"}}")),
    };
    write!(
        s,
        "HTTP/1.0 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}
