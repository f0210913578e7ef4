//! PEARL's eBPF runtime: an owner's XDP program (the object file `clang -O2 -g -target bpf -c`
//! writes) run in user space on a VR's frames. Chosen for safety first: an interpreter whose
//! every memory access is checked against the regions the program may touch (the frame, its
//! context, its stack, the map values it looked up) and whose every instruction costs fuel,
//! so a program that loops or reads wild stops alone, by reason, before it does harm. Maps
//! (array, hash, LPM trie) are plain memory its owner reads and writes through pearld's API.
//!
//! [`Program::load`] reads and checks the object once; [`Vm::run`] runs it on one frame.

pub mod asm;
mod btf;
mod elf;
pub mod insn;
mod link;
pub mod maps;
mod printk;
mod program;
mod vm;

pub use maps::{Map, MapDef};
pub use printk::Trace;
pub use program::{Program, ADJUST_HEAD, HELPERS, MAX_INSNS};
pub use vm::{Fault, Outcome, Vm, XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_REDIRECT, XDP_TX};

/// Why an object was refused, in words naming the section, instruction or byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}
