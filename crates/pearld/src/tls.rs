//! The TCP API's scheme, chosen at start, and its TLS acceptor. HTTPS when the configuration
//! gives `api.tls`; plain HTTP only on a loopback address (where only root could read the
//! tokens, and root reads them from the configuration anyway) or with `--api-tcp-plain`.
//! The certificate files are looked at again for each connection: a certificate renewed in
//! place, or `api.tls` changed through the API, serves the next client without a restart.

use pearl_control::{ApiTls, Config};
use std::net::ToSocketAddrs;
use std::sync::Mutex;
use std::time::SystemTime;
use tokio_rustls::TlsAcceptor;

/// How `--api-tcp` is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Https,
    Http,
}

/// Why `--api-tcp` was refused at start.
#[derive(Debug, thiserror::Error)]
pub enum SchemeError {
    /// --api-tcp-plain: the configuration gives api.tls; drop one of them
    #[error("--api-tcp-plain: the configuration gives api.tls; drop one of them")]
    PlainBesideTls,
    /// --api-tcp ADDR: ERROR (expected HOST:PORT, e.g. 127.0.0.1:8080)
    #[error("--api-tcp {addr}: {error} (expected HOST:PORT, e.g. 127.0.0.1:8080)")]
    Address { addr: String, error: std::io::Error },
    /// --api-tcp ADDR: tokens would cross the network in clear text; give the configuration
    /// api.tls (…), or add --api-tcp-plain to serve plain HTTP anyway
    #[error(
        "--api-tcp {addr}: tokens would cross the network in clear text; give the configuration api.tls \
         (api: {{tls: {{certificate: FILE, key: FILE}}}}, PEM files), or add --api-tcp-plain to serve plain HTTP anyway"
    )]
    ClearText { addr: String },
}

impl Scheme {
    /// The scheme for `--api-tcp addr`; refuses plain HTTP where tokens would cross a network.
    pub fn choose(addr: &str, plain_asked: bool, config: &Config) -> Result<Scheme, SchemeError> {
        match (&config.api_tls, plain_asked) {
            (Some(_), true) => Err(SchemeError::PlainBesideTls),
            (Some(_), false) => Ok(Scheme::Https),
            (None, true) => Ok(Scheme::Http),
            (None, false) => {
                let addrs: Vec<_> =
                    addr.to_socket_addrs().map_err(|error| SchemeError::Address { addr: addr.to_string(), error })?.collect();
                if addrs.iter().all(|a| a.ip().is_loopback()) {
                    return Ok(Scheme::Http);
                }
                Err(SchemeError::ClearText { addr: addr.to_string() })
            }
        }
    }
}

/// The acceptor built from the certificate files as they were last seen.
#[derive(Default)]
pub struct TlsAcceptors {
    current: Mutex<Option<Built>>,
}

struct Built {
    tls: ApiTls,
    modified: (Option<SystemTime>, Option<SystemTime>),
    acceptor: TlsAcceptor,
}

impl TlsAcceptors {
    /// The acceptor for `config`'s certificate, rebuilt when its paths or files changed. A
    /// certificate that stopped loading (a file half-written while being renewed) leaves the
    /// last good one in service; `None` only when none ever loaded.
    pub fn acceptor(&self, config: &Config) -> Option<TlsAcceptor> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        // A configuration that dropped api.tls keeps the listener on HTTPS: its scheme is the start's.
        let tls = config.api_tls.as_ref().or(current.as_ref().map(|b| &b.tls)).cloned()?;
        let modified = (mtime(&tls.certificate), mtime(&tls.key));
        let fresh = current.as_ref().is_some_and(|b| b.tls == tls && b.modified == modified);
        if !fresh {
            match tls.server_config() {
                Ok(server) => *current = Some(Built { tls, modified, acceptor: TlsAcceptor::from(server) }),
                Err((field, why)) if current.is_some() => {
                    tracing::warn!("api.tls.{field}: {why}; the API keeps serving the certificate it had");
                    // Not tried again until the files change once more.
                    if let Some(b) = current.as_mut() {
                        (b.tls, b.modified) = (tls, modified);
                    }
                }
                Err((field, why)) => tracing::warn!("api.tls.{field}: {why}"),
            }
        }
        current.as_ref().map(|b| b.acceptor.clone())
    }
}

fn mtime(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}
