//! A running worker allocates nothing per packet: forwarded frames, exceptions to the slow
//! path, broadcasts and malformed frames all pass while an allocator counts. A test binary of
//! its own, because the counting allocator is process-wide. In-memory ports stand in for real
//! ones (the system tests use veth).

mod common;

use common::udp_frame;
use pearl_control::parse_config;
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::{MemoryPort, Port};
use std::alloc::{GlobalAlloc, Layout, System};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; counting touches no memory it hands out.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

const CONFIG: &str = "workers: 1
ports:
  - {name: m0, interface: m0, driver: memory}
  - {name: m1, interface: m1, driver: memory}
vrs:
  - name: red
    code: ipv4
    interfaces:
      - {name: eth0, port: m0, mac: '02:00:00:00:01:00', addresses: [10.0.0.1/24]}
      - {name: eth1, port: m1, mac: '02:00:00:00:01:01', addresses: [10.1.0.1/24]}
    routes: [{prefix: 198.51.100.0/24, via: 10.1.0.2}]
    neighbors: [{ip: 10.1.0.2, mac: '02:aa:00:00:00:02', interface: eth1}]
";

#[test]
fn a_running_worker_allocates_nothing_per_packet() {
    let vr_mac = [2, 0, 0, 0, 1, 0];
    let forwarded = udp_frame(vr_mac, Ipv4Addr::new(198, 51, 100, 7), 64);
    let ttl_expired = udp_frame(vr_mac, Ipv4Addr::new(198, 51, 100, 8), 1);
    let no_route = udp_frame(vr_mac, Ipv4Addr::new(203, 0, 113, 9), 64);
    let broadcast = udp_frame([0xff; 6], Ipv4Addr::new(10, 0, 0, 255), 64);
    let truncated = forwarded[..20].to_vec();
    let frames = [&forwarded, &forwarded, &forwarded, &ttl_expired, &no_route, &broadcast, &truncated];
    let config = parse_config(CONFIG).expect("a valid config");
    let (d, _slow_path) = Dataplane::start(&config, |p, _, _| -> Result<Box<dyn Port>, _> {
        Ok(Box::new(if p == 0 { MemoryPort::new(frames) } else { MemoryPort::new(Vec::<Vec<u8>>::new()) }))
    })
    .expect("starts");
    let count = |d: &Dataplane| d.sum(|c| c.vrs[config.vrs[0].id as usize].forwarded_packets.get());
    let deadline = Instant::now() + Duration::from_secs(10);
    // Warm-up: the scratch arrays take their size from the first batches.
    while count(&d) < 100_000 {
        assert!(Instant::now() < deadline, "the worker does not forward");
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = count(&d);
    COUNTING.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(300));
    COUNTING.store(false, Ordering::Relaxed);
    let during = count(&d) - before;
    let allocations = ALLOCATIONS.load(Ordering::Relaxed);
    let exceptions: u64 = d.exceptions(config.vrs[0].id).iter().map(|(_, n)| n).sum();
    let malformed = d.sum(|c| c.ports[0].malformed.iter().map(|m| m.get()).sum());
    d.stop();
    assert!(during > 10_000, "only {during} packets forwarded while counting");
    assert!(exceptions > 0 && malformed > 0, "exceptions ({exceptions}) and malformed frames ({malformed}) took their paths");
    assert_eq!(allocations, 0, "{allocations} allocations while {during} packets were forwarded");
}
