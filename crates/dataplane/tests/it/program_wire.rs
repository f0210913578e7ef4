//! A VR program from outside the data plane: a tiny one written here, attached with
//! `Dataplane::start_programmed`, decides the VR's packets in place of the IP router its
//! configuration names. It is a wire: what arrives on the VR's first interface leaves by the
//! second as it stands, whatever it is (the IP router would have dropped, punted or rewritten
//! each frame below), and what arrives on the second is dropped. A frame the program sends out
//! of a port where the VR has no interface is dropped and counted, not sent.

use crate::pcap_rig::PcapRig;
use pearl_control::parse_config;
use pearl_dataplane::counters::VrDrop;
use pearl_dataplane::dataplane::{Dataplane, SlowPathStart};
use pearl_dataplane::program::{Decision, Run, VrProgram};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONFIG: &str = "workers: 1
ports:
  - {name: in, interface: in, driver: pcap}
  - {name: out, interface: out, driver: pcap}
vrs:
  - name: wire
    id: 3
    interfaces:
      - {name: eth0, port: in, mac: '02:00:00:00:03:00', addresses: [10.0.0.1/24]}
      - {name: eth1, port: out, mac: '02:00:00:00:03:01', addresses: [10.1.0.1/24]}
";
const VR: u16 = 3;

struct Wire;

impl VrProgram for Wire {
    fn run(&self, run: &mut Run<'_>) {
        for i in 0..run.len() {
            let d = match (run.packets[i].in_port, run.keys[i].ethertype()) {
                // A mistake: the VR has no interface on port 9.
                (_, 0x88b6) => Decision::Send { port: 9 },
                (0, _) => Decision::Send { port: 1 },
                _ => Decision::Drop(VrDrop::Program),
            };
            run.decide(i, d);
        }
    }
}

fn frame(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = [[2, 0, 0, 0, 3, 0].as_slice(), &[2, 0xee, 0, 0, 0, 1], &ethertype.to_be_bytes(), payload].concat();
    f.resize(f.len().max(60), 0);
    f
}

/// Starts the rig with `program` as the VR's and waits (10 s at most) until `done` holds; the
/// slow path's end is kept for as long as the test runs.
fn run_until(rig: &PcapRig, program: impl VrProgram + 'static, done: impl Fn(&Dataplane) -> bool) -> (Dataplane, SlowPathStart) {
    let config = parse_config(CONFIG).unwrap();
    let programs: HashMap<u16, Arc<dyn VrProgram>> = HashMap::from([(VR, Arc::new(program) as Arc<dyn VrProgram>)]);
    let (d, slow) = rig.start(&config, programs);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done(&d) {
        assert!(Instant::now() < deadline, "exceptions {:?} drops {:?}", d.exceptions(VR), d.drops(VR));
        std::thread::sleep(Duration::from_millis(5));
    }
    (d, slow)
}

#[test]
fn an_attached_program_decides_the_vrs_packets_in_place_of_the_ip_router() {
    // An IPv4 header with a wrong checksum and TTL 1 (the router drops it), a frame of an
    // experimental EtherType (the router hands it to the VR's kernel).
    let mut bad_ipv4 = vec![0x45, 0, 0, 28, 0, 0, 0, 0, 1, 17, 0xde, 0xad, 10, 0, 0, 2, 198, 51, 100, 1];
    bad_ipv4.extend([0u8; 8]);
    let frames = [frame(0x0800, &bad_ipv4), frame(0x88b5, b"not IP at all")];
    let misdirected = frame(0x88b6, b"to a port the VR is not on");
    let rig = PcapRig::new("program-wire", &frames.iter().chain([&misdirected]).cloned().collect::<Vec<_>>());
    let bad_port = |d: &Dataplane| d.drops(VR).iter().find(|(r, _)| *r == "program_bad_port").map_or(0, |(_, n)| *n);
    let (d, _slow) =
        run_until(&rig, Wire, |d| d.sum(|c| c.vrs[VR as usize].forwarded_packets.get()) >= frames.len() as u64 && bad_port(d) >= 1);
    std::thread::sleep(Duration::from_millis(50)); // the last batch's transmit
    let (exceptions, drops) = (d.exceptions(VR), d.drops(VR));
    d.stop();
    assert!(exceptions.iter().all(|(_, n)| *n == 0), "nothing went to the VR's kernel: {exceptions:?}");
    assert_eq!(drops.iter().map(|(_, n)| n).sum::<u64>(), 1, "only the misdirected frame was dropped: {drops:?}");
    let emitted = rig.emitted();
    assert_eq!(emitted, frames, "each frame leaves by the other port byte for byte");
}

/// Copies every frame from the first interface out of both interfaces, to the VR's kernel, and
/// to an interface the VR does not have (bit 5).
struct Copier;

impl VrProgram for Copier {
    fn run(&self, run: &mut Run<'_>) {
        for i in 0..run.len() {
            if run.packets[i].in_port == 0 {
                run.decide(i, Decision::Copies { interfaces: 0b10_0011, slow: true });
            }
        }
    }
}

#[test]
fn a_program_sends_copies_of_a_frame_to_several_interfaces_and_its_kernel() {
    let frames = [frame(0x88b5, b"one"), frame(0x88b6, b"two")];
    let rig = PcapRig::new("program-copies", &frames);
    // Each frame leaves twice: back out of the first interface's port and out of the second.
    let (d, _slow) = run_until(&rig, Copier, |d| d.sum(|c| c.vrs[VR as usize].forwarded_packets.get()) >= 2 * frames.len() as u64);
    std::thread::sleep(Duration::from_millis(50));
    let (exceptions, drops) = (d.exceptions(VR), d.drops(VR));
    d.stop();
    assert_eq!(exceptions.iter().find(|(r, _)| *r == "program"), Some(&("program", 2)), "one copy each to the kernel: {exceptions:?}");
    assert_eq!(drops.iter().find(|(r, _)| *r == "program_bad_port"), Some(&("program_bad_port", 2)), "{drops:?}");
    assert_eq!(drops.iter().map(|(_, n)| n).sum::<u64>(), 2, "{drops:?}");
    assert_eq!(rig.emitted(), frames, "the second interface's copy of each frame, byte for byte");
}

/// Marks every frame a super-packet behind a tunnel's headers (as a program that grew its
/// head leaves one) and hands it to the VR's kernel.
struct Encapsulator;

impl VrProgram for Encapsulator {
    fn run(&self, run: &mut Run<'_>) {
        for i in 0..run.len() {
            let o = &mut run.packets[i].offload;
            (o.gso, o.gso_size, o.encapsulated) = (pearl_wire::Gso::TcpV4, 1000, 34);
            run.decide(i, Decision::Slow(pearl_dataplane::counters::Exception::Program));
        }
    }
}

#[test]
fn an_encapsulated_super_packet_is_not_handed_to_the_vrs_kernel() {
    let frames = [frame(0x88b5, b"one"), frame(0x88b5, b"two")];
    let rig = PcapRig::new("program-encapsulated", &frames);
    let (d, _slow) = run_until(&rig, Encapsulator, |d| d.sum(|c| c.vrs[VR as usize].exception_drops.get()) >= frames.len() as u64);
    let to_kernel = d.sum(|c| c.vrs[VR as usize].exception_drops.get());
    d.stop();
    assert_eq!(to_kernel, 2, "both counted as dropped on the way to the kernel, none written to its TAP");
}
