//! The output scheduler against its requirements: WDRR shares, VR and port rates, work
//! conservation, run-time changes, and a property test against ideal fair shares. Time is
//! simulated; packets are small structs.

use pearl_dataplane::sched::{
    PortSchedConfig, PortScheduler, QueueConfig, QueueId, RateLimit, VrClassConfig, VrClassId, MIN_QUANTUM_BYTES,
};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const BATCH: usize = 32;
const QUEUE_LENGTH: usize = 2 * BATCH;
const MIN_FRAME: u32 = 64;
const MAX_FRAME: u32 = 1518;
const SECOND: u64 = 1_000_000_000;

struct Frame {
    queue: u32,
    len: u32,
}

/// A scheduler whose queues are kept full (always backlogged) with frames of random sizes.
struct Rig {
    sched: PortScheduler<Frame>,
    rng: SmallRng,
    now_ns: u64,
    out: Vec<Frame>,
}

impl Rig {
    fn new(config: PortSchedConfig, seed: u64) -> Rig {
        let sched = PortScheduler::new(&config).unwrap();
        let mut rig = Rig { sched, rng: SmallRng::seed_from_u64(seed), now_ns: 0, out: Vec::with_capacity(BATCH) };
        rig.top_up();
        rig
    }

    /// Fills every queue to its length without overflowing it (the test queues are longer than
    /// a batch, so none empties between two top-ups).
    fn top_up(&mut self) {
        for q in 0..self.sched.queue_count() as u32 {
            let room = QUEUE_LENGTH as u64 - self.sched.stats(QueueId(q)).backlog_packets;
            for _ in 0..room {
                let len = self.rng.gen_range(MIN_FRAME..=MAX_FRAME);
                assert!(self.sched.enqueue(QueueId(q), Frame { queue: q, len }, len).is_ok());
            }
        }
    }

    /// One batch at the current time, then the queues are refilled.
    fn step(&mut self) -> usize {
        self.out.clear();
        let n = self.sched.dequeue_batch(self.now_ns, &mut self.out, BATCH);
        for f in &self.out {
            assert!(f.len >= MIN_FRAME && f.queue < self.sched.queue_count() as u32);
        }
        self.top_up();
        n
    }

    /// Polls every `poll_ns` of simulated time until `until_ns`.
    fn run_until(&mut self, until_ns: u64, poll_ns: u64) {
        while self.now_ns < until_ns {
            self.now_ns += poll_ns;
            self.step();
        }
    }

    fn sent_bytes(&self) -> Vec<u64> {
        (0..self.sched.queue_count() as u32).map(|q| self.sched.stats(QueueId(q)).sent_bytes).collect()
    }

    /// Sent bytes per VR.
    fn vr_bytes(&self) -> Vec<u64> {
        (0..self.sched.vr_count() as u32)
            .map(|v| (0..).map_while(|i| self.sched.queue_id(VrClassId(v), i)).map(|q| self.sched.stats(q).sent_bytes).sum())
            .collect()
    }
}

fn queue(weight: u32) -> QueueConfig {
    QueueConfig { weight, length: QUEUE_LENGTH }
}

fn vr(rate: Option<RateLimit>, weights: &[u32]) -> VrClassConfig {
    VrClassConfig { rate, share: None, queues: weights.iter().map(|&w| queue(w)).collect() }
}

fn diff(after: &[u64], before: &[u64]) -> Vec<u64> {
    after.iter().zip(before).map(|(a, b)| a - b).collect()
}

/// Each entry's share of the total, in percent.
fn shares_percent(bytes: &[u64]) -> Vec<f64> {
    let total: u64 = bytes.iter().sum();
    bytes.iter().map(|&b| 100.0 * b as f64 / total as f64).collect()
}

fn mbps(bytes: u64, ns: u64) -> f64 {
    bytes as f64 * 8.0 * 1_000.0 / ns as f64
}

/// Asserts `actual` is within `tolerance_percent` of `expected`, relative to `expected`.
fn assert_within(what: &str, actual: f64, expected: f64, tolerance_percent: f64) {
    let error = 100.0 * (actual - expected).abs() / expected;
    assert!(error <= tolerance_percent, "{what}: {actual:.3}, expected {expected:.3} ± {tolerance_percent} % (off by {error:.3} %)");
}

