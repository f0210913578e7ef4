//! The smallest useful plugin: whatever arrives on the VR's interface 0 leaves by interface 1
//! and the other way round, byte for byte (ARP, IP, any EtherType). Two hosts on one subnet
//! talk through it as through a cable. Built natively with the `process` feature, the same
//! code is a process plugin (`src/bin/wire-process.rs`).

use pearl_plugin_sdk::{plugin, Batch};

// Room for a 64 KiB GSO super-packet from a host with default offloads.
plugin!(262144, process);

pub fn process(batch: &mut Batch) {
    for i in 0..batch.len() {
        let mut frame = batch.frame(i);
        match frame.interface() {
            0 => frame.send(1),
            1 => frame.send(0),
            _ => frame.drop_it(),
        }
    }
}
