//! PEARL's eBPF runtime: an owner's XDP program (the object file `clang -O2 -g -target bpf -c`
//! writes) run in user space on a VR's frames. Chosen for safety first: an interpreter whose
//! every memory access is checked against the regions the program may touch (the frame, its
//! context, its stack, the map values it looked up) and whose every instruction costs fuel,
//! so a program that loops or reads wild stops alone, by reason, before it does harm. Maps
//! (array, hash, LPM trie) are plain memory its owner reads and writes through pearld's API.
//!
//! [`Program::load`] reads and checks the object once; [`Vm::run`] runs it on one frame.
//!
//! ## In detail
//!
//! An XDP object as clang writes it, run in user space. `elf.rs` and `btf.rs` read the program's
//! section, its maps (libbpf's BTF-described `.maps`, or the older `maps` section) and its
//! relocations; `link.rs` links as libbpf does: the functions clang kept apart (`.text`) go after
//! the entry section (and, in an object with a program array, every other program section, which
//! `bpf_tail_call` jumps to by the array's entries) with each call aimed at them, map references become map indices, and each
//! global data section (`.data`, `.bss`, `.rodata`) becomes a one-element array map (read-only for
//! the program if `.rodata`) that the owner reads and sets like any map; `program.rs` checks what
//! the interpreter relies on once (known opcodes, r10 read-only, jumps and calls inside the
//! program, known helpers, global offsets inside their data); `vm.rs` interprets it over one address
//! space of 32-bit regions (the frame, `xdp_md`, a 512-byte stack frame per function in the chain
//! of calls, at most eight, the globals and the map values looked up for this frame), each access
//! checked before it happens, one unit of fuel per instruction; `maps.rs`: array, hash and LPM trie, whose freed slots are reused only
//! after the frame so that a pointer the program holds never reaches another key's value. Helpers:
//! map lookup/update/delete, ktime, prandom, processor id, redirect, `tail_call` (the target
//! takes the running function's place, at most 33 a frame; an empty slot goes on), `trace_printk`
//! and `trace_vprintk` (`printk.rs`:
//! the kernel's formats into the `Vm`'s `Trace`, which `XdpProgram` empties into pearld's log
//! after a batch, 20 lines a second per VR), and `xdp_adjust_head`/`_tail`,
//! which move the frame's edges within its buffer (`Vm::run_in` takes the buffer and the frame's
//! place in it and answers the place after the run; `XdpProgram` gives a program that calls
//! `adjust_head` 256 bytes of room in front, `Packet::reserve_headroom`, and shifts the frame's
//! offload offsets with its head).

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
