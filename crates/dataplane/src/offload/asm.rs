//! A small eBPF assembler with forward labels, for the flow-offload programs: each instruction
//! is one call, jumps name a label and are resolved when the program is finished.

use crate::bpf_sys::{insn, Insn};

#[derive(Clone, Copy)]
pub struct Label(usize);

/// Memory access widths.
#[derive(Clone, Copy)]
pub enum Size {
    B = 0x10,
    H = 0x08,
    W = 0x00,
    Dw = 0x18,
}

/// Jump conditions (BPF_JMP | op | BPF_K or BPF_X).
#[derive(Clone, Copy)]
pub enum Cond {
    Eq = 0x10,
    Gt = 0x20,
    Ne = 0x50,
    Lt = 0xa0,
    Le = 0xb0,
}

pub const R0: u8 = 0;
pub const R1: u8 = 1;
pub const R2: u8 = 2;
pub const R3: u8 = 3;
pub const R4: u8 = 4;
pub const R5: u8 = 5;
pub const R6: u8 = 6;
pub const R7: u8 = 7;
pub const R8: u8 = 8;
pub const FP: u8 = 10;

/// BPF_LDX, BPF_STX, BPF_ST with BPF_MEM; the size is or-ed in.
const LDX_MEM: u8 = 0x61;
const STX_MEM: u8 = 0x63;
const ST_MEM: u8 = 0x62;
const ALU64_K: u8 = 0x07;
const ALU64_X: u8 = 0x0f;
const ADD: u8 = 0x00;
/// BPF_ALU | BPF_END | BPF_TO_BE: a byte swap on this little-endian machine.
const TO_BE: u8 = 0xdc;
const AND: u8 = 0x50;
const RSH: u8 = 0x70;
const MOV: u8 = 0xb0;
const JMP_K: u8 = 0x05;
const JMP_X: u8 = 0x0d;
const JA: u8 = 0x05;
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;
const LD_IMM64: u8 = 0x18;
const PSEUDO_MAP_FD: u8 = 1;
/// BPF_STX | BPF_ATOMIC | BPF_DW with imm BPF_ADD.
const ATOMIC_DW: u8 = 0xdb;

#[derive(Default)]
pub struct Asm {
    insns: Vec<Insn>,
    /// (instruction, label) of each jump whose offset is not known yet.
    jumps: Vec<(usize, Label)>,
    labels: Vec<Option<usize>>,
}

impl Asm {
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// The next instruction is `label`'s.
    pub fn bind(&mut self, label: Label) {
        self.labels[label.0] = Some(self.insns.len());
    }

    pub fn ldx(&mut self, size: Size, dst: u8, src: u8, off: i16) {
        self.insns.push(insn(LDX_MEM | size as u8, dst, src, off, 0));
    }

    pub fn stx(&mut self, size: Size, dst: u8, off: i16, src: u8) {
        self.insns.push(insn(STX_MEM | size as u8, dst, src, off, 0));
    }

    pub fn st(&mut self, size: Size, dst: u8, off: i16, imm: i32) {
        self.insns.push(insn(ST_MEM | size as u8, dst, 0, off, imm));
    }

    pub fn mov(&mut self, dst: u8, src: u8) {
        self.insns.push(insn(ALU64_X | MOV, dst, src, 0, 0));
    }

    pub fn mov_imm(&mut self, dst: u8, imm: i32) {
        self.insns.push(insn(ALU64_K | MOV, dst, 0, 0, imm));
    }

    pub fn add(&mut self, dst: u8, src: u8) {
        self.insns.push(insn(ALU64_X | ADD, dst, src, 0, 0));
    }

    pub fn add_imm(&mut self, dst: u8, imm: i32) {
        self.insns.push(insn(ALU64_K | ADD, dst, 0, 0, imm));
    }

    /// The low `bits` (16 or 32) of `dst` in network byte order, the rest zeroed.
    pub fn swap_to_network(&mut self, dst: u8, bits: i32) {
        self.insns.push(insn(TO_BE, dst, 0, 0, bits));
    }

    pub fn and_imm(&mut self, dst: u8, imm: i32) {
        self.insns.push(insn(ALU64_K | AND, dst, 0, 0, imm));
    }

    pub fn rsh_imm(&mut self, dst: u8, imm: i32) {
        self.insns.push(insn(ALU64_K | RSH, dst, 0, 0, imm));
    }

    /// `*(u64 *)(dst + off) += src`, atomically.
    pub fn atomic_add64(&mut self, dst: u8, off: i16, src: u8) {
        self.insns.push(insn(ATOMIC_DW, dst, src, off, 0));
    }

    /// `if dst <cond> imm goto to`.
    pub fn jump_imm(&mut self, cond: Cond, dst: u8, imm: i32, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.insns.push(insn(JMP_K | cond as u8, dst, 0, 0, imm));
    }

    /// `if dst <cond> src goto to`.
    pub fn jump_reg(&mut self, cond: Cond, dst: u8, src: u8, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.insns.push(insn(JMP_X | cond as u8, dst, src, 0, 0));
    }

    pub fn goto(&mut self, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.insns.push(insn(JA, 0, 0, 0, 0));
    }

    pub fn call(&mut self, helper: i32) {
        self.insns.push(insn(CALL, 0, 0, 0, helper));
    }

    pub fn exit(&mut self) {
        self.insns.push(insn(EXIT, 0, 0, 0, 0));
    }

    /// `dst = &map` (the verifier swaps the descriptor for the map).
    pub fn ld_map(&mut self, dst: u8, map_fd: u32) {
        self.insns.push(insn(LD_IMM64, dst, PSEUDO_MAP_FD, 0, map_fd as i32));
        self.insns.push(insn(0, 0, 0, 0, 0));
    }

    /// The program, its jumps resolved. Panics on a label never bound: a bug in the program's
    /// builder, found by its tests.
    pub fn finish(mut self) -> Vec<Insn> {
        for &(at, label) in &self.jumps {
            let to = self.labels[label.0].expect("every label a program jumps to is bound");
            self.insns[at].off = i16::try_from(to as isize - at as isize - 1).expect("jumps within a small program");
        }
        self.insns
    }
}
