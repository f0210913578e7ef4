//! The crate's integration tests, one module per file, linked as one binary: every test binary
//! is linked with the release profile's thin LTO, ~17 s of a CPU each, so one binary instead of
//! one per file saves minutes of every CI run.

mod ambiguity;
mod api_tls;
mod config;
