//! Loading an XDP program from the object clang writes (`clang -O2 -g -target bpf -c`): its
//! instructions with the functions they call, its maps and global data (linked by `link.rs`),
//! and the checks that let the interpreter trust what it runs: every opcode known, every jump
//! and call inside the program, no write to the frame pointer, only the helpers this runtime has.

use crate::btf::{legacy_maps, Btf};
use crate::elf::Elf;
use crate::insn::{self, Insn};
use crate::link;
use crate::maps::MapDef;
use crate::LoadError;

/// A program ready to run.
#[derive(Clone, Debug)]
pub struct Program {
    pub insns: Vec<Insn>,
    pub maps: Vec<MapDef>,
    /// The maps holding its global data sections (`.data`, `.bss`, `.rodata`), by global
    /// index: a 64-bit load of `PSEUDO_MAP_VALUE` names one by its place here.
    pub globals: Vec<u32>,
    /// The ELF section it came from.
    pub section: String,
}

/// The helpers a program may call (`bpf_map_lookup_elem` = 1 ...), by number.
pub const HELPERS: &[(i32, &str)] = &[
    (1, "map_lookup_elem"),
    (2, "map_update_elem"),
    (3, "map_delete_elem"),
    (5, "ktime_get_ns"),
    (6, "trace_printk"),
    (7, "get_prandom_u32"),
    (8, "get_smp_processor_id"),
    (23, "redirect"),
    (ADJUST_HEAD, "xdp_adjust_head"),
    (65, "xdp_adjust_tail"),
];

/// `bpf_xdp_adjust_head`'s number: a program that calls it wants room in front of its frames.
pub const ADJUST_HEAD: i32 = 44;

/// The most instructions a program may have (the kernel's limit for unprivileged programs).
pub const MAX_INSNS: usize = 4096;

impl Program {
    /// The program in section `section`, or the first whose name starts with `xdp`.
    pub fn load(object: &[u8], section: Option<&str>) -> Result<Program, LoadError> {
        let elf = Elf::parse(object)?;
        let (index, text) = match section {
            Some(name) => elf.section(name).ok_or_else(|| LoadError(format!("no section {name:?}; it has {}", names(&elf))))?,
            None => elf
                .sections
                .iter()
                .enumerate()
                .find(|(_, s)| s.name.starts_with("xdp") && s.size > 0)
                .ok_or_else(|| LoadError(format!("no xdp section (SEC(\"xdp\")); it has {}", names(&elf))))?,
        };
        let btf_maps = match elf.section(".BTF") {
            Some((_, s)) => Btf::parse(elf.data(s))?.maps()?,
            None => Vec::new(),
        };
        let symbols = elf.symbols()?;
        let legacy = elf.section("maps").map(|(i, s)| (i, s.clone()));
        let legacy_symbols: Vec<(String, u64)> = match &legacy {
            Some((i, _)) => symbols.iter().filter(|s| usize::from(s.section) == *i).map(|s| (s.name.clone(), s.value)).collect(),
            None => Vec::new(),
        };
        let mut maps = match &legacy {
            Some((_, s)) => [btf_maps, legacy_maps(elf.data(s), &legacy_symbols)?].concat(),
            None => btf_maps,
        };
        let map_sections: Vec<usize> =
            [elf.section(".maps").map(|(i, _)| i), legacy.as_ref().map(|(i, _)| *i)].into_iter().flatten().collect();

        let linked = link::link(&elf, &symbols, index, &maps, &map_sections)?;
        if linked.insns.len() > MAX_INSNS {
            return Err(LoadError(format!("{} instructions with the functions it calls; at most {MAX_INSNS}", linked.insns.len())));
        }
        let globals: Vec<u32> = (maps.len() as u32..).take(linked.globals.len()).collect();
        maps.extend(linked.globals);
        for m in &maps {
            crate::maps::Map::new(m.clone()).map_err(LoadError)?;
        }
        verify(&linked.insns, &maps, &globals)?;
        Ok(Program { insns: linked.insns, maps, globals, section: text.name.clone() })
    }
}

