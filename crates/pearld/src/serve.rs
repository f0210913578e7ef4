//! One API connection, served by hyper: HTTP/1.1 with chunked bodies, `Expect: 100-continue`
//! and keep-alive for clients that ask for it (`Connection: keep-alive`, as browsers send).
//! Other clients get one answer and the connection closed, as pearld always did: a client that
//! reads its answer to the end of the stream must not wait for an idle timeout. `http::read_first_head` checks the first head before hyper sees it,
//! so that a malformed one is refused naming its part. Each request becomes the router's
//! `Request`, its body read whole within `MAX_BODY` and its deadline, and runs on a blocking
//! thread (handlers take the node's locks); the `Response` goes back through hyper.

use crate::api_error::ApiError;
use crate::http::{self, Request, Response};
use crate::rewound::Rewound;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Time a client has to send a request's head (from its connection on, or from the previous
/// answer on a kept-alive connection) and then its body; an idle kept-alive connection is
/// closed after it too.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Time a client has to take a piece of the answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// What answers a request: the router with its context.
pub type Handler = Arc<dyn Fn(&Request) -> Response + Send + Sync>;

/// Serves `conn` until the client closes it, stalls, or sends what cannot be answered.
pub async fn serve_connection<S>(mut conn: S, handler: Handler, opened: Instant)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let read = match http::read_first_head(&mut conn, opened + REQUEST_DEADLINE).await {
        Ok(None) => return,
        Ok(Some(read)) => read,
        Err(e) => return refuse(conn, &e).await,
    };
    let service = service_fn(move |request| {
        let handler = Arc::clone(&handler);
        async move { Ok::<_, Infallible>(to_hyper(answer(request, handler).await)) }
    });
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(REQUEST_DEADLINE)
        // Header names as pearld always wrote them: clients that read heads by hand match on them.
        .title_case_headers(true)
        .max_headers(http::MAX_HEADERS)
        .max_buf_size(2 * http::MAX_HEAD)
        .serve_connection(TokioIo::new(Rewound::new(read, conn, WRITE_TIMEOUT)), service)
        .await;
}

async fn answer(request: hyper::Request<Incoming>, handler: Handler) -> Response {
    let keep_alive = asks_keep_alive(&request);
    let _answering = crate::shutdown::answering();
    let response = match from_hyper(request, Instant::now() + REQUEST_DEADLINE).await {
        Ok(request) => match tokio::task::spawn_blocking(move || handler(&request)).await {
            Ok(response) => response,
            Err(_) => Response::from(&ApiError::new(503, None, "pearld is stopping")),
        },
        Err(e) => Response::from(&e),
    };
    if keep_alive {
        return response;
    }
    response.with_header("Connection", "close")
}

fn asks_keep_alive<B>(request: &hyper::Request<B>) -> bool {
    request.version() == hyper::Version::HTTP_11
        && request
            .headers()
            .get_all(hyper::header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|token| token.trim().eq_ignore_ascii_case("keep-alive"))
}

async fn from_hyper(request: hyper::Request<Incoming>, deadline: Instant) -> Result<Request, ApiError> {
    let (head, body) = request.into_parts();
    let mut headers = Vec::with_capacity(head.headers.len());
    for (name, value) in &head.headers {
        let value = std::str::from_utf8(value.as_bytes()).map_err(|_| ApiError::bad_request(name.as_str(), "the value must be UTF-8"))?;
        headers.push((name.as_str().to_string(), value.to_string()));
    }
    let mut request = Request {
        method: head.method.as_str().to_string(),
        path: head.uri.path().to_string(),
        query: head.uri.query().unwrap_or("").to_string(),
        headers,
        body: Vec::new(),
    };
    http::check_body_framing(&request)?;
    request.body = match tokio::time::timeout_at(deadline.into(), Limited::new(body, http::MAX_BODY).collect()).await {
        Ok(Ok(collected)) => collected.to_bytes().into(),
        Ok(Err(e)) if e.is::<LengthLimitError>() => return Err(http::too_large()),
        Ok(Err(_)) => return Err(ApiError::bad_request("body", "the connection closed before the end of the body")),
        Err(_) => return Err(ApiError::new(408, Some("body"), "the body did not arrive in time")),
    };
    Ok(request)
}

fn to_hyper(response: Response) -> hyper::Response<Full<Bytes>> {
    let mut built = hyper::Response::builder()
        .status(response.status)
        .header(hyper::header::CONTENT_TYPE, response.content_type)
        .header(hyper::header::CACHE_CONTROL, "no-store");
    for (name, value) in response.headers {
        built = built.header(name, value);
    }
    built.body(Full::new(Bytes::from(response.body))).unwrap_or_else(|e| {
        let mut broken = hyper::Response::new(Full::new(Bytes::from(format!("{{\"error\":\"pearld built a broken answer: {e}\"}}\n"))));
        *broken.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
        broken
    })
}

