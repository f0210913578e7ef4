//! An API connection as hyper reads and writes it: the bytes `http::read_first_head` already
//! took come first, and a client that stops taking its answer is let go after a while (hyper
//! has no write timeout of its own, and such a client would hold a connection slot).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

pub struct Rewound<S> {
    read: Vec<u8>,
    at: usize,
    inner: S,
    /// Time a client has to take a piece of the answer.
    write_timeout: Duration,
    /// Running while a write waits on the client.
    stall: Option<Pin<Box<Sleep>>>,
}

impl<S> Rewound<S> {
    pub fn new(read: Vec<u8>, inner: S, write_timeout: Duration) -> Rewound<S> {
        Rewound { read, at: 0, inner, write_timeout, stall: None }
    }

    fn waited<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stall = None;
            return poll;
        }
        let timeout = self.write_timeout;
        let stall = self.stall.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stall.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading"))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewound<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.at < this.read.len() {
            let n = buf.remaining().min(this.read.len() - this.at);
            buf.put_slice(&this.read[this.at..this.at + n]);
            this.at += n;
            if this.at == this.read.len() {
                this.read = Vec::new();
                this.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewound<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.waited(cx, poll)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.waited(cx, poll)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn what_was_read_comes_first_then_the_connection() {
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(b" world").await.unwrap();
        drop(client);
        let mut got = String::new();
        Rewound::new(b"hello".to_vec(), server, Duration::from_secs(5)).read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "hello world");
    }

    #[tokio::test]
    async fn a_client_that_stops_reading_is_let_go() {
        let (_client, server) = tokio::io::duplex(16);
        let mut conn = Rewound::new(Vec::new(), server, Duration::from_millis(20));
        let e = conn.write_all(&[0; 64]).await.expect_err("the duplex holds 16 bytes and nobody reads");
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }
}
