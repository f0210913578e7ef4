//! Zero-copy packet views for the PEARL data plane, in the style of smoltcp's `wire` module.
//!
//! Each protocol is a `Packet<T: AsRef<[u8]>>` view over a buffer with a `field` module of byte
//! ranges; `new_checked` validates once so accessors never read out of bounds; mutation happens in
//! place when `T: AsMut<[u8]>`.

pub mod flow_key;

pub use flow_key::{Field, FlowKey};
