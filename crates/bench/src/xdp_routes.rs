//! The routes of `examples/xdp/router.c` for the pipeline benchmark: the VR's table written
//! into the program's LPM-trie map `routes` as its owner would through the API, so that the
//! XDP router forwards what the built-in one does.

use pearl_control::{IpPrefix, VrConfig};
use pearl_plugin::PluginTables;
use std::net::IpAddr;

/// Writes each IPv4 route of `vr` into table `routes`, if the program has one: key
/// `{prefixlen: u32, addr: [u8; 4]}`, value `{interface: u32, dst: MAC, src: MAC}` (the
/// route's interface, its next hop's MAC from the VR's neighbours, the interface's own MAC).
pub fn fill(tables: &PluginTables, vr: &VrConfig) -> Result<(), String> {
    if tables.find(b"routes").is_none() {
        return Ok(());
    }
    for route in &vr.routes {
        let IpPrefix { addr: IpAddr::V4(addr), len } = route.prefix else { continue };
        let next_hop = vr.neighbors.iter().find(|n| n.ip == route.via).ok_or_else(|| format!("no neighbour for {}", route.via))?;
        let key = [&u32::from(len).to_le_bytes()[..], &addr.octets()].concat();
        let value = [&(route.interface as u32).to_le_bytes()[..], &next_hop.mac, &vr.interfaces[route.interface].mac].concat();
        tables.set("routes", &key, &value).map_err(|e| format!("table routes: {e}"))?;
    }
    Ok(())
}
