//! Name-based forwarding, a protocol that is not IP. Its frames (EtherType 0x88B5, IEEE's
//! local experimental type) carry a hierarchical name such as `/video/cats/7`, and each VR
//! sends them on by the longest prefix of the name, in whole components, that it has a route
//! for — `/video/cats`, then `/video`, then `/`. A route leads to one or several of the VR's
//! interfaces: a name served in several places gets a copy towards each.
//!
//! After the Ethernet header (to the protocol's group address `01:00:5e:00:17:aa`, as NDN's
//! Ethernet faces use): `type: u8` (1 data, 2 announcement), `hops: u8` (left to go),
//! `name_len: u16` (big-endian), the name, then the payload.
//!
//! Routes live in table `names` (`plugin.tables: {names: N}`): key, the name prefix; value, a
//! little-endian u64 of VR interfaces (bit `i`: interface `i`). Announcements go to the VR's
//! kernel, where its control program (`names-control.py`, the VR's `control_plane`) learns
//! from them, writes the routes through pearld's API and announces on to its neighbours.
//!
//! A data frame leaves with one hop less, never by the interface it came in on; one with no
//! hop left, a malformed one or one without a route is dropped (as `program`). Frames of other
//! protocols go to the VR's kernel.

use core::sync::atomic::{AtomicI32, Ordering};
use pearl_plugin_sdk::{plugin, Batch, Table};

// Room for jumbo frames.
plugin!(262144, process, init = init);

pub const ETHERTYPE: [u8; 2] = [0x88, 0xb5];
pub const DATA: u8 = 1;
pub const ANNOUNCE: u8 = 2;
/// Where the name starts: after Ethernet, type, hops and the name's length.
const NAME_AT: usize = 18;

static NAMES: AtomicI32 = AtomicI32::new(-1);

fn init(_config: &str) -> bool {
    match Table::find("names") {
        Some(t) => {
            NAMES.store(t.handle(), Ordering::Relaxed);
            true
        }
        // Refused at start: the configuration lacks the routes' table.
        None => false,
    }
}

fn process(batch: &mut Batch) {
    let Some(names) = Table::from_handle(NAMES.load(Ordering::Relaxed)) else { return };
    for i in 0..batch.len() {
        let mut frame = batch.frame(i);
        let data = frame.data();
        if data.len() < 14 || data[12..14] != ETHERTYPE {
            // Not this protocol: the VR's kernel has its say (IPv6 neighbour discovery, ARP).
            frame.to_kernel();
            continue;
        }
        if data.len() < NAME_AT {
            frame.drop_it();
            continue;
        }
        let (kind, hops, name_len) = (data[14], data[15], usize::from(u16::from_be_bytes([data[16], data[17]])));
        match kind {
            ANNOUNCE => frame.to_kernel(),
            DATA if hops > 1 && NAME_AT + name_len <= data.len() => {
                let towards = longest_match(names, &data[NAME_AT..NAME_AT + name_len]) & !(1u64 << (frame.interface() & 63));
                if towards == 0 {
                    frame.drop_it();
                    continue;
                }
                frame.data_mut()[15] = hops - 1;
                let mut rest = towards;
                frame.send(rest.trailing_zeros() as u16);
                rest &= rest - 1;
                while rest != 0 {
                    frame.also_send(rest.trailing_zeros() as u16);
                    rest &= rest - 1;
                }
            }
            _ => frame.drop_it(),
        }
    }
}

/// The interfaces of the longest route that is a prefix of `name` in whole components (0: none).
fn longest_match(names: Table, name: &[u8]) -> u64 {
    let mut end = name.len();
    loop {
        let prefix = if end == 0 { b"/".as_slice() } else { &name[..end] };
        let mut value = [0u8; 8];
        if names.get(prefix, &mut value).is_some() {
            return u64::from_le_bytes(value);
        }
        if end == 0 {
            return 0;
        }
        end = name[..end].iter().rposition(|&b| b == b'/').unwrap_or(0);
    }
}
