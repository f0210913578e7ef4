//! The interpreter. A program sees one address space of 32-bit regions: the frame (its buffer
//! at `PACKET_AT`; only the frame's own bytes, from `xdp_md.data` to `data_end`, may be touched,
//! and `bpf_xdp_adjust_head`/`_tail` move those edges), its context (`xdp_md`, read-only), its stack (512
//! bytes for each function in the chain of calls), its global data and the map values it looked
//! up during this frame; any access outside them, or past their ends, or a write to read-only
//! data, stops the program (`Fault::Memory`) before it happens. Every instruction costs one unit
//! of fuel, so a loop ends when the budget does (`Fault::Fuel`).

use crate::insn::{self, Insn, CLASS_ALU, CLASS_ALU64, CLASS_JMP, CLASS_JMP32, CLASS_LD, CLASS_LDX, CLASS_ST, CLASS_STX, SRC_X};
use crate::maps::Map;
use crate::printk::{printk, Trace};
use crate::program::{Program, ADJUST_HEAD, TAIL_CALL, TRACE_VPRINTK};

pub const XDP_ABORTED: u64 = 0;
pub const XDP_DROP: u64 = 1;
pub const XDP_PASS: u64 = 2;
pub const XDP_TX: u64 = 3;
pub const XDP_REDIRECT: u64 = 4;

pub const PACKET_AT: u64 = 0x1000_0000;
pub const CTX_AT: u64 = 0x2000_0000;
pub const STACK_AT: u64 = 0x3000_0000;
/// A function's stack frame.
pub const STACK_SIZE: usize = 512;
/// The deepest chain of calls (the kernel's `MAX_CALL_FRAMES`), the entry function included.
pub const MAX_FRAMES: usize = 8;
const STACK_BYTES: usize = STACK_SIZE * MAX_FRAMES;
/// Looked-up value `k` of the frame is at `VALUES_AT + k << VALUE_SHIFT`.
pub const VALUES_AT: u64 = 0x4000_0000;
const VALUE_SHIFT: u32 = 16;
/// The most lookups that answer a value in one frame.
pub const LENT_MAX: usize = 4096;
/// What a program's map reference holds: `MAPS_AT + index`; not memory.
pub const MAPS_AT: u64 = 0x7000_0000;
/// `struct xdp_md`: data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex.
const CTX_SIZE: usize = 24;
/// The shortest frame `bpf_xdp_adjust_head` and `_tail` leave: an Ethernet header.
const ETH_HLEN: i64 = 14;
const EINVAL: u64 = 22;
const ENOENT: u64 = 2;
const TRACE_PRINTK: i32 = 6;
/// The longest format `bpf_trace_printk` reads.
const FORMAT_MAX: usize = 256;
/// The most arguments `bpf_trace_vprintk` takes (the kernel's `MAX_BPRINTF_VARARGS`).
const VPRINTK_ARGS: usize = 12;
/// The most tail calls one frame's run makes (the kernel's `MAX_TAIL_CALL_CNT`): a further
/// one fails and the program goes on after it.
pub const MAX_TAIL_CALLS: u32 = 33;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The budget ran out: a loop, or too much work for one frame.
    Fuel,
    /// A load or store outside the program's memory.
    Memory { pc: usize, addr: u64, len: usize },
    /// A helper called with something it cannot use.
    Helper { pc: usize, what: &'static str },
    /// A call deeper than [`MAX_FRAMES`] functions.
    CallDepth { pc: usize },
}

/// What the program answered for a frame: its return value (an XDP action), the interface
/// `bpf_redirect` named, and the frame's place in its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub action: u64,
    pub redirect: Option<u32>,
    /// Where the frame lies in its buffer now (start, length): where it was, unless the
    /// program moved its edges.
    pub start: usize,
    pub len: usize,
}

