//! The API server: listens on a Unix socket and, if asked, a TCP address (HTTPS or plain HTTP,
//! as `tls::Scheme` chose at start). Connections are tasks on a small tokio runtime, served by
//! hyper (`serve.rs`), so an idle or slow client costs a few KiB and no thread, and a client
//! that has not sent its first request by its deadline is answered 408 and let go (one still in
//! its TLS handshake, just let go).
//! Handlers run on a bounded pool of blocking threads (they take the node's locks). Past
//! `MAX_CONNECTIONS` new connections wait in the kernel's backlog until one ends. Nothing here
//! runs on a worker.

use crate::ctx::Ctx;
use crate::metrics;
use crate::node::Node;
use crate::rates::Sampler;
use crate::router;
use crate::routes::ENDPOINTS;
use crate::serve::{self, Handler};
use crate::stats;
use crate::tls::{Scheme, TlsAcceptors};
use std::io;
use std::net::{TcpListener, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{watch, Semaphore};

/// Connections served at once: each holds at most a request's head and body.
const MAX_CONNECTIONS: usize = 4096;
/// Handlers running at once; more requests wait for one of them.
const MAX_HANDLERS: usize = 64;
/// The kernel's queue of connections not yet accepted.
const BACKLOG: libc::c_int = 4096;

pub struct Api {
    socket: PathBuf,
    stop: watch::Sender<bool>,
    runtime: tokio::runtime::Runtime,
    ctx: Arc<Ctx>,
}

enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener, Scheme),
}

/// Serves the API on the Unix socket `socket` and, with `tcp` (`HOST:PORT` and its scheme), on
/// TCP too. Errors name the option whose value failed.
pub fn serve(socket: &str, tcp: Option<(&str, Scheme)>, node: Arc<Node>) -> Result<Api, String> {
    let tls = TlsAcceptors::default();
    let mut listeners = vec![Listener::Unix(bind_unix(socket).map_err(|e| format!("--api {socket}: {e}"))?)];
    if let Some((addr, scheme)) = tcp {
        if scheme == Scheme::Https && tls.acceptor(&node.config()).is_none() {
            return Err(format!("--api-tcp {addr}: api.tls does not load (see the warning above)"));
        }
        let listener = bind_tcp(addr).map_err(|e| format!("--api-tcp {addr}: {e}"))?;
        let local = listener.local_addr().map_err(|e| format!("--api-tcp {addr}: {e}"))?;
        let name = if scheme == Scheme::Https { "https" } else { "http" };
        tracing::info!("API and dashboard on {name}://{local}/");
        listeners.push(Listener::Tcp(listener, scheme));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(MAX_HANDLERS)
        .thread_name("pearl-api")
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("starting the API: {e}"))?;
    let sampler_node = Arc::clone(&node);
    let rates = Sampler::start(move || metrics::families(&stats::snapshot_with(&sampler_node, stats::Detail::Counters)))
        .map_err(|e| format!("starting the metrics sampler: {e}"))?;
    let sessions = crate::sessions::Sessions::start().map_err(|e| format!("starting the session prober: {e}"))?;
    let ctx = Arc::new(Ctx { node, rates, sessions, owner_rates: Default::default(), activity: Default::default(), tls });
    let (stop, stopped) = watch::channel(false);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let entered = runtime.enter();
    for l in listeners {
        let accepting = match l {
            Listener::Unix(u) => tokio::net::UnixListener::from_std(u).map(Accepting::Unix),
            Listener::Tcp(t, scheme) => tokio::net::TcpListener::from_std(t).map(|t| Accepting::Tcp(t, scheme)),
        };
        match accepting {
            Ok(l) => drop(runtime.spawn(accept_loop(l, Arc::clone(&ctx), Arc::clone(&slots), stopped.clone()))),
            Err(e) => {
                ctx.rates.stop();
                let _ = std::fs::remove_file(socket);
                return Err(format!("starting the API: {e}"));
            }
        }
    }
    drop(entered);
    Ok(Api { socket: PathBuf::from(socket), stop, runtime, ctx })
}

