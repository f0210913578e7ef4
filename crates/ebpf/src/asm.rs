//! An eBPF assembler for the programs PEARL writes itself (the kernel's flow-offload and AF_XDP
//! programs), so that their source reads like the program: named registers, one operation per
//! call with a register or a constant for its operand, named helpers, and jumps to labels the
//! assembler resolves when the program is finished. It writes the crate's one instruction type,
//! which the kernel's loader encodes and this crate's interpreter runs.

use crate::insn::{self, Insn};

/// A register; `FP` (r10) is the frame pointer, read-only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg(u8);

pub const R0: Reg = Reg(0);
pub const R1: Reg = Reg(1);
pub const R2: Reg = Reg(2);
pub const R3: Reg = Reg(3);
pub const R4: Reg = Reg(4);
pub const R5: Reg = Reg(5);
pub const R6: Reg = Reg(6);
pub const R7: Reg = Reg(7);
pub const R8: Reg = Reg(8);
pub const R9: Reg = Reg(9);
pub const FP: Reg = Reg(10);

/// An operation's source: a register (`BPF_X`) or a 32-bit constant (`BPF_K`).
#[derive(Clone, Copy)]
pub enum Operand {
    Reg(Reg),
    Imm(i32),
}

impl From<Reg> for Operand {
    fn from(r: Reg) -> Operand {
        Operand::Reg(r)
    }
}

impl From<i32> for Operand {
    fn from(k: i32) -> Operand {
        Operand::Imm(k)
    }
}

/// Memory access widths (the size field of a load or store).
#[derive(Clone, Copy)]
pub enum Size {
    B = 0x10,
    H = 0x08,
    W = 0x00,
    Dw = 0x18,
}

/// Jump conditions, unsigned (`BPF_JEQ` ...).
#[derive(Clone, Copy)]
pub enum Cond {
    Eq = 0x10,
    Gt = 0x20,
    Ne = 0x50,
    Lt = 0xa0,
    Le = 0xb0,
}

/// The kernel's helpers these programs call (`enum bpf_func_id`).
#[derive(Clone, Copy, Debug)]
pub enum Helper {
    MapLookupElem = 1,
    SkbStoreBytes = 9,
    Redirect = 23,
    SkbLoadBytes = 26,
    RedirectMap = 51,
    /// The tick's time, not the clock source's.
    KtimeGetCoarseNs = 160,
}

#[derive(Clone, Copy)]
pub struct Label(usize);

const ALU64_ADD: u8 = insn::CLASS_ALU64;
const ALU64_AND: u8 = insn::CLASS_ALU64 | 0x50;
const ALU64_RSH: u8 = insn::CLASS_ALU64 | 0x70;
const ALU64_MOV: u8 = insn::CLASS_ALU64 | 0xb0;
/// `BPF_ALU | BPF_END | BPF_TO_BE`: a byte swap on a little-endian machine.
const TO_BE: u8 = insn::CLASS_ALU | 0xd0 | insn::SRC_X;
const LDX_MEM: u8 = insn::CLASS_LDX | insn::MODE_MEM;
const ST_MEM: u8 = insn::CLASS_ST | insn::MODE_MEM;
const STX_MEM: u8 = insn::CLASS_STX | insn::MODE_MEM;
/// `BPF_STX | BPF_ATOMIC | BPF_DW` with `imm` `BPF_ADD`.
const ATOMIC_ADD_DW: u8 = insn::CLASS_STX | insn::MODE_ATOMIC | Size::Dw as u8;

#[derive(Default)]
pub struct Asm {
    insns: Vec<Insn>,
    /// (instruction, label) of each jump whose offset is not known yet.
    jumps: Vec<(usize, Label)>,
    labels: Vec<Option<usize>>,
}

impl Asm {
    fn push(&mut self, op: u8, dst: Reg, src: Reg, off: i16, imm: i32) {
        self.insns.push(Insn { op, dst: dst.0, src: src.0, off, imm });
    }