impl Program {
    /// A program from instructions already decoded (map references: a 64-bit load with source
    /// `PSEUDO_MAP` and the map's index), checked as `load` checks an object's.
    pub fn from_insns(insns: Vec<Insn>, maps: Vec<MapDef>) -> Result<Program, LoadError> {
        if insns.is_empty() || insns.len() > MAX_INSNS {
            return Err(LoadError(format!("{} instructions; 1 to {MAX_INSNS}", insns.len())));
        }
        for m in &maps {
            crate::maps::Map::new(m.clone()).map_err(LoadError)?;
        }
        verify(&insns, &maps, &[])?;
        Ok(Program { insns, maps, globals: Vec::new(), section: String::new() })
    }
}

fn names(elf: &Elf<'_>) -> String {
    elf.sections.iter().map(|s| s.name.as_str()).filter(|n| !n.is_empty()).collect::<Vec<_>>().join(", ")
}

/// What the interpreter relies on, checked once: known opcodes, registers 0–10 with r10
/// read-only, jumps and calls inside the program, 64-bit loads whole, the last instruction an
/// exit or a jump.
fn verify(insns: &[Insn], maps: &[MapDef], globals: &[u32]) -> Result<(), LoadError> {
    let refuse = |pc: usize, why: String| Err(LoadError(format!("instruction {pc}: {why}")));
    let mut pc = 0;
    while pc < insns.len() {
        let i = insns[pc];
        if i.dst > 10 || i.src > 10 {
            return refuse(pc, format!("register r{} does not exist", i.dst.max(i.src)));
        }
        let class = i.op & 7;
        let writes_dst = matches!(class, insn::CLASS_ALU | insn::CLASS_ALU64 | insn::CLASS_LDX | insn::CLASS_LD);
        if writes_dst && i.dst == 10 {
            return refuse(pc, "r10 (the frame pointer) is read-only".into());
        }
        if !insn::known(i) {
            return refuse(pc, format!("unknown opcode {:#04x}", i.op));
        }
        match i.op {
            insn::LDDW => {
                let Some(next) = insns.get(pc + 1) else { return refuse(pc, "a 64-bit load without its second half".into()) };
                if next.op != 0 || next.dst != 0 || next.src != 0 || next.off != 0 {
                    return refuse(pc + 1, "the second half of a 64-bit load is malformed".into());
                }
                match i.src {
                    0 => {}
                    insn::PSEUDO_MAP if i.imm as u32 as usize >= maps.len() => return refuse(pc, format!("map {} does not exist", i.imm)),
                    insn::PSEUDO_MAP => {}
                    insn::PSEUDO_MAP_VALUE => {
                        let Some(&map) = globals.get(i.imm as u32 as usize) else {
                            return refuse(pc, format!("global data {} does not exist", i.imm));
                        };
                        if next.imm as u32 >= maps[map as usize].value_size {
                            return refuse(
                                pc,
                                format!("an offset of {} into {}, beyond its end", next.imm as u32, maps[map as usize].name),
                            );
                        }
                    }
                    kind => return refuse(pc, format!("a 64-bit load of kind {kind} (only constants, maps and global data)")),
                }
                pc += 2;
                continue;
            }
            insn::CALL if i.src == insn::PSEUDO_CALL => {
                let target = pc as i64 + 1 + i64::from(i.imm);
                if target < 0 || target >= insns.len() as i64 {
                    return refuse(pc, format!("a call to {target}, outside the program"));
                }
            }
            insn::CALL => {
                if i.src != 0 {
                    return refuse(pc, format!("a call of kind {} (only helpers and functions of the program)", i.src));
                }
                if !HELPERS.iter().any(|&(n, _)| n == i.imm) {
                    return refuse(pc, format!("helper {} is not one this runtime has ({})", i.imm, helper_list()));
                }
            }
            _ if insn::is_jump(i) => {
                let off = if i.op == insn::JA32 { i.imm as i64 } else { i64::from(i.off) };
                let target = pc as i64 + 1 + off;
                if target < 0 || target >= insns.len() as i64 {
                    return refuse(pc, format!("a jump to {target}, outside the program"));
                }
            }
            _ => {}
        }
        pc += 1;
    }
    let last = insns[insns.len() - 1];
    if last.op != insn::EXIT && last.op != insn::JA && last.op != insn::JA32 {
        return refuse(insns.len() - 1, "the program does not end with an exit or a jump".into());
    }
    Ok(())
}

fn helper_list() -> String {
    HELPERS.iter().map(|(n, name)| format!("{n} {name}")).collect::<Vec<_>>().join(", ")
}
