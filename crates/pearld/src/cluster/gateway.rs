//! [`Store`] over etcd's JSON gateway (`/v3/kv/*`, `/v3/lease/*`, `/v3/watch`), spoken by hyper's
//! HTTP/1.1 client that pearld already links for its API, so the cluster adds no gRPC stack to
//! the build (docs/CLUSTER.md has the measured difference). Keys and values cross the gateway
//! in base64 and 64-bit numbers as strings, as protobuf's JSON mapping has them. Each request
//! tries the members in turn, so one member down changes nothing but a retry.

use super::store::{Kv, Listing, Seen, Store, StoreError};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST};
use hyper::Request;
use serde_json::{json, Value};
use std::time::Duration;

/// A member that answers nothing in this long is taken for down.
const TIMEOUT: Duration = Duration::from_secs(2);

pub struct Gateway {
    /// `HOST:PORT` of each member.
    members: Vec<String>,
}

impl Gateway {
    /// `http://HOST:PORT[,http://HOST:PORT...]`.
    pub fn new(urls: &str) -> Result<Gateway, String> {
        let members: Vec<String> = urls
            .split(',')
            .map(|u| {
                let rest = u.trim().strip_prefix("http://").ok_or_else(|| format!("--cluster {u:?}: expected http://HOST:PORT"))?;
                let hostport = rest.trim_end_matches('/');
                if hostport.is_empty() || !hostport.contains(':') {
                    return Err(format!("--cluster {u:?}: expected http://HOST:PORT"));
                }
                Ok(hostport.to_string())
            })
            .collect::<Result<_, String>>()?;
        Ok(Gateway { members })
    }

    /// The first member's host, for finding the underlay device that reaches the cluster.
    pub fn first_host(&self) -> &str {
        self.members[0].rsplit_once(':').map_or(&self.members[0], |(h, _)| h)
    }

    /// `path` with `body`, to each member in turn until one answers.
    fn call(&self, path: &str, body: &Value) -> Result<Value, StoreError> {
        let mut last = String::new();
        for m in &self.members {
            match once(m, path, body) {
                Ok(v) => return Ok(v),
                Err(Failed::Refused(e)) => return Err(StoreError::Refused(e)),
                Err(Failed::Down(e)) => last = format!("{m}: {e}"),
            }
        }
        Err(StoreError::Unreachable(last))
    }
}

enum Failed {
    Down(String),
    Refused(String),
}

fn runtime() -> Result<tokio::runtime::Runtime, Failed> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| Failed::Down(e.to_string()))
}

async fn send(member: &str, path: &str, body: &Value) -> Result<hyper::Response<hyper::body::Incoming>, Failed> {
    let down = |e: &dyn std::fmt::Display| Failed::Down(e.to_string());
    let stream = tokio::net::TcpStream::connect(member).await.map_err(|e| down(&e))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.map_err(|e| down(&e))?;
    tokio::spawn(conn);
    let text = body.to_string();
    let request = Request::post(path)
        .header(HOST, member)
        .header(CONTENT_TYPE, "application/json")
        .header(CONTENT_LENGTH, text.len())
        .body(Full::new(Bytes::from(text)))
        .map_err(|e| down(&e))?;
    sender.send_request(request).await.map_err(|e| down(&e))
}

fn once(member: &str, path: &str, body: &Value) -> Result<Value, Failed> {
    runtime()?.block_on(async {
        let exchange = async {
            let answer = send(member, path, body).await?;
            let status = answer.status();
            let bytes = answer.into_body().collect().await.map_err(|e| Failed::Down(e.to_string()))?.to_bytes();
            let v: Value = serde_json::from_slice(&bytes).map_err(|_| Failed::Down("not JSON".into()))?;
            if !status.is_success() {
                let why = v["message"].as_str().or(v["error"].as_str()).unwrap_or("refused").to_string();
                // Without quorum a member answers but cannot serve: another may.
                return Err(if status.is_server_error() { Failed::Down(why) } else { Failed::Refused(why) });
            }
            // A stream's answer (keepalive) is `{"result": ...}`.
            Ok(if v.get("result").is_some() { v["result"].clone() } else { v })
        };
        tokio::time::timeout(TIMEOUT, exchange).await.unwrap_or(Err(Failed::Down("timed out".into())))
    })
}

fn b64(s: &str) -> String {
    B64.encode(s)
}

fn text(v: &Value) -> String {
    v.as_str().and_then(|s| B64.decode(s).ok()).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
}

/// A protobuf int64 as JSON: a string, absent when 0.
fn int(v: &Value) -> i64 {
    v.as_str().and_then(|s| s.parse().ok()).or(v.as_i64()).unwrap_or(0)
}

