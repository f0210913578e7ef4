//! Packet trace through a running data plane: a port replaying three frames — one routed, one
//! without a route, one with a bad header checksum — and the trace of the next packets names
//! each one's VR, decision and end; a filter takes only the frames it matches; unarmed, nothing
//! is recorded; a hosted program's own decision is what its packets show.

use pearl_control::parse_config;
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::{MemoryPort, Port};
use pearl_dataplane::program::{Decision, Run, VrProgram};
use pearl_dataplane::trace::{Outcome, TraceSpec, Traced, Tx};
use pearl_dataplane::{Exception, VrDrop};
use pearl_wire::checksum::checksum;
use pearl_wire::{Field, FlowKey};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONFIG: &str = "workers: 1
ports:
  - {name: in, interface: in, driver: pcap}
  - {name: out, interface: out, driver: pcap}
vrs:
  - name: red
    id: 1
    code: ip
    interfaces:
      - {name: eth0, port: in, mac: '02:00:00:00:01:00', addresses: [10.0.0.1/24]}
      - {name: eth1, port: out, mac: '02:00:00:00:01:01', addresses: [10.1.0.1/24]}
    routes: [{prefix: 198.51.100.0/24, via: 10.1.0.2}]
    neighbors: [{ip: 10.1.0.2, mac: '02:aa:00:00:00:02', interface: eth1}]
";

const NEXT_HOP: [u8; 6] = [2, 0xaa, 0, 0, 0, 2];

fn frame(dst: [u8; 4], bad_checksum: bool) -> Vec<u8> {
    let mut h = vec![0x45, 0, 0, 46, 0x12, 0x34, 0, 0, 64, 17, 0, 0, 10, 0, 0, 2];
    h.extend(dst);
    let c = checksum(&h) ^ u16::from(bad_checksum);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend([0x04, 0x00, 0x0f, 0xa0, 0, 26, 0, 0]);
    h.extend([0xab; 18]);
    [&[2, 0, 0, 0, 1, 0][..], &[2, 0xee, 0, 0, 0, 1], &[8, 0], &h].concat()
}

fn start() -> Dataplane {
    start_with(HashMap::new())
}

fn start_with(programs: HashMap<u16, Arc<dyn VrProgram>>) -> Dataplane {
    let frames = [frame([198, 51, 100, 7], false), frame([203, 0, 113, 1], false), frame([198, 51, 100, 9], true)];
    let config = parse_config(CONFIG).unwrap();
    let (d, slow) = Dataplane::start_programmed(&config, programs, |p, _, _| {
        let port: Box<dyn Port> = Box::new(if p == 0 { MemoryPort::new(&frames) } else { MemoryPort::new(Vec::<Vec<u8>>::new()) });
        Ok(port)
    })
    .unwrap();
    std::mem::forget(slow);
    d
}

fn trace(d: &Dataplane, spec: TraceSpec, wait: Duration) -> Vec<Traced> {
    let reader = d.trace_start(spec);
    let deadline = Instant::now() + wait;
    let mut got = Vec::new();
    while got.len() < spec.count && Instant::now() < deadline {
        got.extend(reader.records.try_iter());
        std::thread::sleep(Duration::from_millis(2));
    }
    d.trace_stop(reader.id);
    got
}

#[test]
fn each_packet_traced_shows_its_verdict_decision_and_end() {
    let d = start();
    let got = trace(&d, TraceSpec { vr: 1, port: None, filter: None, count: 30 }, Duration::from_secs(10));
    d.stop();
    assert_eq!(got.len(), 30, "the next 30 packets, no more");
    let of = |last: u8| got.iter().filter(move |t| t.frame()[33] == last).map(|t| t.record).collect::<Vec<_>>();
    let (routed, unrouted, bad) = (of(7), of(1), of(9));
    assert!(!routed.is_empty() && !unrouted.is_empty() && !bad.is_empty(), "all three frames traced");
    for r in routed.iter().chain(&unrouted).chain(&bad) {
        let v = r.verdict.expect("classified");
        assert_eq!((v.vr, v.rule, r.in_port, r.len), (1, None, 0, 60), "claimed by VR red's MAC on port in");
    }
    for r in &routed {
        assert_eq!(r.program, Some(Decision::Lookup));
        assert!(matches!(r.routed, Some((Decision::Forward { .. }, 1))), "{:?}", r.routed);
        assert_eq!(r.outcome, Some(Outcome::Out { port: 1, queue: 0, dst: NEXT_HOP }));
        assert_eq!(r.tx, Some(Tx::Sent), "followed past the queue: the port took it");
    }
    for r in &unrouted {
        assert_eq!(r.tx, None, "never queued out of a port");
        assert_eq!(r.routed.map(|x| x.0), Some(Decision::Slow(Exception::NoRoute)));
        // To the kernel, or refused by the VR's punt policer: the test's traffic is a stream of
        // unrouted frames, far above a VR's exception rate.
        assert!(matches!(r.outcome, Some(Outcome::Kernel(Exception::NoRoute) | Outcome::Dropped(VrDrop::PuntPoliced))), "{:?}", r.outcome);
    }
    for r in &bad {
        assert_eq!(r.program, Some(Decision::Drop(VrDrop::BadChecksum)));
        assert_eq!(r.outcome, Some(Outcome::Dropped(VrDrop::BadChecksum)));
    }
}

#[test]
fn a_filter_takes_only_the_packets_it_matches_and_another_port_none() {
    let d = start();
    let mut value = FlowKey::default();
    let mut mask = FlowKey::default();
    value.set(Field::IpDst, u128::from(u32::from_be_bytes([203, 0, 113, 1])));
    mask.set(Field::IpDst, u128::from(u32::MAX));
    let got = trace(&d, TraceSpec { vr: 1, port: None, filter: Some((value, mask)), count: 5 }, Duration::from_secs(10));
    let elsewhere = trace(&d, TraceSpec { vr: 1, port: Some(1), filter: None, count: 1 }, Duration::from_millis(300));
    d.stop();
    assert_eq!(got.len(), 5);
    assert!(got.iter().all(|t| t.frame()[30..34] == [203, 0, 113, 1]), "only 203.0.113.1");
    assert!(elsewhere.is_empty(), "nothing arrives on port out");
}

/// A hosted program (as a plugin is): every frame out of port 1 as it stands.
struct Wire;

impl VrProgram for Wire {
    fn run(&self, run: &mut Run<'_>) {
        for i in 0..run.len() {
            run.decide(i, Decision::Send { port: 1 });
        }
    }
}

#[test]
fn a_hosted_programs_packets_show_its_decision() {
    let d = start_with(HashMap::from([(1, Arc::new(Wire) as Arc<dyn VrProgram>)]));
    let got = trace(&d, TraceSpec { vr: 1, port: None, filter: None, count: 3 }, Duration::from_secs(10));
    d.stop();
    assert_eq!(got.len(), 3);
    for t in &got {
        assert_eq!(t.record.program, Some(Decision::Send { port: 1 }));
        let dst = t.frame()[..6].try_into().unwrap();
        assert_eq!(t.record.outcome, Some(Outcome::Out { port: 1, queue: 0, dst }), "sent as the program left it");
    }
}
