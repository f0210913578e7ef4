//! The crate's integration tests as modules of one binary, since each test binary pays the
//! release profile's thin LTO (~17 s of a CPU). A new test file is a `mod` here unless it needs a
//! process of its own.

mod ambiguity;
mod api_tls;
mod config;
mod vxlan;
