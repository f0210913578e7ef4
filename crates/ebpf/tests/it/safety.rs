//! What makes an owner's program safe to run in the data plane: a loop ends when its fuel
//! does, an access outside its memory (or a write to its read-only data) stops it before it
//! happens, calls nest at most eight deep, and no program — however malformed, random or
//! truncated — makes the runtime panic.

use crate::clang;

use pearl_ebpf::insn::{Insn, LDDW, PSEUDO_CALL, PSEUDO_MAP, PSEUDO_MAP_VALUE};
use pearl_ebpf::maps::{BPF_F_RDONLY_PROG, BPF_MAP_TYPE_ARRAY, BPF_MAP_TYPE_HASH};
use pearl_ebpf::{Fault, Map, MapDef, Program, Vm};
use proptest::prelude::*;

fn i(op: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn { op, dst, src, off, imm }
}

/// A small object with one program and one map, built once, to mutate.
fn object() -> &'static [u8] {
    static OBJECT: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    OBJECT.get_or_init(|| clang::build("wire"))
}

const EXIT: Insn = Insn { op: 0x95, dst: 0, src: 0, off: 0, imm: 0 };

fn run(insns: Vec<Insn>, frame_len: usize) -> Result<u64, Fault> {
    let program = Program::from_insns(insns, Vec::new()).unwrap();
    let mut frame = vec![7u8; frame_len];
    Vm::default().run(&program, &mut [], &mut frame, 0, 1000, 0).map(|o| o.action)
}

#[test]
fn a_loop_stops_when_its_fuel_does() {
    // r0 = 0; loop: r0 += 1; goto loop
    let spin = vec![i(0xb7, 0, 0, 0, 0), i(0x07, 0, 0, 0, 1), i(0x05, 0, 0, -2, 0)];
    assert_eq!(run(spin, 60), Err(Fault::Fuel));
}

#[test]
fn reads_past_the_frame_and_writes_to_the_context_are_stopped() {
    // r2 = ctx->data; r0 = *(u8 *)(r2 + 60): one byte past a 60-byte frame.
    let past_end = vec![i(0x61, 2, 1, 0, 0), i(0x71, 0, 2, 60, 0), EXIT];
    assert!(matches!(run(past_end.clone(), 60), Err(Fault::Memory { pc: 1, len: 1, .. })));
    assert_eq!(run(past_end, 61), Ok(7), "inside a longer frame the same read is fine");
    // *(u32 *)(r1 + 0) = 0: the context is read-only.
    assert!(matches!(run(vec![i(0x62, 1, 0, 0, 0), EXIT], 60), Err(Fault::Memory { pc: 0, .. })));
    // Below the stack's bottom (r10 - 520).
    assert!(matches!(run(vec![i(0x7a, 10, 0, -520, 1), EXIT], 60), Err(Fault::Memory { .. })));
    // A made-up pointer.
    assert!(matches!(run(vec![i(0xb7, 3, 0, 0, 0x1234), i(0x79, 0, 3, 0, 0), EXIT], 60), Err(Fault::Memory { .. })));
}

#[test]
fn a_looked_up_value_is_memory_only_within_its_size() {
    let def = MapDef {
        name: "h".into(),
        kind: BPF_MAP_TYPE_HASH,
        key_size: 4,
        value_size: 8,
        max_entries: 4,
        flags: 0,
        data: Vec::new(),
        programs: 0,
    };
    // *(u32 *)(r10 - 4) = 1; r1 = map 0; r2 = r10 - 4; r0 = lookup(); if r0 == 0 goto out;
    // r0 = *(u64 *)(r0 + OFF); out: exit
    let program = |off: i16| {
        vec![
            i(0x62, 10, 0, -4, 1),
            i(LDDW, 1, PSEUDO_MAP, 0, 0),
            i(0, 0, 0, 0, 0),
            i(0xbf, 2, 10, 0, 0),
            i(0x07, 2, 0, 0, -4),
            i(0x85, 0, 0, 0, 1),
            i(0x15, 0, 0, 1, 0),
            i(0x79, 0, 0, off, 0),
            EXIT,
        ]
    };
    let mut maps = vec![Map::new(def.clone()).unwrap()];
    maps[0].update(&1u32.to_le_bytes(), &42u64.to_le_bytes(), 0);
    let mut vm = Vm::default();
    let ok = Program::from_insns(program(0), vec![def.clone()]).unwrap();
    assert_eq!(vm.run(&ok, &mut maps, &mut [0; 60], 0, 100, 0).unwrap().action, 42);
    let past = Program::from_insns(program(1), vec![def]).unwrap();
    assert!(matches!(vm.run(&past, &mut maps, &mut [0; 60], 0, 100, 0), Err(Fault::Memory { pc: 7, .. })));
}