const WEIGHTS: [u32; 5] = [30, 25, 20, 15, 10];

/// Runs the five always-backlogged queues and checks byte shares to ±2 percentage points.
fn check_weight_shares(config: PortSchedConfig) {
    let mut rig = Rig::new(config, 7);
    for _ in 0..10_000 {
        assert_eq!(rig.step(), BATCH, "an uncapped, backlogged port fills every batch");
    }
    let shares = shares_percent(&rig.sent_bytes());
    for (share, weight) in shares.iter().zip(WEIGHTS) {
        assert!((share - f64::from(weight)).abs() <= 2.0, "byte shares {shares:.3?} vs weights {WEIGHTS:?} (percentage points)");
    }
    for q in 0..5 {
        assert_eq!(rig.sched.stats(QueueId(q)).dropped_packets, 0);
    }
}

#[test]
fn five_backlogged_vrs_share_by_weight() {
    check_weight_shares(PortSchedConfig { rate: None, vrs: WEIGHTS.iter().map(|&w| vr(None, &[w])).collect() });
}

#[test]
fn five_backlogged_queues_of_one_vr_share_by_weight() {
    check_weight_shares(PortSchedConfig { rate: None, vrs: vec![vr(None, &WEIGHTS)] });
}

#[test]
fn a_vr_share_holds_however_its_queues_are_weighted() {
    // The operator gives both VRs share 1; the first VR's owner weights its queues 50 and 50,
    // which without shares would take 100/101 of the port.
    let vrs = vec![VrClassConfig { share: Some(1), ..vr(None, &[50, 50]) }, VrClassConfig { share: Some(1), ..vr(None, &[1]) }];
    let mut rig = Rig::new(PortSchedConfig { rate: None, vrs }, 11);
    for _ in 0..10_000 {
        rig.step();
    }
    let vr_shares = shares_percent(&rig.vr_bytes());
    assert!((vr_shares[0] - 50.0).abs() <= 2.0, "VR shares {vr_shares:.3?}, set 1:1");
    let sent = rig.sent_bytes();
    let inside = shares_percent(&sent[..2]);
    assert!((inside[0] - 50.0).abs() <= 2.0, "the first VR's queues {inside:.3?}, weighted 50:50");
}

#[test]
fn a_capped_vr_gets_its_rate_and_the_rest_goes_to_the_other() {
    // Equal weights would give each VR 500 Mb/s; VR 0 is capped at 100 and VR 1 takes the rest.
    let config = PortSchedConfig {
        rate: Some(RateLimit::new(1_000_000_000)),
        vrs: vec![vr(Some(RateLimit::new(100_000_000)), &[50]), vr(None, &[50])],
    };
    let mut rig = Rig::new(config, 11);
    let poll = 10_000;
    rig.run_until(SECOND / 5, poll); // past the initial bursts
    let before = rig.vr_bytes();
    rig.run_until(SECOND / 5 + 2 * SECOND, poll);
    let sent = diff(&rig.vr_bytes(), &before);
    let window = 2 * SECOND;
    assert_within("capped VR, Mb/s", mbps(sent[0], window), 100.0, 2.0);
    assert_within("other VR, Mb/s", mbps(sent[1], window), 900.0, 2.0);
    assert_within("port, Mb/s", mbps(sent[0] + sent[1], window), 1_000.0, 2.0);
}

#[test]
fn the_port_cap_holds_and_weights_share_it() {
    let config = PortSchedConfig { rate: Some(RateLimit::new(200_000_000)), vrs: vec![vr(None, &[3]), vr(None, &[1])] };
    let mut rig = Rig::new(config, 13);
    let poll = 25_000;
    rig.run_until(SECOND / 10, poll);
    let before = rig.vr_bytes();
    rig.run_until(SECOND / 10 + SECOND, poll);
    let sent = diff(&rig.vr_bytes(), &before);
    assert_within("port, Mb/s", mbps(sent[0] + sent[1], SECOND), 200.0, 2.0);
    assert_within("VR 0 share, %", shares_percent(&sent)[0], 75.0, 2.0);
}

