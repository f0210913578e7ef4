//! Lookup structures of the PEARL fast path: per-VR longest-prefix-match FIBs, read by
//! data-plane workers without locks while a control thread updates them (see [`rcu`]).

pub mod fib;
pub mod prefetch;
pub mod rcu;

pub use fib::{Fib, FibView, Ipv4Fib, Ipv6Fib, NextHopId, Prefix, RouteUpdate};