/// A program's reusable state: its stack and scratch room, kept across frames so that running
/// one allocates nothing.
pub struct Vm {
    stack: [u8; STACK_BYTES],
    /// The callers of the function running: where each resumes, and its r6–r9 and frame.
    callers: Vec<Caller>,
    lent: Vec<(u32, u32)>,
    key: Vec<u8>,
    value: Vec<u8>,
    rng: u64,
    /// What `bpf_printk` printed, until the host takes it.
    pub trace: Trace,
}

impl Default for Vm {
    fn default() -> Vm {
        Vm {
            stack: [0; STACK_BYTES],
            callers: Vec::with_capacity(MAX_FRAMES),
            lent: Vec::with_capacity(LENT_MAX),
            key: Vec::with_capacity(512),
            value: Vec::new(),
            rng: 0x9e37_79b9_7f4a_7c15,
            trace: Trace::default(),
        }
    }
}

struct Caller {
    resume: usize,
    saved: [u64; 4],
    frame: u64,
}

/// The program's memory for one frame.
struct Mem<'a> {
    /// The frame's whole buffer: the frame, and the room before and after it that
    /// `bpf_xdp_adjust_head` and `_tail` may move its edges into.
    packet: &'a mut [u8],
    /// Where the frame lies in `packet` (start, end): all the program may touch of it.
    bounds: &'a mut (usize, usize),
    ctx: &'a mut [u8; CTX_SIZE],
    stack: &'a mut [u8; STACK_BYTES],
    /// The lowest stack address the running function may touch: the bottom of its own frame
    /// (its callers' frames above it are its too, through the pointers they pass it).
    stack_floor: u64,
    maps: &'a mut [Map],
    lent: &'a mut Vec<(u32, u32)>,
}

impl Mem<'_> {
    fn slice(&mut self, addr: u64, len: usize, write: bool) -> Option<&mut [u8]> {
        let end = addr.checked_add(len as u64)?;
        let within = |base: u64, size: usize| addr >= base && end <= base + size as u64;
        let (start, end) = *self.bounds;
        if within(PACKET_AT + start as u64, end - start) {
            let at = (addr - PACKET_AT) as usize;
            return Some(&mut self.packet[at..at + len]);
        }
        if addr >= self.stack_floor && within(STACK_AT, STACK_BYTES) {
            let at = (addr - STACK_AT) as usize;
            return Some(&mut self.stack[at..at + len]);
        }
        if !write && within(CTX_AT, CTX_SIZE) {
            let at = (addr - CTX_AT) as usize;
            return Some(&mut self.ctx[at..at + len]);
        }
        if addr >= VALUES_AT && addr < VALUES_AT + ((self.lent.len() as u64) << VALUE_SHIFT) {
            let (k, at) = (((addr - VALUES_AT) >> VALUE_SHIFT) as usize, ((addr - VALUES_AT) & ((1 << VALUE_SHIFT) - 1)) as usize);
            let (map, slot) = self.lent[k];
            if write && self.maps[map as usize].read_only_for_program() {
                return None;
            }
            let v = self.maps[map as usize].value_mut(slot);
            return v.get_mut(at..at.checked_add(len)?);
        }
        None
    }

    fn load(&mut self, pc: usize, addr: u64, len: usize) -> Result<u64, Fault> {
        let s = self.slice(addr, len, false).ok_or(Fault::Memory { pc, addr, len })?;
        let mut b = [0u8; 8];
        b[..len].copy_from_slice(s);
        Ok(u64::from_le_bytes(b))
    }

    fn store(&mut self, pc: usize, addr: u64, len: usize, v: u64) -> Result<(), Fault> {
        let s = self.slice(addr, len, true).ok_or(Fault::Memory { pc, addr, len })?;
        s.copy_from_slice(&v.to_le_bytes()[..len]);
        Ok(())
    }

    /// `len` bytes at `addr` into `out` (a helper's key or value argument).
    fn read_into(&mut self, pc: usize, addr: u64, len: usize, out: &mut Vec<u8>) -> Result<(), Fault> {
        let s = self.slice(addr, len, false).ok_or(Fault::Memory { pc, addr, len })?;
        out.clear();
        out.extend_from_slice(s);
        Ok(())
    }
}

