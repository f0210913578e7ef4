//! A route as a plugin's route calls answer it, whichever way the plugin is hosted: the VR
//! interface to send by and the MACs to write, or a negative code (`pearl_plugin_sdk::abi`).

use crate::area::NO_INTERFACE;
use pearl_plugin_sdk::abi::{ROUTE_LOCAL, ROUTE_NONE, ROUTE_UNRESOLVED};
use pearl_tables::nexthop::Adjacency;

/// The next hop's MAC and the interface's own.
pub type Macs = ([u8; 6], [u8; 6]);

/// `route` as an answer: `interface_of_port[port]` is the VR's interface on each port.
pub fn code_of(route: Option<Adjacency>, interface_of_port: &[u16]) -> (i32, Option<Macs>) {
    match route {
        Some(Adjacency::Forward { port, src, dst }) => match interface_of_port.get(usize::from(port)) {
            Some(&i) if i != NO_INTERFACE => (i32::from(i), Some((dst, src))),
            _ => (ROUTE_NONE, None),
        },
        Some(Adjacency::Glean { .. }) => (ROUTE_UNRESOLVED, None),
        Some(Adjacency::Local) => (ROUTE_LOCAL, None),
        None => (ROUTE_NONE, None),
    }
}
