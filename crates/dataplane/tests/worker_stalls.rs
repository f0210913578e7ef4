//! A worker's stalls: a round that begins long after the one before, while the worker was not
//! pausing by choice, is when its ports' rings fill unread. A program that holds the worker for
//! 20 ms on a batch (as a blocking call or a preempted thread would) shows as such a stall, with
//! its length, and its frames still leave.

mod pcap_rig;

use pcap_rig::PcapRig;
use pearl_control::parse_config;
use pearl_dataplane::program::{Decision, Run, VrProgram};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONFIG: &str = "workers: 1
ports:
  - {name: in, interface: in, driver: pcap}
  - {name: out, interface: out, driver: pcap}
vrs:
  - name: slow
    id: 2
    interfaces:
      - {name: eth0, port: in, mac: '02:00:00:00:02:00', addresses: [10.0.0.1/24]}
      - {name: eth1, port: out, mac: '02:00:00:00:02:01', addresses: [10.1.0.1/24]}
";
const VR: u16 = 2;
const HOLD: Duration = Duration::from_millis(20);

/// Sends every frame on, after holding the worker for `HOLD`.
struct Holder;

impl VrProgram for Holder {
    fn run(&self, run: &mut Run<'_>) {
        std::thread::sleep(HOLD);
        for i in 0..run.len() {
            run.decide(i, Decision::Send { port: 1 });
        }
    }
}

#[test]
fn a_batch_that_holds_the_worker_is_counted_as_a_stall_of_its_length() {
    let frame = |n: u8| {
        let mut f = [[2, 0, 0, 0, 2, 0].as_slice(), &[2, 0xee, 0, 0, 0, 1], &[0x88, 0xb5], &[n]].concat();
        f.resize(60, 0);
        f
    };
    let frames = [frame(1), frame(2)];
    let rig = PcapRig::new("worker-stalls", &frames);
    let config = parse_config(CONFIG).unwrap();
    let programs: HashMap<u16, Arc<dyn VrProgram>> = HashMap::from([(VR, Arc::new(Holder) as Arc<dyn VrProgram>)]);
    let (d, _slow) = rig.start(&config, programs);
    let deadline = Instant::now() + Duration::from_secs(10);
    while d.sum(|c| c.vrs[VR as usize].forwarded_packets.get()) < 2 {
        assert!(Instant::now() < deadline, "drops {:?}", d.drops(VR));
        std::thread::sleep(Duration::from_millis(5));
    }
    // The round after the held one is where the gap is seen.
    while d.sum(|c| c.stalls.get()) == 0 {
        assert!(Instant::now() < deadline, "no stall counted after a batch held the worker for {HOLD:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    let longest = Duration::from_nanos(d.counters.iter().map(|c| c.longest_stall_ns.get()).max().unwrap_or(0));
    d.stop();
    assert!(longest >= HOLD && longest < Duration::from_secs(5), "the longest stall: {longest:?}");
    assert_eq!(rig.emitted(), frames, "the held batch still leaves, byte for byte");
}
