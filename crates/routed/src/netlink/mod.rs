//! A small rtnetlink client: framing, the messages routed reads, dump requests, the socket.

pub mod consts;
pub mod link;
pub mod message;
pub mod neigh;
pub mod request;
pub mod route;
pub mod socket;
