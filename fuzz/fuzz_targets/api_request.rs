//! Fuzzes the API's request framing (`crates/pearld/src/http.rs`): any bytes a client sends
//! are read as one request within the limits, or refused with a 4xx naming the part at fault.
//! pearld is a binary crate, so its framing and error modules are compiled in here by path.

#![no_main]

#[path = "../../crates/pearld/src/api_error.rs"]
#[allow(dead_code)]
mod api_error;
#[path = "../../crates/pearld/src/http.rs"]
#[allow(dead_code)]
mod http;

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let runtime = RUNTIME.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap());
    let mut conn = tokio::io::join(data, Vec::new());
    let read = runtime.block_on(http::read_request(&mut conn, Instant::now() + Duration::from_secs(5)));
    match read {
        Ok(None) => assert!(data.iter().all(u8::is_ascii_whitespace)),
        Ok(Some(r)) => {
            assert!(r.path.starts_with('/'), "{:?}", r.path);
            assert!(r.body.len() <= http::MAX_BODY && r.headers.len() <= http::MAX_HEADERS);
            assert!(r.headers.iter().all(|(n, _)| *n == n.to_ascii_lowercase()));
        }
        Err(e) => {
            assert!((400..500).contains(&e.status), "{e:?}");
            assert!(e.field.is_some() && !e.message.is_empty(), "{e:?}");
        }
    }
});