impl Vm {
    /// Runs `program` on `frame` (which it may rewrite in place), arrived by interface
    /// `ingress`, with `fuel` instructions at most; `maps` are the program's.
    pub fn run(
        &mut self,
        program: &Program,
        maps: &mut [Map],
        frame: &mut [u8],
        ingress: u32,
        fuel: u64,
        now_ns: u64,
    ) -> Result<Outcome, Fault> {
        let len = frame.len();
        self.run_in(program, maps, frame, (0, len), ingress, fuel, now_ns)
    }

    /// Runs `program` on the frame at `frame.0..frame.0 + frame.1` of `buffer`: as `run`, and
    /// the program may move the frame's edges into the room around it (`bpf_xdp_adjust_head`,
    /// `bpf_xdp_adjust_tail`); the outcome says where the frame is then.
    #[allow(clippy::too_many_arguments, reason = "run's arguments and the frame's place in its buffer")]
    pub fn run_in(
        &mut self,
        program: &Program,
        maps: &mut [Map],
        buffer: &mut [u8],
        frame: (usize, usize),
        ingress: u32,
        fuel: u64,
        now_ns: u64,
    ) -> Result<Outcome, Fault> {
        let start = frame.0.min(buffer.len());
        let mut bounds = (start, start + frame.1.min(buffer.len() - start));
        let mut ctx = [0u8; CTX_SIZE];
        set_ctx_bounds(&mut ctx, bounds);
        ctx[12..16].copy_from_slice(&ingress.to_le_bytes());
        self.lent.clear();
        // Global data first: a program's `PSEUDO_MAP_VALUE` load names global `g` as lent value `g`.
        self.lent.extend(program.globals.iter().map(|&m| (m, 0)));
        self.callers.clear();
        let mut lent = std::mem::take(&mut self.lent);
        let answer = self.execute(program, maps, buffer, &mut bounds, &mut ctx, &mut lent, fuel, now_ns);
        self.lent = lent;
        for m in maps.iter_mut() {
            m.settle();
        }
        answer
    }

