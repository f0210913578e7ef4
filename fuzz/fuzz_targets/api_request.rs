//! Fuzzes the check of a connection's first request head (`crates/pearld/src/http.rs`): any
//! bytes a client sends are taken as a head within the limits, or refused with a 4xx naming the
//! part at fault.
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
    let mut conn = data;
    let read = runtime.block_on(http::read_first_head(&mut conn, Instant::now() + Duration::from_secs(5)));
    match read {
        Ok(None) => assert!(data.iter().all(u8::is_ascii_whitespace)),
        Ok(Some(read)) => {
            assert!(data.starts_with(&read), "what was read is what was sent");
            assert!(read.iter().position(|&b| b == b'\n').is_some_and(|end| end <= http::MAX_HEAD));
        }
        Err(e) => {
            assert!((400..500).contains(&e.status), "{e:?}");
            assert!(e.field.is_some() && !e.message.is_empty(), "{e:?}");
        }
    }
});
