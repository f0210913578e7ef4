//! Which of a port's workers takes each of its frames: a classic BPF program that the kernel
//! runs for every frame the port's fanout group receives (PACKET_FANOUT_CBPF), returning the
//! index of a worker's socket (workers join the group in order, so the index is the worker's).
//!
//! Fanout runs before the packet socket puts the link header back in front of the frame: loads
//! count from the network header, and the EtherType is the `protocol` ancillary load.
//!
//! The workers are those the port's VRs hold slices of (`pearl_control::Slices`), each weighted
//! by its slices' frames a second. With `flow`, a hash of the frame's addresses and ports picks
//! among them, in proportion to the weights, so that a flow stays on one worker; with
//! `proportional`, a random draw does (PdP's policy). Fragments hash on addresses alone, so the
//! pieces of a datagram stay together; frames that are not IP go to the first worker.
//!
//! The program is data built here and installed by the worker that owns socket 0 when a plan
//! changes it; a VR that comes or goes changes it without reopening anything.

use pearl_control::{Config, Distribution, Slices};

/// One classic BPF instruction (`struct sock_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// How one port's frames are spread over its workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Steering {
    /// `(worker, weight)`, weights positive.
    pub workers: Vec<(usize, u64)>,
    /// A flow stays on one worker (`flow`); otherwise each frame is drawn (`proportional`).
    pub by_flow: bool,
}

// linux/filter.h and linux/bpf_common.h.
const LD: u16 = 0x00;
const LDX: u16 = 0x01;
const ST: u16 = 0x02;
const ALU: u16 = 0x04;
const JMP: u16 = 0x05;
const RET: u16 = 0x06;
const MISC: u16 = 0x07;
const W: u16 = 0x00;
const H: u16 = 0x08;
const B: u16 = 0x10;
const ABS: u16 = 0x20;
const IND: u16 = 0x40;
const MEM: u16 = 0x60;
const MSH: u16 = 0xa0;
const MUL: u16 = 0x20;
const RSH: u16 = 0x70;
const MOD: u16 = 0x90;
const XOR: u16 = 0xa0;
const JA: u16 = 0x00;
const JEQ: u16 = 0x10;
const JGE: u16 = 0x30;
const JSET: u16 = 0x40;
const X: u16 = 0x08;
const TAX: u16 = 0x00;
/// SKF_AD_OFF + SKF_AD_PROTOCOL: a load that yields the frame's EtherType.
const PROTOCOL: u32 = (-0x1000i32) as u32;
/// SKF_AD_OFF + SKF_AD_RANDOM: a load that yields a random number.
const RANDOM: u32 = (-0x1000i32 + 56) as u32;

/// Weights are scaled to this total, so that `mod` and the compare chain stay small.
const SCALE: u64 = 1024;

/// A jump target, resolved when the program is complete (classic BPF jumps forward only).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Next,
    V4,
    V6,
    V4Ports,
    V6Ports,
    Mix,
    Pick,
    NotIp,
    Worker(usize),
}

struct Asm {
    insns: Vec<(Insn, Label, Label)>,
    labels: Vec<(Label, usize)>,
}

impl Asm {
    fn op(&mut self, code: u16, k: u32) {
        self.insns.push((Insn { code, jt: 0, jf: 0, k }, Label::Next, Label::Next));
    }
    fn jump(&mut self, code: u16, k: u32, jt: Label, jf: Label) {
        self.insns.push((Insn { code, jt: 0, jf: 0, k }, jt, jf));
    }
    fn label(&mut self, l: Label) {
        self.labels.push((l, self.insns.len()));
    }
    /// `M[0] ^= A`.
    fn fold(&mut self) {
        self.op(MISC | TAX, 0);
        self.op(LD | MEM, 0);
        self.op(ALU | XOR | X, 0);
        self.op(ST, 0);
    }
    fn finish(self) -> Vec<Insn> {
        let at = |l: Label, from: usize| -> u8 {
            if l == Label::Next {
                return 0;
            }
            let to = self.labels.iter().find(|(m, _)| *m == l).expect("every label is placed").1;
            u8::try_from(to - from - 1).expect("a jump of at most 255 instructions")
        };
        let mut out = Vec::with_capacity(self.insns.len());
        for (i, (mut insn, jt, jf)) in self.insns.iter().copied().enumerate() {
            if insn.code == JMP | JA {
                insn.k = u32::from(at(jt, i));
            } else {
                insn.jt = at(jt, i);
                insn.jf = at(jf, i);
            }
            out.push(insn);
        }
        out
    }
}