impl Api {
    /// Stops accepting, drops the connections in flight, waits for the handlers still running
    /// and the sampler, and removes the socket: afterwards nothing here holds the node.
    pub fn stop(self) {
        let _ = self.stop.send(true);
        // Dropping the runtime drops every connection's task and waits for running handlers.
        drop(self.runtime);
        self.ctx.rates.stop();
        self.ctx.sessions.stop();
        let _ = std::fs::remove_file(&self.socket);
    }
}

fn bind_unix(path: &str) -> io::Result<UnixListener> {
    let path = PathBuf::from(path);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // A socket left by a previous run that died would make bind fail.
    if UnixStream::connect(&path).is_err() {
        let _ = std::fs::remove_file(&path);
    }
    let l = UnixListener::bind(&path)?;
    l.set_nonblocking(true)?;
    deepen_backlog(&l)?;
    Ok(l)
}

fn bind_tcp(addr: &str) -> io::Result<TcpListener> {
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{e} (expected HOST:PORT, e.g. 127.0.0.1:8080)")))?
        .collect();
    let l = TcpListener::bind(&addrs[..])?;
    l.set_nonblocking(true)?;
    deepen_backlog(&l)?;
    Ok(l)
}

/// std listens with a backlog of 128: a burst of a thousand clients would see refusals.
fn deepen_backlog(l: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: listen on a descriptor that is a bound, listening socket; it only resizes the queue.
    if unsafe { libc::listen(l.as_raw_fd(), BACKLOG) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

enum Accepting {
    Unix(tokio::net::UnixListener),
    Tcp(tokio::net::TcpListener, Scheme),
}

/// A client's connection, whichever listener it came from.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send> Stream for S {}

/// A connection as accepted, before its TLS handshake if it has one.
enum Accepted {
    Plain(Box<dyn Stream>),
    Tls(tokio::net::TcpStream),
}

impl Accepting {
    async fn accept(&self) -> io::Result<Accepted> {
        Ok(match self {
            Accepting::Unix(u) => Accepted::Plain(Box::new(u.accept().await?.0)),
            Accepting::Tcp(t, Scheme::Http) => Accepted::Plain(Box::new(t.accept().await?.0)),
            Accepting::Tcp(t, Scheme::Https) => Accepted::Tls(t.accept().await?.0),
        })
    }
}

/// The connection ready for HTTP: a TLS client's handshake done by `deadline`, with the
/// certificate the configuration names now. `None`: the handshake failed or came too late.
async fn open(accepted: Accepted, ctx: &Ctx, deadline: Instant) -> Option<Box<dyn Stream>> {
    match accepted {
        Accepted::Plain(s) => Some(s),
        Accepted::Tls(tcp) => {
            let acceptor = ctx.tls.acceptor(&ctx.node.config())?;
            match tokio::time::timeout_at(deadline.into(), acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => Some(Box::new(tls)),
                _ => None,
            }
        }
    }
}

/// Accepts while a connection slot is free, until `stopped` turns true.
async fn accept_loop(listener: Accepting, ctx: Arc<Ctx>, slots: Arc<Semaphore>, mut stopped: watch::Receiver<bool>) {
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            _ = stopped.changed() => return,
        };
        let Ok(slot) = slot else { return };
        let conn = tokio::select! {
            conn = listener.accept() => conn,
            _ = stopped.changed() => return,
        };
        match conn {
            Ok(conn) => {
                let ctx = Arc::clone(&ctx);
                tokio::spawn(async move {
                    let opened = Instant::now();
                    if let Some(conn) = open(conn, &ctx, opened + serve::REQUEST_DEADLINE).await {
                        let handler: Handler = Arc::new(move |request| router::handle(ENDPOINTS, &ctx, request));
                        serve::serve_connection(conn, handler, opened).await;
                    }
                    drop(slot);
                });
            }
            // A client that gave up before accept, or descriptors short for a moment.
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) || e.raw_os_error() == Some(libc::ENFILE) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(_) => {}
        }
    }
}