/// The end of the range of keys under `prefix` (the prefix with its last byte + 1).
pub fn range_end(prefix: &str) -> String {
    let mut b = prefix.as_bytes().to_vec();
    while let Some(last) = b.pop() {
        if last < 0xff {
            b.push(last + 1);
            return B64.encode(&b);
        }
    }
    B64.encode([0])
}

fn put_op(key: &str, value: &str, lease: Option<i64>) -> Value {
    let mut put = json!({"key": b64(key), "value": b64(value)});
    if let Some(l) = lease {
        put["lease"] = json!(l.to_string());
    }
    put
}

impl Store for Gateway {
    fn range(&self, prefix: &str) -> Result<Listing, StoreError> {
        let v = self.call("/v3/kv/range", &json!({"key": b64(prefix), "range_end": range_end(prefix)}))?;
        let kvs = v["kvs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|kv| Kv { key: text(&kv["key"]), value: text(&kv["value"]), lease: int(&kv["lease"]) })
            .collect();
        Ok(Listing { kvs })
    }

    fn put(&self, key: &str, value: &str, lease: Option<i64>) -> Result<(), StoreError> {
        self.call("/v3/kv/put", &put_op(key, value, lease)).map(drop)
    }

    fn create(&self, key: &str, value: &str, lease: Option<i64>) -> Result<bool, StoreError> {
        let txn = json!({
            "compare": [{"key": b64(key), "result": "EQUAL", "target": "CREATE", "create_revision": "0"}],
            "success": [{"request_put": put_op(key, value, lease)}],
        });
        Ok(self.call("/v3/kv/txn", &txn)?["succeeded"].as_bool().unwrap_or(false))
    }

    fn delete(&self, key: &str, prefix: bool) -> Result<(), StoreError> {
        let mut req = json!({"key": b64(key)});
        if prefix {
            req["range_end"] = json!(range_end(key));
        }
        self.call("/v3/kv/deleterange", &req).map(drop)
    }

    fn grant(&self, ttl: i64) -> Result<i64, StoreError> {
        let v = self.call("/v3/lease/grant", &json!({"TTL": ttl.to_string()}))?;
        match int(&v["ID"]) {
            0 => Err(StoreError::Refused(v["error"].as_str().unwrap_or("no lease granted").to_string())),
            id => Ok(id),
        }
    }

    fn keep_alive(&self, lease: i64) -> Result<i64, StoreError> {
        Ok(int(&self.call("/v3/lease/keepalive", &json!({"ID": lease.to_string()}))?["TTL"]))
    }

    fn revoke(&self, lease: i64) -> Result<(), StoreError> {
        self.call("/v3/lease/revoke", &json!({"ID": lease.to_string()})).map(drop)
    }

    fn watch(&self, prefix: &str, from: i64, seen: &mut dyn FnMut(Seen) -> bool) -> Result<(), StoreError> {
        let req = json!({"create_request": {"key": b64(prefix), "range_end": range_end(prefix), "start_revision": from.to_string()}});
        let mut last = String::new();
        for m in &self.members {
            match watch_once(m, &req, seen) {
                Ok(()) => return Ok(()),
                Err(e) => last = format!("{m}: {e}"),
            }
        }
        Err(StoreError::Unreachable(last))
    }
}

/// One watch stream: newline-separated `{"result": ...}` messages, read until it ends.
fn watch_once(member: &str, req: &Value, seen: &mut dyn FnMut(Seen) -> bool) -> Result<(), String> {
    let rt = runtime().map_err(|_| "no runtime".to_string())?;
    rt.block_on(async {
        let answer = tokio::time::timeout(TIMEOUT, send(member, "/v3/watch", req)).await.map_err(|_| "timed out".to_string())?.map_err(
            |e| match e {
                Failed::Down(e) | Failed::Refused(e) => e,
            },
        )?;
        let mut body = answer.into_body();
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let Some(frame) = body.frame().await else { return Err("the stream ended".to_string()) };
            let frame = frame.map_err(|e| e.to_string())?;
            let Some(data) = frame.data_ref() else { continue };
            pending.extend_from_slice(data);
            while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
                let r = &v["result"];
                if int(&r["compact_revision"]) > 0 {
                    seen(Seen::Compacted);
                    return Ok(());
                }
                if v.get("error").is_some() {
                    return Err(v["error"].to_string());
                }
                if r["events"].as_array().is_none_or(Vec::is_empty) {
                    continue;
                }
                if !seen(Seen::Changes { revision: int(&r["header"]["revision"]) }) {
                    return Ok(());
                }
            }
        }
    })
}