#[test]
fn a_called_function_has_its_own_stack_frame_and_leaves_its_caller_registers_as_they_were() {
    // r6 = 5; *(u64 *)(r10 - 8) = 11; call f; r0 = *(u64 *)(r10 - 8); r0 += r6; exit
    // f: r6 = 100; *(u64 *)(r10 - 8) = 99; r0 = 0; exit
    let program = vec![
        i(0xb7, 6, 0, 0, 5),
        i(0x7a, 10, 0, -8, 11),
        i(0x85, 0, PSEUDO_CALL, 0, 3),
        i(0x79, 0, 10, -8, 0),
        i(0x0f, 0, 6, 0, 0),
        EXIT,
        i(0xb7, 6, 0, 0, 100),
        i(0x7a, 10, 0, -8, 99),
        i(0xb7, 0, 0, 0, 0),
        EXIT,
    ];
    assert_eq!(run(program, 60), Ok(16));
}

#[test]
fn calls_deeper_than_eight_functions_stop_the_program() {
    // A function that calls itself for ever; and one that calls itself r1 times.
    assert_eq!(run(vec![i(0x85, 0, PSEUDO_CALL, 0, -1), EXIT], 60), Err(Fault::CallDepth { pc: 0 }));
    // r1 = 6; call f; exit. f: if r1 == 0 goto out; r1 -= 1; call f; out: r0 = 3; exit
    let seven = vec![
        i(0xb7, 1, 0, 0, 6),
        i(0x85, 0, PSEUDO_CALL, 0, 1),
        EXIT,
        i(0x15, 1, 0, 2, 0),
        i(0x17, 1, 0, 0, 1),
        i(0x85, 0, PSEUDO_CALL, 0, -3),
        i(0xb7, 0, 0, 0, 3),
        EXIT,
    ];
    assert_eq!(run(seven.clone(), 60), Ok(3), "eight frames, the entry's included");
    let mut nine = seven;
    nine[0].imm = 7;
    assert_eq!(run(nine, 60), Err(Fault::CallDepth { pc: 5 }));
}

#[test]
fn a_program_reads_its_read_only_globals_and_cannot_write_them() {
    let rodata = MapDef {
        name: ".rodata".into(),
        kind: BPF_MAP_TYPE_ARRAY,
        key_size: 4,
        value_size: 8,
        max_entries: 1,
        flags: BPF_F_RDONLY_PROG,
        data: 41u64.to_le_bytes().to_vec(),
        programs: 0,
    };
    // r1 = &global 0 + 0; r0 = *(u64 *)(r1 + 0); r0 += 1; [*(u64 *)(r1 + 0) = r0;] exit
    let load = [i(LDDW, 1, PSEUDO_MAP_VALUE, 0, 0), i(0, 0, 0, 0, 0), i(0x79, 0, 1, 0, 0), i(0x07, 0, 0, 0, 1)];
    let program = |insns: Vec<Insn>| Program {
        insns,
        maps: vec![rodata.clone()],
        globals: vec![0],
        section: "xdp".into(),
        programs: Vec::new(),
        entry: 0,
    };
    let mut maps = vec![Map::new(rodata.clone()).unwrap()];
    let mut vm = Vm::default();
    let reads = program([&load[..], &[EXIT]].concat());
    assert_eq!(vm.run(&reads, &mut maps, &mut [0; 60], 0, 100, 0).unwrap().action, 42);
    let writes = program([&load[..], &[i(0x7b, 1, 0, 0, 0), EXIT]].concat());
    assert!(matches!(vm.run(&writes, &mut maps, &mut [0; 60], 0, 100, 0), Err(Fault::Memory { pc: 4, .. })));
    assert_eq!(maps[0].entries()[0].1, 41u64.to_le_bytes(), "the value is as it was");
}