    #[allow(clippy::too_many_arguments, reason = "the frame's pieces, split so that the memory view can borrow them apart")]
    fn execute(
        &mut self,
        program: &Program,
        maps: &mut [Map],
        frame: &mut [u8],
        bounds: &mut (usize, usize),
        ctx: &mut [u8; CTX_SIZE],
        lent: &mut Vec<(u32, u32)>,
        mut fuel: u64,
        now_ns: u64,
    ) -> Result<Outcome, Fault> {
        let insns = &program.insns[..];
        let mut r = [0u64; 11];
        r[1] = CTX_AT;
        r[10] = STACK_AT + STACK_BYTES as u64;
        let mut redirect = None;
        let mut pc = program.entry;
        let mut tail_calls = 0;
        loop {
            if fuel == 0 {
                return Err(Fault::Fuel);
            }
            fuel -= 1;
            // Verified: every path ends in an exit or a jump inside the program.
            let Some(&i) = insns.get(pc) else { return Err(Fault::Memory { pc, addr: 0, len: 0 }) };
            let at = pc;
            pc += 1;
            let (d, s) = (usize::from(i.dst), usize::from(i.src));
            match i.op & 7 {
                CLASS_ALU64 => {
                    let v = if i.op & SRC_X != 0 { r[s] } else { i.imm as i64 as u64 };
                    r[d] = alu64(i, r[d], v);
                }
                CLASS_ALU => {
                    let v = if i.op & SRC_X != 0 { r[s] as u32 } else { i.imm as u32 };
                    r[d] = alu32(i, r[d], v);
                }
                CLASS_JMP | CLASS_JMP32 => match i.op {
                    insn::EXIT => match self.callers.pop() {
                        Some(c) => {
                            r[6..10].copy_from_slice(&c.saved);
                            r[10] = c.frame;
                            pc = c.resume;
                        }
                        None => return Ok(Outcome { action: r[0], redirect, start: bounds.0, len: bounds.1 - bounds.0 }),
                    },
                    insn::CALL if i.src == insn::PSEUDO_CALL => {
                        if self.callers.len() + 1 >= MAX_FRAMES {
                            return Err(Fault::CallDepth { pc: at });
                        }
                        self.callers.push(Caller { resume: pc, saved: [r[6], r[7], r[8], r[9]], frame: r[10] });
                        r[10] -= STACK_SIZE as u64;
                        pc = (pc as i64 + i64::from(i.imm)) as usize;
                    }
                    insn::JA => pc = (pc as i64 + i64::from(i.off)) as usize,
                    insn::JA32 => pc = (pc as i64 + i64::from(i.imm)) as usize,
                    insn::CALL => {
                        let mut mem =
                            Mem { packet: frame, bounds, ctx, stack: &mut self.stack, stack_floor: r[10] - STACK_SIZE as u64, maps, lent };
                        if i.imm == TAIL_CALL {
                            // As the kernel's: the program named replaces the running function
                            // (same frame; its exit returns to that function's caller); an
                            // empty slot, or one call too many, and the program goes on here.
                            match tail_call_target(program, mem.maps, &r).filter(|_| tail_calls < MAX_TAIL_CALLS) {
                                Some(target) => {
                                    tail_calls += 1;
                                    r[1] = CTX_AT;
                                    pc = target;
                                }
                                None => r[0] = ENOENT.wrapping_neg(),
                            }
                            continue;
                        }
                        r[0] = if i.imm == TRACE_PRINTK || i.imm == TRACE_VPRINTK {
                            trace_printk(at, i.imm, &r, &mut mem, &mut self.key, &mut self.trace)?
                        } else {
                            helper(at, i.imm, &r, &mut mem, &mut self.key, &mut self.value, &mut self.rng, now_ns, &mut redirect)?
                        };
                    }
                    _ => {
                        let v = if i.op & SRC_X != 0 { r[s] } else { i.imm as i64 as u64 };
                        if condition(i, r[d], v) {
                            pc = (pc as i64 + i64::from(i.off)) as usize;
                        }
                    }
                },
                CLASS_LDX => {
                    let len = insn::size(i.op);
                    let mut mem =
                        Mem { packet: frame, bounds, ctx, stack: &mut self.stack, stack_floor: r[10] - STACK_SIZE as u64, maps, lent };
                    let v = mem.load(at, r[s].wrapping_add(i.off as i64 as u64), len)?;
                    r[d] = if i.op & 0xe0 == insn::MODE_MEMSX { sign_extend(v, len * 8) } else { v };
                }
                CLASS_ST => {
                    let mut mem =
                        Mem { packet: frame, bounds, ctx, stack: &mut self.stack, stack_floor: r[10] - STACK_SIZE as u64, maps, lent };
                    mem.store(at, r[d].wrapping_add(i.off as i64 as u64), insn::size(i.op), i.imm as i64 as u64)?;
                }
                CLASS_STX => {
                    let (addr, len) = (r[d].wrapping_add(i.off as i64 as u64), insn::size(i.op));
                    let mut mem =
                        Mem { packet: frame, bounds, ctx, stack: &mut self.stack, stack_floor: r[10] - STACK_SIZE as u64, maps, lent };
                    if i.op & 0xe0 == insn::MODE_ATOMIC {
                        let old = mem.load(at, addr, len)?;
                        let (new, fetched) = atomic(i.imm, old, r[s], r[0], len);
                        mem.store(at, addr, len, new)?;
                        match i.imm {
                            insn::ATOMIC_CMPXCHG => r[0] = fetched,
                            imm if imm & insn::ATOMIC_FETCH != 0 => r[s] = fetched,
                            _ => {}
                        }
                    } else {
                        mem.store(at, addr, len, r[s])?;
                    }
                }
                CLASS_LD => {
                    let high = insns.get(pc).map_or(0, |n| n.imm as u32 as u64);
                    pc += 1;
                    r[d] = match i.src {
                        insn::PSEUDO_MAP => MAPS_AT + i.imm as u64,
                        // Verified: the global exists and the offset is inside it.
                        insn::PSEUDO_MAP_VALUE => VALUES_AT + ((i.imm as u32 as u64) << VALUE_SHIFT) + (high & 0xffff_ffff),
                        _ => (i.imm as u32 as u64) | (high << 32),
                    };
                }
                _ => unreachable!("verified: every class is known"),
            }
        }
    }
}

