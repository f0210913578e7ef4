//! The scheduler's hot path allocates nothing but the slots of each queue and of each VR's list
//! of backlogged queues, once, when its first packet arrives (idle VRs hold no memory, and a
//! plan made for thousands of VRs allocates nothing per VR): real pool packets go through enqueue and
//! dequeue (with rates, drops and a run-time weight change) under an allocator that counts.
//! A test binary of its own, because the counting allocator is process-wide.

use pearl_dataplane::packet::PacketPool;
use pearl_dataplane::sched::{PortSchedConfig, PortScheduler, QueueConfig, QueueId, RateLimit, VrClassConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct CountingAlloc;

thread_local! {
    /// Allocations made by this thread while counting; other threads (the test harness) are
    /// not counted.
    static ALLOCATIONS: Cell<Option<u64>> = const { Cell::new(None) };
}

// SAFETY: every call is passed on to the system allocator unchanged; counting touches no memory it hands out.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get().map(|n| n + 1)));
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn enqueue_and_dequeue_do_not_allocate() {
    let queues = |weights: &[u32]| weights.iter().map(|&weight| QueueConfig { weight, length: 64 }).collect();
    let config = PortSchedConfig {
        rate: Some(RateLimit::new(1_000_000_000)),
        vrs: vec![
            VrClassConfig { rate: Some(RateLimit::new(100_000_000)), share: None, queues: queues(&[2, 1]) },
            VrClassConfig { rate: None, share: Some(2), queues: queues(&[3]) },
        ],
    };
    let mut sched = PortScheduler::new(&config).unwrap();
    let mut pool = PacketPool::new(512);
    let mut out = Vec::with_capacity(32);
    let frame = [0u8; 1000];

    ALLOCATIONS.with(|a| a.set(Some(0)));
    for step in 0..20_000u64 {
        for q in 0..3 {
            // More arrivals than the queues hold: some are tail-dropped and recycled.
            for _ in 0..12 {
                let Some(mut pkt) = pool.take() else { break };
                pkt.fill(&frame[..64 + (step as usize * 37 + q * 101) % 900]);
                let len = pkt.len() as u32;
                if let Err(dropped) = sched.enqueue(QueueId(q as u32), pkt, len) {
                    pool.give(dropped);
                }
            }
        }
        if step == 10_000 {
            sched.set_weight(QueueId(2), 1).unwrap();
        }
        sched.dequeue_batch(step * 10_000, &mut out, 32);
        pool.give_all(&mut out);
    }
    let allocations = ALLOCATIONS.with(|a| a.replace(None));

    assert_eq!(allocations, Some(3 + 2), "one allocation per queue and per VR, for their slots, and nothing per packet");
    assert!(sched.stats(QueueId(0)).dropped_packets > 0, "the run exercised tail drops");
    assert!(sched.stats(QueueId(2)).sent_packets > 0);
}
