//! Memory and pcap ports: replay, capture, and pcap files written and read back.

use pearl_dataplane::packet::{Packet, PacketPool};
use pearl_dataplane::port::{MemoryCounters, MemoryPort, PcapPort, Port};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// A pcap path unique to this process and test, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!("pearl-ports-{}-{name}.pcap", std::process::id())))
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Distinct frames of assorted lengths (60 to 1514 bytes), each tagged with its index.
fn frames(count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            let len = [60, 64, 128, 577, 1514][i % 5];
            let mut f: Vec<u8> = (0..len).map(|b| (b * 7 + i) as u8).collect();
            f[12..14].copy_from_slice(&[0x88, 0xb5]);
            f[14..18].copy_from_slice(&(i as u32).to_be_bytes());
            f
        })
        .collect()
}

fn data(batch: &[Packet]) -> Vec<Vec<u8>> {
    batch.iter().map(|p| p.data().to_vec()).collect()
}

#[test]
fn memory_rx_cycles_through_fresh_copies() {
    let src = frames(3);
    let mut port = MemoryPort::new(&src).stamp_in_port(7);
    let mut pool = PacketPool::new(16);
    let mut batch = Vec::new();
    assert_eq!(port.rx_batch(&mut pool, &mut batch, 7).unwrap(), 7);
    let expect: Vec<_> = (0..7).map(|i| src[i % 3].clone()).collect();
    assert_eq!(data(&batch), expect);
    assert!(batch.iter().all(|p| p.in_port == 7));

    // Rewriting a received copy must not change what the next batch receives.
    batch[2].data_mut().fill(0);
    pool.give_all(&mut batch);
    assert_eq!(port.rx_batch(&mut pool, &mut batch, 3).unwrap(), 3);
    assert_eq!(data(&batch), vec![src[1].clone(), src[2].clone(), src[0].clone()]);
    let bytes: usize = expect.iter().map(Vec::len).sum::<usize>() + src.iter().map(Vec::len).sum::<usize>();
    assert_eq!(port.rx_counters(), MemoryCounters { packets: 10, bytes: bytes as u64 });
}

#[test]
fn memory_rx_stops_when_the_pool_runs_dry() {
    let mut port = MemoryPort::new(frames(2));
    let mut pool = PacketPool::new(5);
    let mut batch = Vec::new();
    assert_eq!(port.rx_batch(&mut pool, &mut batch, 32).unwrap(), 5);
    assert_eq!(port.rx_batch(&mut pool, &mut batch, 32).unwrap(), 0);
    assert_eq!(MemoryPort::new(Vec::<Vec<u8>>::new()).rx_batch(&mut PacketPool::new(4), &mut batch, 4).unwrap(), 0);
}

#[test]
fn memory_rx_stamps_each_frame_with_its_own_port() {
    let src = frames(2);
    let mut port = MemoryPort::with_in_ports([(3, &src[0]), (9, &src[1])]);
    let mut pool = PacketPool::new(8);
    let mut batch = Vec::new();
    port.rx_batch(&mut pool, &mut batch, 4).unwrap();
    assert_eq!(batch.iter().map(|p| p.in_port).collect::<Vec<_>>(), [3, 9, 3, 9]);
}

#[test]
fn memory_tx_counts_and_captures_the_last_frames() {
    let src = frames(5);
    let mut rx = MemoryPort::new(&src);
    let mut tx = MemoryPort::new(Vec::<Vec<u8>>::new()).capture_last(3);
    let mut pool = PacketPool::new(8);
    let mut batch = Vec::new();
    rx.rx_batch(&mut pool, &mut batch, 5).unwrap();
    assert_eq!(tx.tx_batch(&mut batch, &mut pool).unwrap(), 5);
    assert!(batch.is_empty());
    assert_eq!(pool.available(), 8, "tx returns every buffer");
    let captured: Vec<Vec<u8>> = tx.captured().map(<[u8]>::to_vec).collect();
    assert_eq!(captured, src[2..].to_vec());
    let bytes = src.iter().map(Vec::len).sum::<usize>() as u64;
    assert_eq!(tx.tx_counters(), MemoryCounters { packets: 5, bytes });

    let mut counting = MemoryPort::new(Vec::<Vec<u8>>::new());
    rx.rx_batch(&mut pool, &mut batch, 2).unwrap();
    counting.tx_batch(&mut batch, &mut pool).unwrap();
    assert_eq!(counting.captured().count(), 0);
    assert_eq!(counting.tx_counters().packets, 2);
}