fn sign_extend(v: u64, bits: usize) -> u64 {
    let shift = 64 - bits;
    (((v << shift) as i64) >> shift) as u64
}

fn alu64(i: Insn, d: u64, s: u64) -> u64 {
    let signed = i.off == 1;
    match i.op & 0xf0 {
        0x00 => d.wrapping_add(s),
        0x10 => d.wrapping_sub(s),
        0x20 => d.wrapping_mul(s),
        0x30 if s == 0 => 0,
        0x30 if signed => (d as i64).wrapping_div(s as i64) as u64,
        0x30 => d / s,
        0x40 => d | s,
        0x50 => d & s,
        0x60 => d << (s & 63),
        0x70 => d >> (s & 63),
        0x80 => d.wrapping_neg(),
        0x90 if s == 0 => d,
        0x90 if signed => (d as i64).wrapping_rem(s as i64) as u64,
        0x90 => d % s,
        0xa0 => d ^ s,
        0xb0 => match i.off {
            8 | 16 | 32 => sign_extend(s, i.off as usize),
            _ => s,
        },
        0xc0 => ((d as i64) >> (s & 63)) as u64,
        // 0xd0, verified: an unconditional byte swap of the low `imm` bits.
        _ => match i.imm {
            16 => u64::from((d as u16).swap_bytes()),
            32 => u64::from((d as u32).swap_bytes()),
            _ => d.swap_bytes(),
        },
    }
}

fn alu32(i: Insn, d64: u64, s: u32) -> u64 {
    let d = d64 as u32;
    let signed = i.off == 1;
    let v = match i.op & 0xf0 {
        0x00 => d.wrapping_add(s),
        0x10 => d.wrapping_sub(s),
        0x20 => d.wrapping_mul(s),
        0x30 if s == 0 => 0,
        0x30 if signed => (d as i32).wrapping_div(s as i32) as u32,
        0x30 => d / s,
        0x40 => d | s,
        0x50 => d & s,
        0x60 => d << (s & 31),
        0x70 => d >> (s & 31),
        0x80 => d.wrapping_neg(),
        0x90 if s == 0 => d,
        0x90 if signed => (d as i32).wrapping_rem(s as i32) as u32,
        0x90 => d % s,
        0xa0 => d ^ s,
        0xb0 => match i.off {
            8 | 16 => sign_extend(u64::from(s), i.off as usize) as u32,
            _ => s,
        },
        0xc0 => ((d as i32) >> (s & 31)) as u32,
        // 0xd0: to little endian (this host's: a truncation) or to big endian (a swap).
        _ => {
            let big = i.op & SRC_X != 0;
            return match (i.imm, big) {
                (16, false) => d64 & 0xffff,
                (32, false) => d64 & 0xffff_ffff,
                (_, false) => d64,
                (16, true) => u64::from((d64 as u16).swap_bytes()),
                (32, true) => u64::from((d64 as u32).swap_bytes()),
                (_, true) => d64.swap_bytes(),
            };
        }
    };
    u64::from(v)
}

