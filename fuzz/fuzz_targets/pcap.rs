//! Fuzzes the pcap reader behind `driver: pcap` ports: any file is read record by record to
//! its end or refused with an error, never a panic, and no frame is larger than the buffer.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pearl_dataplane::port::pcap_file::{PcapReader, Record};
use std::io::Cursor;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = PcapReader::new(Cursor::new(data)) else { return };
    let mut buf = [0u8; 2048];
    for _ in 0..10_000 {
        match reader.next_into(&mut buf) {
            Ok(Record::Frame(n)) => assert!(n <= buf.len()),
            Ok(Record::Oversized(n)) => assert!(n as usize > buf.len()),
            Ok(Record::End) | Err(_) => return,
        }
    }
});
