//! Fuzzes the eBPF loader and interpreter behind `plugin: {xdp: ...}`: any file is loaded or
//! refused with an error, never a panic; a program that loads runs on a frame to an answer or a
//! fault within its fuel, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pearl_ebpf::{Map, Program, Vm};

fuzz_target!(|data: &[u8]| {
    let Ok(program) = Program::load(data, None) else { return };
    let Ok(mut maps) = program.maps.iter().map(|d| Map::new(d.clone())).collect::<Result<Vec<_>, _>>() else { return };
    let mut vm = Vm::default();
    for len in [0usize, 14, 60, 1514] {
        let mut frame = vec![0x45u8; len];
        let _ = vm.run(&program, &mut maps, &mut frame, 0, 10_000, 0);
    }
});