fn condition(i: Insn, d: u64, s: u64) -> bool {
    let (d, s) = if i.op & 7 == CLASS_JMP32 { (u64::from(d as u32), u64::from(s as u32)) } else { (d, s) };
    let narrow = i.op & 7 == CLASS_JMP32;
    let (sd, ss) = if narrow { (i64::from(d as u32 as i32), i64::from(s as u32 as i32)) } else { (d as i64, s as i64) };
    match i.op & 0xf0 {
        0x10 => d == s,
        0x20 => d > s,
        0x30 => d >= s,
        0x40 => d & s != 0,
        0x50 => d != s,
        0x60 => sd > ss,
        0x70 => sd >= ss,
        0xa0 => d < s,
        0xb0 => d <= s,
        0xc0 => sd < ss,
        _ => sd <= ss,
    }
}

/// An atomic operation on `old`: the value to store and the one to hand back.
fn atomic(op: i32, old: u64, s: u64, r0: u64, len: usize) -> (u64, u64) {
    let mask = if len == 4 { 0xffff_ffff } else { u64::MAX };
    let new = match op {
        insn::ATOMIC_XCHG => s,
        insn::ATOMIC_CMPXCHG => {
            if old == r0 & mask {
                s
            } else {
                old
            }
        }
        op => match op & !insn::ATOMIC_FETCH {
            0x00 => old.wrapping_add(s),
            0x40 => old | s,
            0x50 => old & s,
            _ => old ^ s,
        },
    };
    (new & mask, old)
}

#[allow(clippy::too_many_arguments, reason = "a helper sees the registers, the memory and the run's few pieces of state")]
fn helper(
    pc: usize,
    id: i32,
    r: &[u64; 11],
    mem: &mut Mem<'_>,
    key: &mut Vec<u8>,
    value: &mut Vec<u8>,
    rng: &mut u64,
    now_ns: u64,
    redirect: &mut Option<u32>,
) -> Result<u64, Fault> {
    let map_of = |handle: u64, maps: usize| match handle.checked_sub(MAPS_AT) {
        Some(m) if (m as usize) < maps => Ok(m as usize),
        _ => Err(Fault::Helper { pc, what: "r1 is not a map" }),
    };
    match id {
        1..=3 => {
            let m = map_of(r[1], mem.maps.len())?;
            if mem.maps[m].is_program_array() {
                // Only bpf_tail_call reads a program array (the kernel's verifier refuses the rest).
                return Ok(if id == 1 { 0 } else { EINVAL.wrapping_neg() });
            }
            let (key_size, value_size) = (mem.maps[m].def.key_size as usize, mem.maps[m].def.value_size as usize);
            mem.read_into(pc, r[2], key_size, key)?;
            match id {
                1 => match mem.maps[m].lookup(key) {
                    None => Ok(0),
                    Some(slot) => lend(pc, mem, m as u32, slot),
                },
                2 => {
                    mem.read_into(pc, r[3], value_size, value)?;
                    Ok(mem.maps[m].update(key, value, r[4]) as u64)
                }
                _ => Ok(mem.maps[m].delete(key) as u64),
            }
        }
        5 => Ok(now_ns),
        7 => {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            Ok(*rng >> 32)
        }
        8 => Ok(0),
        23 => {
            *redirect = Some(r[1] as u32);
            Ok(if r[2] == 0 { XDP_REDIRECT } else { XDP_ABORTED })
        }
        ADJUST_HEAD | 65 => {
            if r[1] != CTX_AT {
                return Err(Fault::Helper { pc, what: "r1 is not the context" });
            }
            let ((start, end), delta) = (*mem.bounds, r[2] as i32 as i64);
            // As the kernel: the frame keeps an Ethernet header, and its edges stay in the buffer.
            let moved = if id == ADJUST_HEAD { (start as i64 + delta, end as i64) } else { (start as i64, end as i64 + delta) };
            if moved.0 < 0 || moved.1 > mem.packet.len() as i64 || moved.1 - moved.0 < ETH_HLEN {
                return Ok(EINVAL.wrapping_neg());
            }
            let moved = (moved.0 as usize, moved.1 as usize);
            if moved.1 > end {
                // A tail that grows shows zeroes, not what the buffer held before.
                mem.packet[end..moved.1].fill(0);
            }
            *mem.bounds = moved;
            set_ctx_bounds(mem.ctx, moved);
            Ok(0)
        }
        _ => Err(Fault::Helper { pc, what: "an unknown helper" }),
    }
}

