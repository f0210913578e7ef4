//! Fuzzes routed's netlink decoder: any datagram (routes, neighbours, links, addresses, in any
//! order, as notifications or a dump) is applied to a kernel state or refused, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, datagram)) = data.split_first() else { return };
    pearl_routed::fuzzing::apply_netlink_datagram(datagram, mode & 1 == 1);
});
