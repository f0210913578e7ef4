//! The emulated link of an impaired VR interface, driven directly: held packets leave no sooner
//! than their delay, jitter stays in its bounds and spreads evenly, a rate spaces packets by
//! their length, and loss and duplication come at the asked frequency. The reference is what
//! netem documents for the same parameters.

use pearl_control::{parse_config, Config, Impairment};
use pearl_dataplane::counters::WorkerCounters;
use pearl_dataplane::impair::{ImpairedOutput, Impairments, LinkImpairment};
use pearl_dataplane::output::{OutputSink, Schedulers};
use pearl_dataplane::packet::PacketPool;
use pearl_dataplane::plan::schedulers::build_schedulers;

const MS: u64 = 1_000_000;

fn config() -> Config {
    parse_config(
        "ports: [{name: m0, interface: m0, driver: memory}, {name: m1, interface: m1, driver: memory}]
vrs:
  - name: red
    id: 1
    queues: [{weight: 1, length: 100000}]
    interfaces:
      - {name: eth0, port: m0, mac: '02:00:00:00:01:00'}
      - {name: eth1, port: m1, mac: '02:00:00:00:01:01'}
",
    )
    .unwrap()
}

struct Link {
    schedulers: Schedulers,
    impairments: Impairments,
    counters: WorkerCounters,
    pool: PacketPool,
}

impl Link {
    fn new(params: Impairment) -> Link {
        let c = config();
        let mut impairments = Impairments::default();
        impairments.apply(&[LinkImpairment { port: 1, vr: 1, params }]);
        Link { schedulers: build_schedulers(&c).unwrap(), impairments, counters: WorkerCounters::new(2, 8), pool: PacketPool::new(20_000) }
    }

    /// Sends `n` frames of `len` bytes at time `now`; returns how many were refused.
    fn send(&mut self, n: usize, len: usize, now: u64) -> usize {
        let mut run: Vec<_> = (0..n)
            .map(|_| {
                self.pool
                    .take_for(len)
                    .map(|mut p| {
                        p.fill(&vec![0u8; len]);
                        p
                    })
                    .unwrap()
            })
            .collect();
        let mut refused = Vec::new();
        let mut out =
            ImpairedOutput { schedulers: &mut self.schedulers, impairments: &mut self.impairments, counters: &self.counters, now };
        out.enqueue_run(1, 1, 0, &mut run, &mut refused);
        let r = refused.len();
        self.pool.give_all(&mut refused);
        r
    }

    /// Packets that left the link by `now` (into the port's scheduler), taken out.
    fn released(&mut self, now: u64) -> usize {
        let n = self.impairments.release(now, &mut self.schedulers, &mut self.pool, &self.counters);
        let mut out = Vec::new();
        while self.schedulers.ports[1].dequeue_batch(now, &mut out, 64) > 0 {}
        self.pool.give_all(&mut out);
        n
    }
}

#[test]
fn a_delayed_packet_leaves_when_its_delay_is_over_and_not_before() {
    let mut link = Link::new(Impairment { delay_ns: 20 * MS, ..Impairment::default() });
    assert_eq!(link.send(10, 100, 1000), 0);
    assert_eq!(link.released(1000 + 20 * MS - 1), 0);
    assert_eq!(link.impairments.next_due(), Some(1000 + 20 * MS));
    assert_eq!(link.released(1000 + 20 * MS), 10);
    assert_eq!(link.impairments.next_due(), None);
}

#[test]
fn jitter_stays_within_its_bounds_and_spreads_evenly() {
    let mut link = Link::new(Impairment { delay_ns: 20 * MS, jitter_ns: 5 * MS, ..Impairment::default() });
    assert_eq!(link.send(1000, 100, 0), 0);
    let mut buckets = [0usize; 10];
    let mut t = 0;
    while t <= 30 * MS {
        let n = link.released(t);
        if n > 0 {
            assert!((15 * MS..=25 * MS).contains(&t), "released at {t} ns");
            buckets[(((t - 15 * MS) / MS) as usize).min(9)] += n;
        }
        t += 100_000;
    }
    assert_eq!(buckets.iter().sum::<usize>(), 1000);
    for b in buckets {
        assert!((60..=140).contains(&b), "{buckets:?}: a tenth of 1000 each, as a uniform spread");
    }
}

#[test]
fn a_rate_spaces_packets_by_their_length() {
    // 1,250-byte packets at 10 Mb/s: one per millisecond.
    let mut link = Link::new(Impairment { rate_bps: Some(10_000_000), ..Impairment::default() });
    assert_eq!(link.send(100, 1250, 0), 0);
    for k in 1..=100u64 {
        assert_eq!(link.released(k * MS - 1), 0, "packet {k} early");
        assert_eq!(link.released(k * MS), 1, "packet {k} on time");
    }
}

#[test]
fn loss_and_duplication_come_at_their_frequency() {
    let mut link = Link::new(Impairment { loss: 0.25, duplicate: 0.1, ..Impairment::default() });
    let mut delivered = 0;
    for round in 0..100 {
        assert_eq!(link.send(100, 64, round), 0);
        delivered += link.released(round);
    }
    let lost = link.counters.vrs[1].impaired_lost.get() as usize;
    let dup = link.counters.vrs[1].impaired_duplicates.get() as usize;
    assert!((2250..=2750).contains(&lost), "{lost} of 10000 lost at 25 %");
    assert!((600..=900).contains(&dup), "{dup} of {} duplicated at 10 %", 10_000 - lost);
    assert_eq!(delivered, 10_000 - lost + dup);
    assert_eq!(link.pool.available(), link.pool.capacity(), "every buffer back in the pool");
}

#[test]
fn a_full_link_refuses_and_a_lifted_one_still_delivers_what_it_held() {
    let mut link = Link::new(Impairment { delay_ns: 10 * MS, ..Impairment::default() });
    assert_eq!(link.send(1500, 64, 0), 500, "a link holds 1,000 packets, as netem's default limit");
    link.impairments.apply(&[]);
    assert_eq!(link.send(10, 64, 1), 0);
    assert!(!link.schedulers.ports[1].is_empty(), "unimpaired packets go straight to the scheduler");
    assert_eq!(link.released(1), 0);
    assert_eq!(link.released(10 * MS), 1000, "what the lifted link held leaves when due");
    assert!(link.impairments.is_idle());
}