/// Whether `ip_proto` carries ports where TCP's are: TCP, UDP, SCTP.
fn ports_of(a: &mut Asm, protocol_at: u32, then: Label, otherwise: Label) {
    a.op(LD | B | ABS, protocol_at);
    a.jump(JMP | JEQ, 6, then, Label::Next);
    a.jump(JMP | JEQ, 17, then, Label::Next);
    a.jump(JMP | JEQ, 132, then, otherwise);
}

/// The program for `s` (its workers not empty).
pub fn program(s: &Steering) -> Vec<Insn> {
    let mut a = Asm { insns: Vec::new(), labels: Vec::new() };
    let total: u64 = s.workers.iter().map(|w| w.1).sum::<u64>().max(1);
    let weights: Vec<u64> = s.workers.iter().map(|&(_, w)| (w * SCALE / total).max(1)).collect();
    let scaled: u64 = weights.iter().sum();
    if s.by_flow {
        a.op(LD | W | ABS, PROTOCOL);
        a.jump(JMP | JEQ, 0x0800, Label::V4, Label::Next);
        a.jump(JMP | JEQ, 0x86dd, Label::V6, Label::NotIp);

        // IPv4: addresses, then ports unless the frame is a fragment.
        a.label(Label::V4);
        a.op(LD | W | ABS, 12);
        a.op(ST, 0);
        a.op(LD | W | ABS, 16);
        a.fold();
        ports_of(&mut a, 9, Label::V4Ports, Label::Mix);
        a.label(Label::V4Ports);
        a.op(LD | H | ABS, 6);
        a.jump(JMP | JSET, 0x3fff, Label::Mix, Label::Next);
        a.op(LDX | B | MSH, 0);
        a.op(LD | W | IND, 0);
        a.fold();
        a.jump(JMP | JA, 0, Label::Mix, Label::Mix);

        // IPv6: addresses, then ports where the next header is TCP, UDP or SCTP.
        a.label(Label::V6);
        a.op(LD | W | ABS, 8);
        a.op(ST, 0);
        for word in 1..8 {
            a.op(LD | W | ABS, 8 + 4 * word);
            a.fold();
        }
        ports_of(&mut a, 6, Label::V6Ports, Label::Mix);
        a.label(Label::V6Ports);
        a.op(LD | W | ABS, 40);
        a.fold();

        // Murmur3's finalizer: every input bit moves the bits `mod` keeps.
        a.label(Label::Mix);
        a.op(LD | MEM, 0);
        for (shift, multiplier) in [(16, Some(0x85eb_ca6b)), (13, Some(0xc2b2_ae35)), (16, None)] {
            a.op(MISC | TAX, 0);
            a.op(ALU | RSH, shift);
            a.op(ALU | XOR | X, 0);
            if let Some(m) = multiplier {
                a.op(ALU | MUL, m);
            }
        }
        a.jump(JMP | JA, 0, Label::Pick, Label::Pick);
        a.label(Label::NotIp);
        a.op(LD, 0);
        a.jump(JMP | JA, 0, Label::Pick, Label::Pick);
    } else {
        a.op(LD | W | ABS, RANDOM);
    }

    // A mod the scaled total, then the worker whose share of [0, total) it falls in.
    a.label(Label::Pick);
    a.op(ALU | MOD, scaled as u32);
    let mut bound = 0;
    for (i, w) in weights.iter().enumerate().take(weights.len() - 1) {
        bound += w;
        a.jump(JMP | JGE, bound as u32, Label::Next, Label::Worker(i));
    }
    a.op(RET, s.workers[s.workers.len() - 1].0 as u32);
    for (i, &(worker, _)) in s.workers.iter().enumerate().take(s.workers.len() - 1) {
        a.label(Label::Worker(i));
        a.op(RET, worker as u32);
    }
    a.finish()
}

