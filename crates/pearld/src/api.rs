//! The API server: listens on a Unix socket and, if asked, a TCP address; one thread per
//! connection, so a slow client holds only its own thread. Past `inflight::MAX_CONNECTIONS`
//! new connections wait in the kernel's backlog until one ends (each is bounded by its
//! deadlines). Nothing here runs on a worker.

use crate::ctx::Ctx;
use crate::http::{self, Conn, Response};
use crate::inflight::InFlight;
use crate::metrics;
use crate::node::Node;
use crate::rates::Sampler;
use crate::router;
use crate::routes::ENDPOINTS;
use crate::stats;
use std::io;
use std::net::{TcpListener, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a full server looks again for a free slot.
const FULL_RECHECK_MS: i32 = 20;
/// Time a client has to send its whole request.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Time a client has to take the answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Api {
    socket: PathBuf,
    wake: OwnedFd,
    accept: JoinHandle<()>,
    live: Arc<InFlight>,
    ctx: Arc<Ctx>,
}

enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

/// Serves the API on the Unix socket `socket` and, with `tcp` (`HOST:PORT`), on TCP too.
/// Errors name the option whose value failed.
pub fn serve(socket: &str, tcp: Option<&str>, node: Arc<Node>) -> Result<Api, String> {
    let mut listeners = vec![Listener::Unix(bind_unix(socket).map_err(|e| format!("--api {socket}: {e}"))?)];
    if let Some(addr) = tcp {
        let listener = bind_tcp(addr).map_err(|e| format!("--api-tcp {addr}: {e}"))?;
        let local = listener.local_addr().map_err(|e| format!("--api-tcp {addr}: {e}"))?;
        eprintln!("pearld: API and dashboard on http://{local}/");
        listeners.push(Listener::Tcp(listener));
    }
    let (wake_rx, wake) = pipe().map_err(|e| format!("starting the API: {e}"))?;
    let sampler_node = Arc::clone(&node);
    let rates = Sampler::start(move || metrics::families(&stats::snapshot_with(&sampler_node, stats::Detail::Counters)))
        .map_err(|e| format!("starting the metrics sampler: {e}"))?;
    let ctx = Arc::new(Ctx { node, rates, owner_rates: Default::default() });
    let live = Arc::new(InFlight::default());
    let accept = {
        let (ctx, live) = (Arc::clone(&ctx), Arc::clone(&live));
        std::thread::Builder::new().name("pearl-api".into()).spawn(move || accept_loop(&listeners, &wake_rx, &ctx, &live))
    };
    match accept {
        Ok(accept) => Ok(Api { socket: PathBuf::from(socket), wake, accept, live, ctx }),
        Err(e) => {
            // The sampler holds the node: the caller must get it back to stop it.
            ctx.rates.stop();
            let _ = std::fs::remove_file(socket);
            Err(format!("starting the API: {e}"))
        }
    }
}

impl Api {
    /// Stops accepting, cuts the connections in flight short and waits for their threads and
    /// the sampler, and removes the socket: afterwards nothing here holds the node.
    pub fn stop(self) {
        // SAFETY: writing one byte from a valid buffer to the pipe's write end.
        unsafe { libc::write(self.wake.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        let _ = self.accept.join();
        self.live.cut_all();
        // A handler still running ends by itself; the sockets' deadlines bound the rest.
        self.live.wait_until_none(REQUEST_DEADLINE + WRITE_TIMEOUT);
        self.ctx.rates.stop();
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
    Ok(l)
}

fn bind_tcp(addr: &str) -> io::Result<TcpListener> {
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{e} (expected HOST:PORT, e.g. 127.0.0.1:8080)")))?
        .collect();
    let l = TcpListener::bind(&addrs[..])?;
    l.set_nonblocking(true)?;
    Ok(l)
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 returns.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Waits on every listener and the wake pipe at once; returns when the pipe is written. While
/// `MAX_CONNECTIONS` are in flight it waits on the pipe alone, for a while.
fn accept_loop(listeners: &[Listener], wake: &OwnedFd, ctx: &Arc<Ctx>, live: &Arc<InFlight>) {
    let mut fds: Vec<libc::pollfd> = listeners
        .iter()
        .map(|l| match l {
            Listener::Unix(u) => u.as_raw_fd(),
            Listener::Tcp(t) => t.as_raw_fd(),
        })
        .chain([wake.as_raw_fd()])
        .map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 })
        .collect();
    let wake_at = fds.len() - 1;
    loop {
        let full = live.is_full();
        for fd in &mut fds[..wake_at] {
            fd.events = if full { 0 } else { libc::POLLIN };
        }
        let timeout = if full { FULL_RECHECK_MS } else { -1 };
        // SAFETY: `fds` is a valid array of pollfd for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            eprintln!("pearld: the API stopped accepting: {}", io::Error::last_os_error());
            return;
        }
        if fds[wake_at].revents != 0 {
            return;
        }
        for (l, fd) in listeners.iter().zip(&fds) {
            if fd.revents == 0 || live.is_full() {
                continue;
            }
            // The listener is non-blocking: a client that gave up before accept is no error.
            let conn: Box<dyn Conn> = match l {
                Listener::Unix(u) => match u.accept() {
                    Ok((s, _)) => Box::new(s),
                    Err(_) => continue,
                },
                Listener::Tcp(t) => match t.accept() {
                    Ok((s, _)) => Box::new(s),
                    Err(_) => continue,
                },
            };
            start_connection(conn, ctx, live);
        }
    }
}

fn start_connection(conn: Box<dyn Conn>, ctx: &Arc<Ctx>, live: &Arc<InFlight>) {
    let id = live.enter(conn.as_raw_fd());
    let (ctx, done) = (Arc::clone(ctx), Arc::clone(live));
    let spawned = std::thread::Builder::new().name("pearl-api-conn".into()).spawn(move || {
        // Locals drop in reverse order, when unwinding too: the node is let go, then the
        // connection counts as over, then its socket closes.
        let mut conn = conn;
        let _registered = Registered(&done, id);
        let ctx = ctx;
        serve_connection(&mut *conn, &ctx);
    });
    if spawned.is_err() {
        // The socket closed with the closure; only the accept thread, this one, registers,
        // and stopping cuts connections only after it has ended.
        live.leave(id);
    }
}

/// Keeps a connection in `InFlight` for as long as it lives.
struct Registered<'a>(&'a InFlight, u64);

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.0.leave(self.1);
    }
}

fn serve_connection(conn: &mut dyn Conn, ctx: &Ctx) {
    let response: Response = match http::read_request(conn, Instant::now() + REQUEST_DEADLINE) {
        Ok(None) => return,
        Ok(Some(request)) => router::handle(ENDPOINTS, ctx, &request),
        Err(e) => Response::from(&e),
    };
    let _ = conn.set_write_timeout(WRITE_TIMEOUT);
    if response.write_to(conn).is_err() {
        return;
    }
    linger(conn);
}

/// Closes gently: after the answer, reads and drops what the client still sends (say, a body
/// refused before it was read) for a moment, so that closing does not reset the connection
/// and lose the answer before the client reads it.
fn linger(conn: &mut dyn Conn) {
    conn.shutdown_write();
    let until = Instant::now() + Duration::from_secs(1);
    let mut sink = [0u8; 4096];
    let mut left = 4 * http::MAX_BODY;
    while left > 0 {
        let Some(t) = until.checked_duration_since(Instant::now()).filter(|t| !t.is_zero()) else { return };
        if conn.set_read_timeout(Some(t)).is_err() {
            return;
        }
        match conn.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}
