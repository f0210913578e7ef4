//! eBPF instructions (RFC 9669): 8 bytes, `op`, the destination and source registers in one
//! byte (destination low), a signed 16-bit offset and a signed 32-bit immediate. The one
//! instruction type of PEARL: an owner's object decodes to it, the interpreter runs it, PEARL's
//! own kernel programs are assembled in it (`asm`) and encoded for bpf(2).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub op: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    pub fn decode(b: &[u8]) -> Insn {
        Insn {
            op: b[0],
            dst: b[1] & 0xf,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// `struct bpf_insn` as the kernel reads it on this little-endian machine.
    pub fn encode(self) -> [u8; 8] {
        let [o0, o1] = self.off.to_le_bytes();
        let [i0, i1, i2, i3] = self.imm.to_le_bytes();
        [self.op, self.dst | self.src << 4, o0, o1, i0, i1, i2, i3]
    }
}

pub const CLASS_LD: u8 = 0;
pub const CLASS_LDX: u8 = 1;
pub const CLASS_ST: u8 = 2;
pub const CLASS_STX: u8 = 3;
pub const CLASS_ALU: u8 = 4;
pub const CLASS_JMP: u8 = 5;
pub const CLASS_JMP32: u8 = 6;
pub const CLASS_ALU64: u8 = 7;

/// Source: the immediate (`K`) or the source register (`X`).
pub const SRC_X: u8 = 0x08;

pub const MODE_MEM: u8 = 0x60;
/// Sign-extending loads.
pub const MODE_MEMSX: u8 = 0x80;
pub const MODE_ATOMIC: u8 = 0xc0;

pub const LDDW: u8 = 0x18;
pub const JA: u8 = 0x05;
/// `gotol`: a jump by the 32-bit immediate.
pub const JA32: u8 = 0x06;
pub const CALL: u8 = 0x85;
pub const EXIT: u8 = 0x95;

/// A 64-bit load's source field when the immediate is a map's index (`BPF_PSEUDO_MAP_FD`).
pub const PSEUDO_MAP: u8 = 1;
/// A 64-bit load's source field when it loads the address of global data
/// (`BPF_PSEUDO_MAP_VALUE`): the immediate is the data section's index among the program's
/// globals, the second half's immediate the offset in it.
pub const PSEUDO_MAP_VALUE: u8 = 2;
/// A call's source field when it calls a function of the program (`BPF_PSEUDO_CALL`): the
/// immediate is the callee's offset from the next instruction.
pub const PSEUDO_CALL: u8 = 1;

/// Atomic operations (`imm` of an atomic store); `FETCH` also returns the old value.
pub const ATOMIC_FETCH: i32 = 0x01;
pub const ATOMIC_XCHG: i32 = 0xe1;
pub const ATOMIC_CMPXCHG: i32 = 0xf1;

/// The size field of loads and stores, in bytes.
pub fn size(op: u8) -> usize {
    match op & 0x18 {
        0x00 => 4,
        0x08 => 2,
        0x10 => 1,
        _ => 8,
    }
}

pub fn is_jump(i: Insn) -> bool {
    matches!(i.op & 7, CLASS_JMP | CLASS_JMP32) && i.op != CALL && i.op != EXIT
}

/// Whether the interpreter runs `i`.
pub fn known(i: Insn) -> bool {
    let code = i.op & 0xf0;
    match i.op & 7 {
        CLASS_LD => i.op == LDDW,
        CLASS_LDX => matches!(i.op & 0xe0, MODE_MEM | MODE_MEMSX) && !(i.op & 0xe0 == MODE_MEMSX && size(i.op) == 8),
        CLASS_ST => i.op & 0xe0 == MODE_MEM,
        CLASS_STX => match i.op & 0xe0 {
            MODE_MEM => true,
            MODE_ATOMIC => {
                matches!(size(i.op), 4 | 8)
                    && matches!(i.imm, 0x00 | 0x40 | 0x50 | 0xa0 | 0x01 | 0x41 | 0x51 | 0xa1 | ATOMIC_XCHG | ATOMIC_CMPXCHG)
            }
            _ => false,
        },
        CLASS_ALU | CLASS_ALU64 => match code {
            // add sub mul div or and lsh rsh neg mod xor mov arsh
            0x00..=0xc0 => true,
            // byte swaps: to little/big endian (ALU), unconditional (ALU64, K only)
            0xd0 => matches!(i.imm, 16 | 32 | 64) && (i.op & 7 == CLASS_ALU || i.op & SRC_X == 0),
            _ => false,
        },
        CLASS_JMP => match code {
            0x00 => i.op == JA,
            0x80 => i.op == CALL,
            0x90 => i.op == EXIT,
            0x10..=0x70 | 0xa0..=0xd0 => true,
            _ => false,
        },
        CLASS_JMP32 => match code {
            0x00 => i.op == JA32,
            0x10..=0x70 | 0xa0..=0xd0 => true,
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::Insn;

    #[test]
    fn an_instruction_encodes_to_the_bytes_it_decodes_from() {
        // r3 = *(u16 *)(r10 - 34); if r1 != -1 goto +7
        for bytes in [[0x69, 0xa3, 0xde, 0xff, 0, 0, 0, 0], [0x55, 0x01, 7, 0, 0xff, 0xff, 0xff, 0xff]] {
            assert_eq!(Insn::decode(&bytes).encode(), bytes);
        }
    }
}
