//! The rtnetlink codec routed and pearld share: framing, the messages routed reads (links,
//! addresses, routes, neighbours), dump and namespace-id requests, the change requests pearld
//! sends to configure a VR's namespace, and the socket. Every read of kernel bytes is
//! bounds-checked (the `netlink` fuzz target, scripts/fuzz.sh, drives routed's use of it).
//!
//! Hand-written rather than taken from netlink-packet-route (and rtnetlink over it) because of
//! the full-table dump: a VR whose control plane holds a full BGP table makes routed read a
//! million routes at its start and after every overrun, and these views read the few attributes
//! routed needs in place, in the receive buffer, where netlink-packet-route decodes every
//! attribute of every message into owned values (an allocation or more per route), and
//! rtnetlink adds an async runtime routed's one thread does not need.
//!
//! The decoders routed calls once per message are `#[inline]`: inside routed they were inlined
//! into its dump loop, and a build without LTO inlines across crates only what is marked.

pub mod change;
pub mod consts;
pub mod link;
pub mod message;
pub mod neigh;
pub mod request;
pub mod route;
pub mod socket;