    /// `op` with `src` as its source: the register form or the constant form.
    fn alu(&mut self, op: u8, dst: Reg, src: Operand) {
        match src {
            Operand::Reg(r) => self.push(op | insn::SRC_X, dst, r, 0, 0),
            Operand::Imm(k) => self.push(op, dst, R0, 0, k),
        }
    }

    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// The next instruction is `label`'s.
    pub fn bind(&mut self, label: Label) {
        self.labels[label.0] = Some(self.insns.len());
    }

    /// `dst = *(size *)(src + off)`
    pub fn ldx(&mut self, size: Size, dst: Reg, src: Reg, off: i16) {
        self.push(LDX_MEM | size as u8, dst, src, off, 0);
    }

    /// `*(size *)(dst + off) = src`
    pub fn stx(&mut self, size: Size, dst: Reg, off: i16, src: Reg) {
        self.push(STX_MEM | size as u8, dst, src, off, 0);
    }

    /// `*(size *)(dst + off) = imm`
    pub fn st(&mut self, size: Size, dst: Reg, off: i16, imm: i32) {
        self.push(ST_MEM | size as u8, dst, R0, off, imm);
    }

    pub fn mov(&mut self, dst: Reg, src: impl Into<Operand>) {
        self.alu(ALU64_MOV, dst, src.into());
    }

    pub fn add(&mut self, dst: Reg, src: impl Into<Operand>) {
        self.alu(ALU64_ADD, dst, src.into());
    }

    pub fn and(&mut self, dst: Reg, src: impl Into<Operand>) {
        self.alu(ALU64_AND, dst, src.into());
    }

    pub fn rsh(&mut self, dst: Reg, src: impl Into<Operand>) {
        self.alu(ALU64_RSH, dst, src.into());
    }

    /// The low `bits` (16 or 32) of `dst` in network byte order, the rest zeroed.
    pub fn swap_to_network(&mut self, dst: Reg, bits: i32) {
        self.push(TO_BE, dst, R0, 0, bits);
    }

    /// `*(u64 *)(dst + off) += src`, atomically.
    pub fn atomic_add64(&mut self, dst: Reg, off: i16, src: Reg) {
        self.push(ATOMIC_ADD_DW, dst, src, off, 0);
    }

    /// `if dst <cond> src goto to`
    pub fn jump(&mut self, cond: Cond, dst: Reg, src: impl Into<Operand>, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.alu(insn::CLASS_JMP | cond as u8, dst, src.into());
    }

    pub fn goto(&mut self, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.push(insn::JA, R0, R0, 0, 0);
    }

    /// `r0 = helper(r1, ..., r5)`; r1–r5 are the callee's afterwards.
    pub fn call(&mut self, helper: Helper) {
        self.push(insn::CALL, R0, R0, 0, helper as i32);
    }

    /// `return r0`
    pub fn exit(&mut self) {
        self.push(insn::EXIT, R0, R0, 0, 0);
    }

    /// `dst = &map` of the map whose descriptor is `map_fd` (the kernel's verifier swaps the
    /// descriptor for the map).
    pub fn ld_map(&mut self, dst: Reg, map_fd: u32) {
        self.push(insn::LDDW, dst, Reg(insn::PSEUDO_MAP), 0, map_fd as i32);
        self.push(0, R0, R0, 0, 0);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Program, Vm};

    /// What the assembler writes is what the interpreter runs: a backward jump (a loop) and a
    /// forward one, register and constant operands.
    #[test]
    fn a_program_assembled_with_labels_runs_as_written() {
        let mut a = Asm::default();
        let (again, done) = (a.label(), a.label());
        a.mov(R0, 0);
        a.mov(R1, 5);
        a.bind(again);
        a.add(R0, R1);
        a.add(R1, -1);
        a.jump(Cond::Ne, R1, 0, again);
        a.mov(R2, 15);
        a.jump(Cond::Eq, R0, R2, done);
        a.mov(R0, 99);
        a.bind(done);
        a.exit();
        let program = Program::from_insns(a.finish(), Vec::new()).unwrap();
        let outcome = Vm::default().run(&program, &mut [], &mut [0; 14], 0, 1000, 0).unwrap();
        assert_eq!(outcome.action, 15, "5 + 4 + 3 + 2 + 1");
    }
}