#[test]
fn a_weight_changed_at_run_time_takes_effect() {
    let mut rig = Rig::new(PortSchedConfig { rate: None, vrs: vec![vr(None, &[1]), vr(None, &[1])] }, 17);
    for _ in 0..2_000 {
        rig.step();
    }
    let first = rig.sent_bytes();
    assert!((shares_percent(&first)[0] - 50.0).abs() <= 2.0);
    rig.sched.set_weight(QueueId(0), 3).unwrap();
    for _ in 0..4_000 {
        rig.step();
    }
    let second = diff(&rig.sent_bytes(), &first);
    assert!((shares_percent(&second)[0] - 75.0).abs() <= 2.0, "shares after the change: {:?}", shares_percent(&second));
}

#[test]
fn rates_changed_at_run_time_take_effect_and_lose_nothing() {
    let config = PortSchedConfig { rate: None, vrs: vec![vr(Some(RateLimit::new(100_000_000)), &[1]), vr(None, &[1])] };
    let mut rig = Rig::new(config, 19);
    let poll = 20_000;
    rig.run_until(SECOND / 2, poll);
    rig.sched.set_vr_rate(VrClassId(0), Some(RateLimit::new(300_000_000)), rig.now_ns).unwrap();
    rig.run_until(SECOND / 2 + SECOND / 10, poll);
    let before = rig.vr_bytes();
    rig.run_until(SECOND / 2 + SECOND / 10 + SECOND, poll);
    assert_within("raised cap, Mb/s", mbps(rig.vr_bytes()[0] - before[0], SECOND), 300.0, 2.0);

    // Lifted: both VRs are uncapped and the port too, so they split by weight.
    rig.sched.set_vr_rate(VrClassId(0), None, rig.now_ns).unwrap();
    let before = rig.sent_bytes();
    for _ in 0..2_000 {
        rig.step();
    }
    let share = shares_percent(&diff(&rig.sent_bytes(), &before))[0];
    assert!((share - 50.0).abs() <= 2.0, "uncapped share {share:.3} %");

    // Capping the port at run time holds too.
    rig.sched.set_port_rate(Some(RateLimit::new(50_000_000)), rig.now_ns).unwrap();
    let start = rig.now_ns;
    rig.run_until(start + SECOND / 10, poll);
    let before: u64 = rig.vr_bytes().iter().sum();
    rig.run_until(start + SECOND / 10 + SECOND, poll);
    let after: u64 = rig.vr_bytes().iter().sum();
    assert_within("port cap set at run time, Mb/s", mbps(after - before, SECOND), 50.0, 2.0);

    for q in 0..2 {
        let s = rig.sched.stats(QueueId(q));
        assert_eq!(s.enqueued_packets, s.sent_packets + s.backlog_packets, "queue {q} lost packets");
        assert_eq!(s.dropped_packets, 0);
    }
}

#[test]
fn a_queue_filled_past_its_length_drops_exactly_the_overflow() {
    let config = PortSchedConfig { rate: None, vrs: vec![vr(None, &[1]), vr(None, &[1])] };
    let mut sched: PortScheduler<u32> = PortScheduler::new(&config).unwrap();
    let length = QUEUE_LENGTH as u32;
    let refused = (0..length + 100).filter(|&i| sched.enqueue(QueueId(1), i, 100).is_err()).count();
    assert_eq!(refused, 100);
    let s = sched.stats(QueueId(1));
    assert_eq!((s.dropped_packets, s.dropped_bytes, s.backlog_packets), (100, 10_000, u64::from(length)));
    assert_eq!(sched.stats(QueueId(0)).dropped_packets, 0, "drops are counted on their own queue");
}

/// Shares 1..100 for 1..4 VRs, each with 1..3 queues weighted 1..100, and a seed for the frame
/// sizes.
fn vr_shares() -> impl Strategy<Value = (Vec<(u32, Vec<u32>)>, u64)> {
    (prop::collection::vec((1u32..=100, prop::collection::vec(1u32..=100, 1..=3)), 1..=4), any::<u64>())
}