#[test]
fn what_the_interpreter_cannot_trust_is_refused_at_load() {
    let refused = |insns: Vec<Insn>| Program::from_insns(insns, Vec::new()).unwrap_err().0;
    assert!(refused(vec![i(0xb7, 10, 0, 0, 0), EXIT]).contains("r10"));
    assert!(refused(vec![i(0x05, 0, 0, 5, 0), EXIT]).contains("outside the program"));
    assert!(refused(vec![i(0x85, 0, 0, 0, 1000), EXIT]).contains("helper 1000"));
    assert!(refused(vec![i(0xff, 0, 0, 0, 0), EXIT]).contains("unknown opcode"));
    assert!(refused(vec![i(LDDW, 1, PSEUDO_MAP, 0, 0), i(0, 0, 0, 0, 0), EXIT]).contains("map 0 does not exist"));
    assert!(refused(vec![i(0xb7, 0, 0, 0, 0)]).contains("does not end"));
    assert!(refused(vec![i(0x85, 0, PSEUDO_CALL, 0, 5), EXIT]).contains("a call to 6, outside the program"));
    assert!(refused(vec![i(0x85, 0, 2, 0, 0), EXIT]).contains("a call of kind 2"));
    assert!(refused(vec![i(LDDW, 1, PSEUDO_MAP_VALUE, 0, 0), i(0, 0, 0, 0, 0), EXIT]).contains("global data 0 does not exist"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Random programs: refused at load or run to an answer or a fault, never a panic.
    #[test]
    fn no_program_makes_the_runtime_panic(
        raw in proptest::collection::vec((any::<u8>(), 0u8..12, 0u8..12, -8i16..8, any::<i32>()), 1..40),
        len in 0usize..100,
    ) {
        let mut insns: Vec<Insn> = raw.into_iter().map(|(op, dst, src, off, imm)| i(op, dst, src, off, imm)).collect();
        insns.push(EXIT);
        let def = MapDef { name: "h".into(), kind: BPF_MAP_TYPE_HASH, key_size: 4, value_size: 8, max_entries: 4, flags: 0, data: Vec::new(), programs: 0 };
        if let Ok(program) = Program::from_insns(insns, vec![def.clone()]) {
            let mut maps = vec![Map::new(def).unwrap()];
            let _ = Vm::default().run(&program, &mut maps, &mut vec![1u8; len], 0, 500, 0);
        }
    }

    /// Random bytes and flipped bytes of an object: refused or loaded, never a panic.
    #[test]
    #[allow(clippy::needless_pass_by_value, reason = "proptest hands its values over")]
    fn no_object_makes_the_loader_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let _ = Program::load(&bytes, None);
        let mut elf = object().to_vec();
        for (at, b) in flips {
            let n = elf.len();
            elf[at % n] = b;
        }
        let _ = Program::load(&elf, None);
    }
}

/// Moves the frame's `helper` edge (44: head, 65: tail) by `delta`, then writes 0xaa at its new
/// first byte and answers 2 (XDP_PASS); answers 1 if the helper refused.
fn edge_mover(helper: i32, delta: i32) -> Program {
    Program::from_insns(
        vec![
            i(0xbf, 6, 1, 0, 0),      // r6 = ctx
            i(0xb7, 2, 0, 0, delta),  // r2 = delta
            i(0x85, 0, 0, 0, helper), // call
            i(0x55, 0, 0, 4, 0),      // if r0 != 0 goto refused
            i(0x61, 2, 6, 0, 0),      // r2 = ctx->data (as it is now)
            i(0x72, 2, 0, 0, 0xaa),   // *(u8 *)r2 = 0xaa
            i(0xb7, 0, 0, 0, 2),      // r0 = XDP_PASS
            EXIT,
            i(0xb7, 0, 0, 0, 1), // refused: r0 = 1
            EXIT,
        ],
        Vec::new(),
    )
    .unwrap()
}

#[test]
fn adjust_head_and_tail_move_the_frames_edges_within_its_buffer_and_nothing_else() {
    let mut vm = Vm::default();
    // Room for 8 bytes in front: 4 of them taken for a header the program writes.
    let mut buffer = vec![7u8; 64];
    let o = vm.run_in(&edge_mover(44, -4), &mut [], &mut buffer, (8, 50), 0, 100, 0).unwrap();
    assert_eq!((o.action, o.start, o.len), (2, 4, 54));
    assert_eq!(buffer[4], 0xaa);
    // Only 2 bytes of room: refused, the frame where it was.
    let o = vm.run_in(&edge_mover(44, -4), &mut [], &mut buffer, (2, 50), 0, 100, 0).unwrap();
    assert_eq!((o.action, o.start, o.len), (1, 2, 50));
    // Taken off the front (a decapsulation), but never below an Ethernet header.
    let o = vm.run_in(&edge_mover(44, 20), &mut [], &mut buffer, (0, 60), 0, 100, 0).unwrap();
    assert_eq!((o.action, o.start, o.len), (2, 20, 40));
    assert_eq!(vm.run_in(&edge_mover(44, 50), &mut [], &mut buffer, (0, 60), 0, 100, 0).unwrap().action, 1);
    // A tail grown into the buffer's room reads as zeroes; it cannot pass the buffer's end.
    let mut buffer = vec![7u8; 64];
    let o = vm.run_in(&edge_mover(65, 6), &mut [], &mut buffer, (0, 50), 0, 100, 0).unwrap();
    assert_eq!((o.action, o.start, o.len), (2, 0, 56));
    assert_eq!(&buffer[50..56], &[0; 6], "what the buffer held there is not shown");
    assert_eq!(&buffer[56..], &[7; 8]);
    assert_eq!(vm.run_in(&edge_mover(65, 20), &mut [], &mut buffer, (0, 50), 0, 100, 0).unwrap().action, 1);
    // The room around the frame is not the program's until an edge moves over it.
    let before = Program::from_insns(vec![i(0x61, 2, 1, 0, 0), i(0x71, 0, 2, -1, 0), EXIT], Vec::new()).unwrap();
    assert!(matches!(vm.run_in(&before, &mut [], &mut buffer, (8, 50), 0, 100, 0), Err(Fault::Memory { pc: 1, .. })));
}