/// Answers a refused first head and closes gently: reads and drops what the client still
/// sends (say, a body refused before it was read) for a moment, so that closing does not
/// reset the connection and lose the answer before the client reads it.
async fn refuse<S: AsyncRead + AsyncWrite + Unpin>(mut conn: S, e: &ApiError) {
    let sent = tokio::time::timeout(WRITE_TIMEOUT, conn.write_all(&Response::from(e).to_bytes())).await;
    if !matches!(sent, Ok(Ok(()))) || conn.shutdown().await.is_err() {
        return;
    }
    let drain = async {
        let mut sink = [0u8; 4096];
        let mut left = 4 * http::MAX_BODY;
        while left > 0 {
            match conn.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Serves one connection with a handler that tells what it got, and returns everything the
    /// server sent to a client that wrote `sent` and then waited for the end.
    async fn exchange(sent: Vec<u8>) -> String {
        let (mut client, server) = tokio::io::duplex(4 * http::MAX_BODY);
        let handler: Handler = Arc::new(|r: &Request| {
            Response::json(200, &json!({"method": r.method, "path": r.path, "query": r.query, "body": String::from_utf8_lossy(&r.body)}))
        });
        let served = tokio::spawn(serve_connection(server, handler, Instant::now()));
        client.write_all(&sent).await.unwrap();
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        served.await.unwrap();
        String::from_utf8_lossy(&got).into_owned()
    }

    #[tokio::test]
    async fn a_connection_kept_alive_on_request_serves_request_after_request() {
        let got = exchange(
            b"GET /a?x=1 HTTP/1.1\r\nHost: p\r\nConnection: keep-alive\r\n\r\nPOST /b HTTP/1.1\r\nHost: p\r\nContent-Length: 2\r\n\r\nhi"
                .to_vec(),
        )
        .await;
        assert_eq!(got.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{got}");
        assert_eq!(got.matches("Connection: close\r\n").count(), 1, "only the second answer closes: {got}");
        assert!(got.contains(r#""method":"GET","path":"/a","query":"x=1""#), "{got}");
        assert!(got.contains(r#""body":"hi","method":"POST","path":"/b""#), "{got}");
        assert!(got.to_ascii_lowercase().contains("cache-control: no-store"), "{got}");
    }

    #[tokio::test]
    async fn a_client_that_does_not_ask_to_keep_the_connection_gets_one_answer_and_the_end_of_the_stream() {
        let got = exchange(b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n".to_vec()).await;
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n") && got.contains("Connection: close\r\n"), "{got}");
        assert!(!got.contains(r#""path":"/b""#), "{got}");
    }

    #[tokio::test]
    async fn a_chunked_body_arrives_whole() {
        let got = exchange(
            b"PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n".to_vec(),
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n") && got.contains(r#""body":"abcde""#), "{got}");
    }

    #[tokio::test]
    async fn expect_100_continue_is_answered_before_the_body() {
        let got = exchange(b"PUT /c HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_vec()).await;
        assert!(got.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n") && got.contains(r#""body":"ok""#), "{got}");
    }

    #[tokio::test]
    async fn a_malformed_first_head_is_refused_naming_its_part() {
        let got = exchange(b"GET /x HTTP/1.1\r\nno colon\r\n\r\n".to_vec()).await;
        assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n") && got.contains(r#""field":"headers""#), "{got}");
    }

    #[tokio::test]
    async fn a_chunked_body_past_the_limit_is_refused_413() {
        let chunk = "a".repeat(64 * 1024);
        let mut sent = b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for _ in 0..=http::MAX_BODY / chunk.len() {
            sent.extend_from_slice(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes());
        }
        sent.extend_from_slice(b"0\r\n\r\n");
        let got = exchange(sent).await;
        assert!(got.starts_with("HTTP/1.1 413 Payload Too Large\r\n") && got.contains(r#""field":"Content-Length""#), "{got}");
    }

    #[tokio::test]
    async fn a_later_request_announcing_too_large_a_body_is_refused_413_naming_the_header() {
        let got =
            exchange(b"GET /a HTTP/1.1\r\nConnection: keep-alive\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n".to_vec())
                .await;
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
        assert!(got.contains("HTTP/1.1 413 ") && got.contains(r#""field":"Content-Length""#), "{got}");
    }
}