/// Weights 1..100 grouped into 1..4 VRs of 1..3 queues, and a seed for the frame sizes.
fn vr_weights() -> impl Strategy<Value = (Vec<Vec<u32>>, u64)> {
    (prop::collection::vec(prop::collection::vec(1u32..=100, 1..=3), 1..=4), any::<u64>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// With every queue backlogged, each queue's bytes stay within the bound derived in
    /// `sched/wdrr.rs` of the ideal fair share `T * w_i / W`, after every batch:
    /// `4 Q_i + (n + n_v + 2) M`, where `Q_i` is the queue's quantum, `n` the number of VRs,
    /// `n_v` the queues of its VR and `M` the largest frame.
    #[test]
    fn shares_stay_near_the_ideal_fair_share((weights, seed) in vr_weights()) {
        let config = PortSchedConfig { rate: None, vrs: weights.iter().map(|w| vr(None, w)).collect() };
        let mut rig = Rig::new(config, seed);
        let flat: Vec<u64> = weights.iter().flatten().map(|&w| u64::from(w)).collect();
        let total_weight: u64 = flat.iter().sum();
        let per_weight = MIN_QUANTUM_BYTES.div_ceil(*flat.iter().min().unwrap());
        let n = weights.len() as u64;
        let bounds: Vec<f64> = weights
            .iter()
            .flat_map(|w| w.iter().map(move |&wi| (wi, w.len() as u64)))
            .map(|(wi, n_v)| (4 * u64::from(wi) * per_weight + (n + n_v + 2) * u64::from(MAX_FRAME)) as f64)
            .collect();
        // Thirty rounds, so that the bound is a small part of what was sent.
        let target = 30 * total_weight * per_weight;
        let mut total = 0;
        while total < target {
            rig.step();
            let sent = rig.sent_bytes();
            total = sent.iter().sum();
            for (i, &s) in sent.iter().enumerate() {
                let ideal = total as f64 * flat[i] as f64 / total_weight as f64;
                prop_assert!(
                    (s as f64 - ideal).abs() < bounds[i],
                    "queue {} (weight {}) sent {} of {}, ideal {:.0}, bound {:.0}",
                    i, flat[i], s, total, ideal, bounds[i]
                );
            }
        }
    }

    /// With operator shares, each VR's bytes stay within `2 Q_v + (n + 1) M` of `T * s_v / S`
    /// (the VR level of the bound in `sched/wdrr.rs`, with `Q_v` the share's quantum), and each
    /// queue's within `2 Q_i + (n_v + 1) M` of its weight's part of what its VR sent.
    #[test]
    fn vr_shares_stay_near_the_ideal_fair_share((vrs, seed) in vr_shares()) {
        let config = PortSchedConfig {
            rate: None,
            vrs: vrs.iter().map(|(s, w)| VrClassConfig { share: Some(*s), ..vr(None, w) }).collect(),
        };
        let mut rig = Rig::new(config, seed);
        let total_share: u64 = vrs.iter().map(|(s, _)| u64::from(*s)).sum();
        let smallest = vrs.iter().flat_map(|(s, w)| w.iter().chain([s])).min().copied().unwrap();
        let per_weight = MIN_QUANTUM_BYTES.div_ceil(u64::from(smallest));
        let (n, m) = (vrs.len() as u64, u64::from(MAX_FRAME));
        let target = 30 * total_share * per_weight;
        let mut total = 0;
        while total < target {
            rig.step();
            let by_vr = rig.vr_bytes();
            total = by_vr.iter().sum();
            let sent = rig.sent_bytes();
            let mut q = 0;
            for (v, (share, weights)) in vrs.iter().enumerate() {
                let ideal = total as f64 * f64::from(*share) / total_share as f64;
                let bound = (2 * u64::from(*share) * per_weight + (n + 1) * m) as f64;
                prop_assert!((by_vr[v] as f64 - ideal).abs() < bound, "VR {} (share {}) sent {} of {}, ideal {:.0}, bound {:.0}", v, share, by_vr[v], total, ideal, bound);
                let vr_weight: u32 = weights.iter().sum();
                for &w in weights {
                    let ideal = by_vr[v] as f64 * f64::from(w) / f64::from(vr_weight);
                    let bound = (2 * u64::from(w) * per_weight + (weights.len() as u64 + 1) * m) as f64;
                    prop_assert!((sent[q] as f64 - ideal).abs() < bound, "queue {} (weight {}) of VR {} sent {} of its VR's {}, ideal {:.0}, bound {:.0}", q, w, v, sent[q], by_vr[v], ideal, bound);
                    q += 1;
                }
            }
        }
    }
}

/// What a worker does to a scheduler letting runs straight out: queue a run, cap or uncap a
/// VR, or send a batch.
#[derive(Debug, Clone)]
enum Op {
    Run { queue: u32, len: u32 },
    Cap { vr: u32, on: bool },
    Send { max: usize },
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => (0u32..4, 1u32..12).prop_map(|(queue, len)| Op::Run { queue, len }),
        1 => (0u32..2, any::<bool>()).prop_map(|(vr, on)| Op::Cap { vr, on }),
        3 => (1usize..20).prop_map(|max| Op::Send { max }),
    ];
    prop::collection::vec(op, 1..80)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whether a run goes straight out or queues, each queue's packets leave in the order they
    /// came, and every packet is sent or dropped, as its queue's counters say.
    #[test]
    fn runs_straight_out_or_queued_keep_each_queues_order_and_count((ops, direct) in (ops(), 0usize..16)) {
        // Two VRs of two queues each, queues of 8.
        let q = |weight| QueueConfig { weight, length: 8 };
        let config = PortSchedConfig { rate: None, vrs: vec![VrClassConfig { rate: None, share: None, queues: vec![q(1), q(3)] }; 2] };
        let mut sched: PortScheduler<(u32, u32)> = PortScheduler::new(&config).unwrap().with_direct(direct);
        let (mut next, mut sent, mut dropped) = ([0u32; 4], vec![Vec::new(); 4], [0u64; 4]);
        let mut out = Vec::new();
        let limit = RateLimit { bits_per_second: 1_000_000, burst_bytes: 300 };
        for (t, op) in ops.iter().enumerate() {
            let now = t as u64 * 100_000;
            match *op {
                Op::Run { queue, len } => {
                    let mut run: Vec<(u32, u32)> = (next[queue as usize]..next[queue as usize] + len).map(|i| (queue, i)).collect();
                    next[queue as usize] += len;
                    let mut refused = Vec::new();
                    sched.enqueue_run(QueueId(queue), &mut run, |_| 100, &mut refused);
                    prop_assert!(run.is_empty());
                    dropped[queue as usize] += refused.len() as u64;
                }
                Op::Cap { vr, on } => sched.set_vr_rate(VrClassId(vr), on.then_some(limit), now).unwrap(),
                Op::Send { max } => {
                    out.clear();
                    sched.dequeue_batch(now, &mut out, max);
                    prop_assert!(out.len() <= max);
                    for &(queue, i) in &out {
                        sent[queue as usize].push(i);
                    }
                }
            }
        }
        // Then every cap lifted, and everything sent: what went straight out was counted sent
        // when it passed its queue, so only an empty scheduler's counters add up.
        let end = ops.len() as u64 * 100_000;
        for vr in 0..2 {
            sched.set_vr_rate(VrClassId(vr), None, end).unwrap();
        }
        out.clear();
        while sched.dequeue_batch(end, &mut out, 7) > 0 {}
        for &(queue, i) in &out {
            sent[queue as usize].push(i);
        }
        prop_assert!(sched.is_empty());
        for queue in 0..4 {
            let s = &sent[queue];
            prop_assert!(s.windows(2).all(|w| w[0] < w[1]), "queue {} out of order: {:?}", queue, s);
            let st = sched.stats(QueueId(queue as u32));
            prop_assert_eq!(st.sent_packets, s.len() as u64);
            prop_assert_eq!(st.dropped_packets, dropped[queue]);
            prop_assert_eq!((st.enqueued_packets, st.backlog_packets), (st.sent_packets, 0));
            prop_assert_eq!(u64::from(next[queue]), st.enqueued_packets + st.dropped_packets);
        }
    }
}
