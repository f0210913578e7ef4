//! Linking an object's code into one program, as libbpf does before it loads one: the functions
//! clang did not inline live in `.text`, which goes after the entry section with each call aimed
//! at its new place; a reference to a map becomes the map's index; a reference to global data
//! (`.data`, `.bss`, `.rodata`) becomes an address in a one-element array map made of its
//! section (`.rodata` read-only for the program), so that an owner reads and sets a program's
//! globals through the API like any of its maps.

use crate::elf::{Elf, Symbol};
use crate::insn::{self, Insn};
use crate::maps::{MapDef, BPF_F_RDONLY_PROG, BPF_MAP_TYPE_ARRAY, VALUE_MAX};
use crate::LoadError;

pub struct Linked {
    pub insns: Vec<Insn>,
    /// Where each code section placed starts: (section, first instruction).
    pub placed: Vec<(usize, usize)>,
    /// The global data sections the code refers to, as maps (after the object's own maps).
    pub globals: Vec<MapDef>,
}

/// The program sections `entries` (in this order: the first starts at instruction 0) with the
/// code they call, their map and data references resolved against `maps`, which the sections
/// `map_sections` define; `symbols` are the object's. Several sections share one program's
/// maps and globals: the programs a program array names.
pub fn link(elf: &Elf<'_>, symbols: &[Symbol], entries: &[usize], maps: &[MapDef], map_sections: &[usize]) -> Result<Linked, LoadError> {
    let mut l = Linker { elf, symbols, maps, map_sections, insns: Vec::new(), placed: Vec::new(), globals: Vec::new() };
    for &entry in entries {
        l.place(entry)?;
    }
    let mut next = 0;
    while let Some(&(section, base, len)) = l.placed.get(next) {
        l.relocate(section, base, len)?;
        next += 1;
    }
    let placed = l.placed.iter().map(|&(section, base, _)| (section, base)).collect();
    Ok(Linked { insns: l.insns, placed, globals: l.globals.into_iter().map(|(_, def)| def).collect() })
}

struct Linker<'l, 'e> {
    elf: &'l Elf<'e>,
    symbols: &'l [Symbol],
    maps: &'l [MapDef],
    map_sections: &'l [usize],
    insns: Vec<Insn>,
    /// Code sections in the program: (section, first instruction, instructions).
    placed: Vec<(usize, usize, usize)>,
    /// Data sections made maps: (section, its map).
    globals: Vec<(usize, MapDef)>,
}

impl Linker<'_, '_> {
    /// Appends code section `section`; its first instruction.
    fn place(&mut self, section: usize) -> Result<usize, LoadError> {
        let s = &self.elf.sections[section];
        let code = s.data;
        if !code.len().is_multiple_of(8) || code.is_empty() {
            return Err(LoadError(format!("section {}: {} bytes is not whole instructions", s.name, code.len())));
        }
        let base = self.insns.len();
        self.insns.extend(code.chunks_exact(8).map(Insn::decode));
        self.placed.push((section, base, code.len() / 8));
        Ok(base)
    }

    /// Where code section `section` starts in the program, placing it if it is `.text`.
    fn code_at(&mut self, section: usize, at: usize) -> Result<usize, LoadError> {
        if let Some(&(_, base, _)) = self.placed.iter().find(|p| p.0 == section) {
            return Ok(base);
        }
        match self.elf.sections.get(section) {
            Some(s) if s.name == ".text" => self.place(section),
            s => Err(LoadError(format!(
                "instruction {at} calls a function in section {}: only functions in .text can be called",
                s.map_or("?", |s| s.name.as_str())
            ))),
        }
    }

    fn relocate(&mut self, section: usize, base: usize, len: usize) -> Result<(), LoadError> {
        let elf = self.elf;
        for r in elf.relocations(section)? {
            let name = &elf.sections[section].name;
            if !r.offset.is_multiple_of(8) || (r.offset / 8) as usize >= len {
                return Err(LoadError(format!("section {name}: a relocation at byte {} is not on an instruction of it", r.offset)));
            }
            let at = base + (r.offset / 8) as usize;
            let sym =
                self.symbols.get(r.symbol).ok_or_else(|| LoadError(format!("a relocation names symbol {} it does not have", r.symbol)))?;
            let (target, value, sym_name) = (usize::from(sym.section), sym.value, sym.name.clone());
            let i = self.insns[at];
            if i.op == insn::CALL && i.src == insn::PSEUDO_CALL {
                // The callee is `imm + 1` instructions after the symbol (libbpf's reading).
                let callee = self.code_at(target, at)? as i64 + (value / 8) as i64 + i64::from(i.imm) + 1;
                self.insns[at].imm =
                    i32::try_from(callee - (at as i64 + 1)).map_err(|_| LoadError(format!("instruction {at}: a call too far")))?;
            } else if i.op != insn::LDDW || at + 1 >= self.insns.len() {
                return Err(LoadError(format!("instruction {at}: a reference to {sym_name:?} that is neither a call nor a 64-bit load")));
            } else if self.map_sections.contains(&target) {
                let map = self
                    .maps
                    .iter()
                    .position(|m| m.name == sym_name)
                    .ok_or_else(|| LoadError(format!("instruction {at}: no map {sym_name:?}")))?;
                self.insns[at].src = insn::PSEUDO_MAP;
                self.insns[at].imm = map as i32;
            } else {
                let global = self.global(target, at, &sym_name)?;
                // The symbol's place in its section plus what the load adds (a section symbol's offset).
                let offset = value.wrapping_add(i.imm as u32 as u64);
                self.insns[at].src = insn::PSEUDO_MAP_VALUE;
                self.insns[at].imm = global as i32;
                self.insns[at + 1].imm =
                    u32::try_from(offset).map_err(|_| LoadError(format!("instruction {at}: an offset beyond its data")))? as i32;
            }
        }
        Ok(())
    }

    /// The index among the globals of data section `section`, made a map at its first use.
    fn global(&mut self, section: usize, at: usize, sym: &str) -> Result<usize, LoadError> {
        if let Some(g) = self.globals.iter().position(|g| g.0 == section) {
            return Ok(g);
        }
        let s = self.elf.sections.get(section).ok_or_else(|| LoadError(format!("instruction {at}: {sym:?} is in no section")))?;
        let read_only = s.name.starts_with(".rodata");
        if !(read_only || s.name.starts_with(".data") || s.name.starts_with(".bss")) {
            return Err(LoadError(format!(
                "instruction {at} refers to {sym:?} in section {}, which is neither a map, global data nor code",
                s.name
            )));
        }
        if s.size == 0 || s.size > VALUE_MAX as usize {
            return Err(LoadError(format!("global data section {} of {} bytes: 1 to {VALUE_MAX} bytes", s.name, s.size)));
        }
        let data = if s.nobits { vec![0; s.size] } else { s.data.to_vec() };
        self.globals.push((
            section,
            MapDef {
                name: s.name.clone(),
                kind: BPF_MAP_TYPE_ARRAY,
                key_size: 4,
                value_size: s.size as u32,
                max_entries: 1,
                flags: if read_only { BPF_F_RDONLY_PROG } else { 0 },
                data,
                programs: 0,
            },
        ));
        Ok(self.globals.len() - 1)
    }
}