/// The first instruction of the program that tail call `bpf_tail_call(ctx, r2, r3)` names.
fn tail_call_target(program: &Program, maps: &[Map], r: &[u64; 11]) -> Option<usize> {
    let map = maps.get(usize::try_from(r[2].checked_sub(MAPS_AT)?).ok()?)?;
    let number = map.program_at(r[3] as u32)?;
    program.programs.get(number as usize).map(|p| p.1)
}

/// `bpf_trace_printk(fmt, fmt_size, arg1, arg2, arg3)`, or `bpf_trace_vprintk(fmt, fmt_size,
/// args, args_size)` with up to 12 u64 arguments in the program's memory: the line's length,
/// or `-EINVAL` for a format or arguments the kernel refuses.
fn trace_printk(pc: usize, id: i32, r: &[u64; 11], mem: &mut Mem<'_>, fmt: &mut Vec<u8>, trace: &mut Trace) -> Result<u64, Fault> {
    let mut args = [0u64; VPRINTK_ARGS];
    let count = if id == TRACE_VPRINTK {
        let size = r[4] as usize;
        if !size.is_multiple_of(8) || size > 8 * VPRINTK_ARGS || (size > 0 && r[3] == 0) {
            return Ok(EINVAL.wrapping_neg());
        }
        for (k, arg) in args.iter_mut().take(size / 8).enumerate() {
            *arg = mem.load(pc, r[3] + 8 * k as u64, 8)?;
        }
        size / 8
    } else {
        args[..3].copy_from_slice(&r[3..6]);
        3
    };
    mem.read_into(pc, r[1], (r[2] as usize).min(FORMAT_MAX), fmt)?;
    let string_at = |addr: u64, out: &mut [u8]| {
        // As far as the program's memory goes, up to the NUL or `out`'s length.
        let n = (1..=out.len()).rev().find(|&n| mem.slice(addr, n, false).is_some())?;
        let s = mem.slice(addr, n, false)?;
        let n = s.iter().position(|&b| b == 0).unwrap_or(n);
        out[..n].copy_from_slice(&s[..n]);
        Some(n)
    };
    Ok(printk(trace, fmt, &args[..count], string_at).map_or(EINVAL.wrapping_neg(), |n| n as u64))
}

/// `xdp_md`'s data, data_end and data_meta (no metadata: the same as data) for a frame at
/// `bounds` of its buffer.
fn set_ctx_bounds(ctx: &mut [u8; CTX_SIZE], (start, end): (usize, usize)) {
    let data = (PACKET_AT + start as u64) as u32;
    ctx[0..4].copy_from_slice(&data.to_le_bytes());
    ctx[4..8].copy_from_slice(&((PACKET_AT + end as u64) as u32).to_le_bytes());
    ctx[8..12].copy_from_slice(&data.to_le_bytes());
}

/// Lends a looked-up value to the program for the rest of the frame; its address.
fn lend(pc: usize, mem: &mut Mem<'_>, map: u32, slot: u32) -> Result<u64, Fault> {
    if mem.lent.len() >= LENT_MAX {
        return Err(Fault::Helper { pc, what: "too many lookups in one frame" });
    }
    mem.lent.push((map, slot));
    Ok(VALUES_AT + ((mem.lent.len() as u64 - 1) << VALUE_SHIFT))
}
