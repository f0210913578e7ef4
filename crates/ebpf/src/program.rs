//! Loading an XDP program from the object clang writes (`clang -O2 -g -target bpf -c`): its
//! instructions with the functions they call, its maps and global data (linked by `link.rs`),
//! and the checks that let the interpreter trust what it runs: every opcode known, every jump
//! and call inside the program, no write to the frame pointer, only the helpers this runtime has.
//! An object with a program array (`BPF_MAP_TYPE_PROG_ARRAY`) brings all its programs, which
//! `bpf_tail_call` jumps between, with the entries its definition initialises.

use crate::btf::{legacy_maps, Btf};
use crate::elf::{Elf, Symbol};
use crate::insn::{self, Insn};
use crate::link;
use crate::maps::{MapDef, BPF_MAP_TYPE_PROG_ARRAY, EMPTY_SLOT};
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
    /// The object's programs that a program array may name, by number (their names in
    /// alphabetical order): (function, first instruction). With no program array: none.
    pub programs: Vec<(String, usize)>,
    /// The instruction the program starts at.
    pub entry: usize,
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
    (TAIL_CALL, "tail_call"),
    (23, "redirect"),
    (ADJUST_HEAD, "xdp_adjust_head"),
    (65, "xdp_adjust_tail"),
    (TRACE_VPRINTK, "trace_vprintk"),
];

/// `bpf_xdp_adjust_head`'s number: a program that calls it wants room in front of its frames.
pub const ADJUST_HEAD: i32 = 44;
/// `bpf_tail_call`: jump to a program of a program array.
pub const TAIL_CALL: i32 = 12;
/// `bpf_trace_vprintk`: `bpf_printk` with more than three arguments.
pub const TRACE_VPRINTK: i32 = 177;

/// The most instructions a program may have (the kernel's limit for unprivileged programs).
pub const MAX_INSNS: usize = 4096;

/// A function in a program section: a program (name, section, byte offset).
type Function = (String, usize, u64);

impl Program {
    /// The program `name` (an ELF section such as `xdp` or `xdp/stage1`, or, where a section
    /// holds several programs, a function), or the first section named `xdp...`.
    pub fn load(object: &[u8], name: Option<&str>) -> Result<Program, LoadError> {
        let elf = Elf::parse(object)?;
        let symbols = elf.symbols()?;
        let program_sections: Vec<usize> =
            elf.sections.iter().enumerate().filter(|(_, s)| s.name.starts_with("xdp") && s.size > 0).map(|(i, _)| i).collect();
        let mut functions: Vec<Function> = symbols
            .iter()
            .filter(|f| f.function && program_sections.contains(&usize::from(f.section)))
            .map(|f| (f.name.clone(), usize::from(f.section), f.value))
            .collect();
        functions.sort();
        let (index, offset) = entry(&elf, &functions, name)?;
        let text = &elf.sections[index];
        let btf = elf.section(".BTF").map(|(_, s)| Btf::parse(s.data)).transpose()?;
        let btf_maps = match &btf {
            Some(btf) => btf.maps()?,
            None => Vec::new(),
        };
        let legacy = elf.section("maps").map(|(i, s)| (i, s.clone()));
        let legacy_symbols: Vec<(String, u64)> = match &legacy {
            Some((i, _)) => symbols.iter().filter(|s| usize::from(s.section) == *i).map(|s| (s.name.clone(), s.value)).collect(),
            None => Vec::new(),
        };
        let mut maps = match &legacy {
            Some((_, s)) => [btf_maps, legacy_maps(s.data, &legacy_symbols)?].concat(),
            None => btf_maps,
        };
        // Before anything is sized by them (a program array's slots).
        for m in &maps {
            crate::maps::Map::new(m.clone()).map_err(LoadError)?;
        }
        let btf_maps_section = elf.section(".maps").map(|(i, _)| i);
        let map_sections: Vec<usize> = [btf_maps_section, legacy.as_ref().map(|(i, _)| *i)].into_iter().flatten().collect();

        // With a program array, every program of the object is linked in: any may be jumped to.
        let jumps = maps.iter().any(|m| m.kind == BPF_MAP_TYPE_PROG_ARRAY);
        let sections: Vec<usize> =
            if jumps { [index].into_iter().chain(program_sections.iter().copied().filter(|&s| s != index)).collect() } else { vec![index] };
        let linked = link::link(&elf, &symbols, &sections, &maps, &map_sections)?;
        if linked.insns.len() > MAX_INSNS {
            return Err(LoadError(format!("{} instructions with the functions it calls; at most {MAX_INSNS}", linked.insns.len())));
        }
        let base = |section: usize| linked.placed.iter().find(|p| p.0 == section).map(|p| p.1);
        let programs: Vec<(String, usize)> = if jumps {
            functions.iter().filter_map(|(f, section, at)| Some((f.clone(), base(*section)? + (*at / 8) as usize))).collect()
        } else {
            Vec::new()
        };
        if jumps {
            let slots = btf_maps_section.map(|i| relocated(&elf, &symbols, i)).transpose()?.unwrap_or_default();
            for m in maps.iter_mut().filter(|m| m.kind == BPF_MAP_TYPE_PROG_ARRAY) {
                m.programs = programs.len() as u32;
                // The definition's place in `.maps`, and its `values` member's in it.
                let var = symbols.iter().find(|s| Some(usize::from(s.section)) == btf_maps_section && s.name == m.name);
                let member = match &btf {
                    Some(btf) => btf.values_offset(&m.name)?,
                    None => None,
                };
                let values_at = var.zip(member).and_then(|(var, member)| var.value.checked_add(member as u64));
                m.data = initial_programs(m, values_at, &slots, &programs)?;
            }
        }
        let globals: Vec<u32> = (maps.len() as u32..).take(linked.globals.len()).collect();
        maps.extend(linked.globals);
        verify(&linked.insns, &maps, &globals)?;
        Ok(Program { insns: linked.insns, maps, globals, section: text.name.clone(), programs, entry: (offset / 8) as usize })
    }
}

