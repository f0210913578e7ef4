//! Opens a connection to pearld, over its Unix socket, TCP or TLS over TCP, and hands it to
//! hyper's HTTP/1.1 client: one connection carries one request.

use crate::target::Target;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use std::io;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};

pub type Sender = SendRequest<Full<Bytes>>;

/// Connected, and in TLS when the target is https: a certificate pearlctl does not trust fails
/// here, before anything (the token above all) is sent.
pub async fn connect(target: &Target) -> io::Result<Sender> {
    match target {
        Target::Unix(path) => handshake(UnixStream::connect(path).await?).await,
        Target::Tcp(address, None) => handshake(tcp(address).await?).await,
        Target::Tcp(address, Some(tls)) => handshake(tls.open(tcp(address).await?).await?).await,
    }
}

/// The first of the address's resolutions that takes the connection; when none does, the
/// message is the one pearlctl has always given.
async fn tcp(address: &str) -> io::Result<TcpStream> {
    for a in tokio::net::lookup_host(address).await? {
        if let Ok(s) = TcpStream::connect(a).await {
            return Ok(s);
        }
    }
    Err(io::Error::new(io::ErrorKind::ConnectionRefused, "connection refused"))
}

async fn handshake<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(stream: S) -> io::Result<Sender> {
    let (sender, connection) = http1::handshake(TokioIo::new(stream)).await.map_err(io::Error::other)?;
    // The connection task does the reading and writing while the caller waits on `sender` and
    // the answer's body; it ends when pearld closes, or with the runtime.
    tokio::spawn(connection);
    Ok(sender)
}
