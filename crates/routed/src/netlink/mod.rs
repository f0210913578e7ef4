//! A small rtnetlink client: framing, the messages routed reads, dump requests, the socket.
//!
//! Hand-written rather than taken from netlink-packet-route (and rtnetlink over it) because of
//! the full-table dump: a VR whose control plane holds a full BGP table makes routed read a
//! million routes at its start and after every overrun, and these views read the few attributes
//! routed needs in place, in the receive buffer, where netlink-packet-route decodes every
//! attribute of every message into owned values (an allocation or more per route), and
//! rtnetlink adds an async runtime routed's one thread does not need.

pub mod consts;
pub mod link;
pub mod message;
pub mod neigh;
pub mod request;
pub mod route;
pub mod socket;