/// The section and byte offset the program named `name` (see `Program::load`) starts at.
fn entry(elf: &Elf<'_>, functions: &[Function], name: Option<&str>) -> Result<(usize, u64), LoadError> {
    let in_section = |index: usize, what: &str| -> Result<(usize, u64), LoadError> {
        let here: Vec<&Function> = functions.iter().filter(|f| f.1 == index).collect();
        match here.as_slice() {
            [] => Ok((index, 0)),
            [one] => Ok((index, one.2)),
            several => Err(LoadError(format!(
                "{what} holds {} programs ({}): name one of them",
                several.len(),
                several.iter().map(|f| f.0.as_str()).collect::<Vec<_>>().join(", ")
            ))),
        }
    };
    match name {
        Some(name) => match (elf.section(name), functions.iter().find(|f| f.0 == name)) {
            (Some((index, _)), _) => in_section(index, &format!("section {name}")),
            (None, Some(f)) => Ok((f.1, f.2)),
            (None, None) => Err(LoadError(format!("no section or program {name:?}; it has {}", names(elf)))),
        },
        None => {
            let (index, s) = elf
                .sections
                .iter()
                .enumerate()
                .find(|(_, s)| s.name.starts_with("xdp") && s.size > 0)
                .ok_or_else(|| LoadError(format!("no xdp section (SEC(\"xdp\")); it has {}", names(elf))))?;
            in_section(index, &format!("section {}", s.name))
        }
    }
}

/// The relocations of section `section` (`.maps`: the initialised entries of program arrays):
/// (byte offset in the section, symbol named).
fn relocated(elf: &Elf<'_>, symbols: &[Symbol], section: usize) -> Result<Vec<(u64, String)>, LoadError> {
    elf.relocations(section)?
        .into_iter()
        .map(|r| {
            let sym = symbols
                .get(r.symbol)
                .ok_or_else(|| LoadError(format!(".maps: a relocation names symbol {} it does not have", r.symbol)))?;
            Ok((r.offset, sym.name.clone()))
        })
        .collect()
}

/// A program array's entries as its definition initialises them (`.values = {[i] = &prog}`,
/// pointers from byte `values_at` of `.maps` on).
fn initial_programs(
    m: &MapDef,
    values_at: Option<u64>,
    slots: &[(u64, String)],
    programs: &[(String, usize)],
) -> Result<Vec<u8>, LoadError> {
    let mut data: Vec<u8> = std::iter::repeat_n(EMPTY_SLOT.to_le_bytes(), m.max_entries as usize).flatten().collect();
    let Some(from) = values_at else { return Ok(data) };
    for (at, function) in slots.iter().filter(|s| s.0 >= from && s.0 < from.saturating_add(8 * u64::from(m.max_entries))) {
        let i = ((at - from) / 8) as usize;
        let Some(n) = programs.iter().position(|p| &p.0 == function) else {
            return Err(LoadError(format!("map {}: index {i} names {function:?}, which is no program of an xdp section", m.name)));
        };
        data[i * 4..i * 4 + 4].copy_from_slice(&(n as u32).to_le_bytes());
    }
    Ok(data)
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
        Ok(Program { insns, maps, globals: Vec::new(), section: String::new(), programs: Vec::new(), entry: 0 })
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
