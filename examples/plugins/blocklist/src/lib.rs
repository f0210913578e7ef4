//! A wire between the VR's interfaces 0 and 1 (as the `wire` example) that drops IPv4 frames
//! from the sources its owner lists in table `blocked` (key: the address's four bytes, any
//! value), counting them in table `stats` under `dropped` (a little-endian u64). The owner
//! edits the list while it runs:
//!
//! ```sh
//! pearlctl plugin table lab blocked set 10.9.0.1 yes
//! pearlctl plugin table lab stats get dropped
//! ```
//!
//! It needs `plugin: {wasm: ..., tables: {blocked: N, stats: 1}}`.

use core::sync::atomic::{AtomicI32, Ordering};
use pearl_plugin_sdk::{plugin, Batch, Table};

// Room for a 64 KiB GSO super-packet from a host with default offloads.
plugin!(262144, process, init = init);

/// The tables' handles, found once per start (wasm32 runs one thread: relaxed is all it needs).
static BLOCKED: AtomicI32 = AtomicI32::new(-1);
static STATS: AtomicI32 = AtomicI32::new(-1);

fn init(_config: &str) -> bool {
    match (Table::find("blocked"), Table::find("stats")) {
        (Some(blocked), Some(stats)) => {
            BLOCKED.store(blocked.handle(), Ordering::Relaxed);
            STATS.store(stats.handle(), Ordering::Relaxed);
            true
        }
        // Refused at start, naming plugin.config: the configuration lacks the tables.
        _ => false,
    }
}

fn process(batch: &mut Batch) {
    let table = |h: &AtomicI32| Table::from_handle(h.load(Ordering::Relaxed));
    let (Some(blocked), Some(stats)) = (table(&BLOCKED), table(&STATS)) else { return };
    let mut dropped = 0u64;
    for i in 0..batch.len() {
        let mut frame = batch.frame(i);
        let data = frame.data();
        let ipv4 = data.len() >= 34 && data[12..14] == [0x08, 0x00];
        if ipv4 && blocked.contains(&data[26..30]) {
            frame.drop_it();
            dropped += 1;
            continue;
        }
        match frame.interface() {
            0 => frame.send(1),
            1 => frame.send(0),
            _ => frame.drop_it(),
        }
    }
    if dropped > 0 {
        let mut count = [0u8; 8];
        stats.get(b"dropped", &mut count);
        let total = u64::from_le_bytes(count) + dropped;
        // A full table cannot happen: `stats` holds this one key.
        let _ = stats.set(b"dropped", &total.to_le_bytes());
    }
}