#[test]
fn pcap_round_trip() {
    let file = TempFile::new("round-trip");
    let src = frames(40);
    let mut pool = PacketPool::new(64);
    let mut batch = Vec::new();
    {
        let mut gen = MemoryPort::new(&src);
        let mut out = PcapPort::writer(file.path()).unwrap();
        for _ in 0..4 {
            gen.rx_batch(&mut pool, &mut batch, 10).unwrap();
            assert_eq!(out.tx_batch(&mut batch, &mut pool).unwrap(), 10);
        }
        assert_eq!(out.counters().tx_packets, 40);
        // Dropping the port flushes the buffered tail.
    }
    let mut input = PcapPort::reader(file.path(), false).unwrap().stamp_in_port(2);
    let mut got = Vec::new();
    while !input.rx_exhausted() {
        input.rx_batch(&mut pool, &mut batch, 16).unwrap();
        got.extend(batch.iter().map(|p| (p.in_port, p.data().to_vec())));
        pool.give_all(&mut batch);
    }
    assert_eq!(got, src.iter().map(|f| (2, f.clone())).collect::<Vec<_>>());
    assert_eq!(input.rx_batch(&mut pool, &mut batch, 16).unwrap(), 0);
    assert_eq!(pool.available(), 64);
}

#[test]
fn pcap_rx_loops_and_a_port_forwards_between_files() {
    let (input, output) = (TempFile::new("loop-in"), TempFile::new("loop-out"));
    let src = frames(3);
    let mut pool = PacketPool::new(16);
    let mut batch = Vec::new();
    {
        let mut w = PcapPort::writer(input.path()).unwrap();
        MemoryPort::new(&src).rx_batch(&mut pool, &mut batch, 3).unwrap();
        w.tx_batch(&mut batch, &mut pool).unwrap();
        w.flush().unwrap();
    }
    let mut port = PcapPort::open(Some(input.path()), true, Some(output.path())).unwrap();
    assert_eq!(port.rx_batch(&mut pool, &mut batch, 8).unwrap(), 8, "a looping input never runs out");
    assert!(!port.rx_exhausted());
    assert_eq!(port.tx_batch(&mut batch, &mut pool).unwrap(), 8);
    port.flush().unwrap();

    let mut check = PcapPort::reader(output.path(), false).unwrap();
    check.rx_batch(&mut pool, &mut batch, 16).unwrap();
    assert_eq!(data(&batch), (0..8).map(|i| src[i % 3].clone()).collect::<Vec<_>>());
}

#[test]
fn pcap_looping_over_an_empty_capture_returns_nothing() {
    let file = TempFile::new("empty");
    drop(PcapPort::writer(file.path()).unwrap());
    let mut port = PcapPort::reader(file.path(), true).unwrap();
    let mut pool = PacketPool::new(4);
    let mut batch = Vec::new();
    assert_eq!(port.rx_batch(&mut pool, &mut batch, 4).unwrap(), 0);
}

#[test]
fn pcap_refuses_malformed_headers_naming_the_field() {
    let file = TempFile::new("malformed");
    drop(PcapPort::writer(file.path()).unwrap());
    let good = std::fs::read(file.path()).unwrap();
    let mut cases = Vec::new();
    let mut bad = good.clone();
    bad[0..4].copy_from_slice(&[0x0a, 0x0d, 0x0d, 0x0a]); // a pcapng file
    cases.push((bad, "magic_number"));
    let mut bad = good.clone();
    bad[4..6].copy_from_slice(&1u16.to_ne_bytes());
    cases.push((bad, "version_major"));
    let mut bad = good.clone();
    bad[20..24].copy_from_slice(&101u32.to_ne_bytes()); // raw IP
    cases.push((bad, "network"));
    cases.push((good[..10].to_vec(), "shorter than"));
    for (bytes, field) in cases {
        std::fs::write(file.path(), bytes).unwrap();
        let Err(e) = PcapPort::reader(file.path(), false) else { panic!("accepted a header with a bad {field}") };
        let msg = e.to_string();
        assert_eq!(e.kind(), ErrorKind::InvalidData, "{msg}");
        assert!(msg.contains(field) && msg.contains(&file.path().display().to_string()), "{msg}");
    }
    let e = PcapPort::reader(Path::new("/nonexistent/pearl.pcap"), false).err().unwrap();
    assert!(e.to_string().contains("/nonexistent/pearl.pcap: open"), "{e}");
}