/// Each port's steering under `slices`: `None` where the kernel spreads frames itself (one
/// worker; `round_robin`, which rotates over every worker). A port's workers are those its VRs
/// hold slices of, or every worker if one of its VRs runs on all (or it has none).
pub fn for_ports(config: &Config, slices: &Slices) -> Vec<Option<Steering>> {
    (0..config.ports.len())
        .map(|port| {
            let distribution = config.port_distribution(port);
            if config.workers < 2 || distribution == Distribution::RoundRobin {
                return None;
            }
            let mut weight = vec![0u64; config.workers];
            // A port without VRs, or with one that runs on every worker, goes to all in equal shares.
            let mut everywhere = true;
            for vr in config.vrs.iter().filter(|v| v.interfaces.iter().any(|i| i.port == port)) {
                let Some(held) = slices.of(vr.id) else {
                    everywhere = true;
                    break;
                };
                everywhere = false;
                held.iter().for_each(|s| weight[s.worker] += s.pps);
            }
            if everywhere {
                weight.fill(1);
            }
            let workers = weight.iter().enumerate().filter(|(_, &w)| w > 0).map(|(i, &w)| (i, w)).collect();
            Some(Steering { workers, by_flow: distribution == Distribution::Flow })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// A classic BPF interpreter for what `program` emits, as the kernel runs it for fanout:
    /// `frame` from its EtherType on, loads count from after it, a load past the frame's end
    /// ends the program with 0; `RANDOM` yields `random`.
    fn run(program: &[Insn], frame: &[u8], random: u32) -> u32 {
        let (ethertype, frame) = (u32::from(u16::from_be_bytes([frame[0], frame[1]])), &frame[2..]);
        let (mut a, mut x, mut m) = (0u32, 0u32, [0u32; 16]);
        let mut pc = 0;
        let load = |at: usize, size: usize| -> Option<u32> {
            let bytes = frame.get(at..at + size)?;
            Some(bytes.iter().fold(0u32, |v, b| (v << 8) | u32::from(*b)))
        };
        loop {
            let i = program[pc];
            pc += 1;
            let size = match i.code & 0x18 {
                H => 2,
                B => 1,
                _ => 4,
            };
            match i.code & 0x07 {
                LD => match i.code & 0xe0 {
                    0 => a = i.k,
                    ABS if i.k == RANDOM => a = random,
                    ABS if i.k == PROTOCOL => a = ethertype,
                    ABS => match load(i.k as usize, size) {
                        Some(v) => a = v,
                        None => return 0,
                    },
                    IND => match load(x as usize + i.k as usize, size) {
                        Some(v) => a = v,
                        None => return 0,
                    },
                    MEM => a = m[i.k as usize],
                    other => panic!("ld mode {other:#x}"),
                },
                LDX => match load(i.k as usize, 1) {
                    Some(v) => x = 4 * (v & 0xf),
                    None => return 0,
                },
                ST => m[i.k as usize] = a,
                ALU => {
                    let operand = if i.code & X != 0 { x } else { i.k };
                    a = match i.code & 0xf0 {
                        MUL => a.wrapping_mul(operand),
                        RSH => a >> operand,
                        MOD => a % operand,
                        XOR => a ^ operand,
                        other => panic!("alu {other:#x}"),
                    }
                }
                JMP => {
                    let taken = match i.code & 0xf0 {
                        JA => {
                            pc += i.k as usize;
                            continue;
                        }
                        JEQ => a == i.k,
                        JGE => a >= i.k,
                        JSET => a & i.k != 0,
                        other => panic!("jmp {other:#x}"),
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                RET => return i.k,
                MISC => x = a,
                other => panic!("class {other:#x}"),
            }
        }
    }

    #[derive(Clone, Copy)]
    struct Flow {
        v6: bool,
        src: u32,
        dst: u32,
        proto: u8,
        ports: u32,
    }

    /// A frame from its EtherType on, carrying IPv4 (`v6` false) or IPv6 with the flow's
    /// addresses and protocol, its ports after the header and `payload` bytes of `fill`.
    fn frame(flow: Flow, fragment: bool, fill: u8, payload: usize) -> Vec<u8> {
        let Flow { v6, src, dst, proto, ports } = flow;
        let mut f = Vec::new();
        if v6 {
            f.extend([0x86, 0xdd, 0x60, 0, 0, 0, 0, 0, proto, 64]);
            f.extend([0x20, 1, 0xd, 0xb8].iter().chain(&[0; 8]).chain(&src.to_be_bytes()));
            f.extend([0x20, 1, 0xd, 0xb8].iter().chain(&[0; 8]).chain(&dst.to_be_bytes()));
        } else {
            let flags: u16 = if fragment { 0x2000 } else { 0x4000 };
            f.extend([0x08, 0x00, 0x45, 0, 0, 0, 0, 0]);
            f.extend(flags.to_be_bytes());
            f.extend([64, proto, 0, 0]);
            f.extend(src.to_be_bytes());
            f.extend(dst.to_be_bytes());
        }
        f.extend(ports.to_be_bytes());
        f.extend(std::iter::repeat_n(fill, payload));
        f
    }

    fn steering(weights: &[u64], by_flow: bool) -> Steering {
        Steering { workers: weights.iter().enumerate().map(|(i, &w)| (i * 3 + 1, w)).collect(), by_flow }
    }

    proptest! {
        /// A flow (addresses, protocol, ports) goes to one worker of the port's, whatever its
        /// payload; fragments follow their addresses alone; non-IP frames go to the first.
        #[test]
        fn a_flow_stays_on_one_of_the_ports_workers(
            weights in proptest::collection::vec(1u64..1000, 1..6),
            v6: bool, src: u32, dst: u32, proto in prop_oneof![Just(6u8), Just(17), Just(132), Just(1)],
            ports: u32, fill: u8, payload in 0usize..100,
        ) {
            let s = steering(&weights, true);
            let p = program(&s);
            let ours: Vec<u32> = s.workers.iter().map(|w| w.0 as u32).collect();
            let flow = Flow { v6, src, dst, proto, ports };
            let w = run(&p, &frame(flow, false, fill, payload), 0);
            prop_assert!(ours.contains(&w));
            prop_assert_eq!(run(&p, &frame(flow, false, !fill, payload + 7), 0), w);
            if !v6 {
                let head = run(&p, &frame(flow, true, fill, payload), 0);
                prop_assert_eq!(run(&p, &frame(Flow { ports: !ports, ..flow }, true, fill, payload), 0), head);
            }
            let arp = [vec![0x08, 0x06], vec![0; 28]].concat();
            prop_assert_eq!(run(&p, &arp, 0), ours[0]);
        }
    }

    /// A port goes to the workers its VRs hold slices of, weighted by them; to every worker as
    /// soon as one of its VRs runs on all; and `round_robin` ports are left to the kernel.
    #[test]
    fn ports_go_to_their_vrs_slices() {
        let yaml = |b_ask: &str, distribution: &str| {
            format!(
                "workers: 3\nports: [{{name: p0, interface: v0}}, {{name: p1, interface: v1}}]\nvrs:\n\
                 - {{name: a, resources: {{pps: 1200000}}, distribution: {distribution}, interfaces: [{{name: e0, port: p0, mac: \"02:00:00:00:00:01\"}}]}}\n\
                 - {{name: b, {b_ask} distribution: {distribution}, interfaces: [{{name: e0, port: p0, mac: \"02:00:00:00:00:02\"}}, {{name: e1, port: p1, mac: \"02:00:00:00:00:03\"}}]}}\n"
            )
        };
        let steer = |text: String| {
            let config = pearl_control::parse_config(&text).unwrap();
            for_ports(&config, &Slices::allocate(&Slices::default(), &config))
        };
        // a: one whole worker (0) and 250,000 of another (1); b: 100,000, best fit on worker 1.
        let s = steer(yaml("resources: {pps: 100000},", "flow"));
        assert_eq!(s[0], Some(Steering { workers: vec![(0, 950_000), (1, 350_000)], by_flow: true }));
        assert_eq!(s[1], Some(Steering { workers: vec![(1, 100_000)], by_flow: true }));
        let s = steer(yaml("", "proportional"));
        assert_eq!(s[0], Some(Steering { workers: vec![(0, 1), (1, 1), (2, 1)], by_flow: false }));
        assert_eq!(steer(yaml("", "round_robin").replace("pps: 1200000", "workers: 3")), vec![None, None]);
    }

    /// Flows, and drawn frames, spread over the workers in proportion to their weights.
    #[test]
    fn shares_follow_the_weights() {
        for by_flow in [true, false] {
            let s = steering(&[1, 3, 4], by_flow);
            let p = program(&s);
            let mut count: HashMap<u32, u32> = HashMap::new();
            let n = 80_000u32;
            for i in 0..n {
                let flow = Flow { v6: i % 2 == 0, src: 0x0a00_0001, dst: 0x0a01_0000 + i / 7, proto: 17, ports: 1000 + i % 7 };
                let f = frame(flow, false, 0, 20);
                *count.entry(run(&p, &f, i.wrapping_mul(2_654_435_761))).or_default() += 1;
            }
            for (&(worker, weight), share) in s.workers.iter().zip([1.0 / 8.0, 3.0 / 8.0, 4.0 / 8.0]) {
                let got = f64::from(count[&(worker as u32)]) / f64::from(n);
                assert!((got - share).abs() < 0.02, "flow {by_flow}: worker {worker} (weight {weight}) took {got}, not {share}");
            }
        }
    }
}
