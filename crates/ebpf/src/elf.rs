//! An owner's object file read through the `object` crate's ELF reader, which bounds-checks
//! every header, table and range against the file (these bytes come from whoever owns a VR).
//! This module only turns its answers into the few facts the loader needs (sections, symbols,
//! relocations) and says what is wrong in words naming the byte, section or symbol.

use crate::LoadError;
use object::elf::{FileHeader64, SectionHeader64, EM_BPF, SHT_NOBITS, SHT_REL, SHT_STRTAB, SHT_SYMTAB, STT_FUNC};
use object::read::elf::{FileHeader, Rel, SectionHeader, SectionTable, Sym};
use object::LittleEndian as Le;

type Header = FileHeader64<Le>;

pub struct Elf<'a> {
    bytes: &'a [u8],
    table: SectionTable<'a, Header>,
    pub sections: Vec<Section<'a>>,
}

#[derive(Clone, Debug)]
pub struct Section<'a> {
    pub name: String,
    /// Its size; for `SHT_NOBITS` (`.bss`) more than its bytes in the file, which are none.
    pub size: usize,
    pub nobits: bool,
    /// Its bytes in the file, checked to lie within it.
    pub data: &'a [u8],
    header: &'a SectionHeader64<Le>,
}

#[derive(Clone, Debug)]
pub struct Symbol {
    pub name: String,
    pub section: u16,
    pub value: u64,
    /// Whether it names a function (in a program section: a program).
    pub function: bool,
}

/// A relocation: the byte offset in its section and the symbol it names.
#[derive(Clone, Copy, Debug)]
pub struct Relocation {
    pub offset: u64,
    pub symbol: usize,
}

fn bad(what: impl std::fmt::Display) -> LoadError {
    LoadError(format!("not an eBPF ELF object: {what}"))
}

/// The NUL-terminated string at `at` of a string table (BTF's too).
pub fn string_at(table: &[u8], at: usize) -> Result<String, LoadError> {
    let tail = table.get(at..).ok_or_else(|| bad(format!("a name at {at} outside its string table")))?;
    let end = tail.iter().position(|&b| b == 0).ok_or_else(|| bad("an unterminated name"))?;
    Ok(String::from_utf8_lossy(&tail[..end]).into_owned())
}

impl<'a> Elf<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Elf<'a>, LoadError> {
        // The identification bytes are checked here first, so that the commonest mistakes (not
        // an object, a 32-bit or big-endian one) are named by their byte, not by the reader's
        // generic "unsupported header".
        if bytes.get(..4) != Some(b"\x7fELF") {
            return Err(bad("no ELF magic at byte 0"));
        }
        if bytes.get(4) != Some(&2) || bytes.get(5) != Some(&1) {
            return Err(bad("byte 4/5: not a 64-bit little-endian object"));
        }
        let header = Header::parse(bytes).map_err(|e| bad(format!("its header: {e}")))?;
        let machine = header.e_machine(Le);
        if machine != EM_BPF {
            return Err(bad(format!("byte 18: machine {machine} is not BPF ({EM_BPF})")));
        }
        let table = header.sections(Le, bytes).map_err(|e| bad(format!("its section headers (from byte {}): {e}", header.e_shoff(Le))))?;
        let names = header.shstrndx(Le, bytes).map_err(|e| bad(format!("byte 62: {e}")))?;
        if table.section(object::SectionIndex(names as usize)).ok().is_none_or(|s| s.sh_type(Le) != SHT_STRTAB) {
            return Err(bad(format!("byte 62: section {names} is no section-name table")));
        }
        let sections = table
            .enumerate()
            .map(|(i, s)| {
                let name = table.section_name(Le, s).map_err(|e| bad(format!("section {}: its name: {e}", i.0)))?;
                let nobits = s.sh_type(Le) == SHT_NOBITS;
                let data = s.data(Le, bytes).map_err(|e| bad(format!("section {}: {e}", i.0)))?;
                let size = usize::try_from(s.sh_size(Le)).map_err(|_| bad(format!("section {}: a size beyond memory", i.0)))?;
                Ok(Section { name: String::from_utf8_lossy(name).into_owned(), size, nobits, data, header: s })
            })
            .collect::<Result<_, LoadError>>()?;
        Ok(Elf { bytes, table, sections })
    }

    pub fn section(&self, name: &str) -> Option<(usize, &Section<'a>)> {
        self.sections.iter().enumerate().find(|(_, s)| s.name == name)
    }

    pub fn symbols(&self) -> Result<Vec<Symbol>, LoadError> {
        let symbols = self.table.symbols(Le, self.bytes, SHT_SYMTAB).map_err(|e| bad(format!("its symbol table: {e}")))?;
        symbols
            .enumerate()
            .map(|(i, s)| {
                let name = symbols.symbol_name(Le, s).map_err(|e| bad(format!("symbol {}: its name: {e}", i.0)))?;
                Ok(Symbol {
                    name: String::from_utf8_lossy(name).into_owned(),
                    section: s.st_shndx(Le).0,
                    value: s.st_value(Le),
                    function: s.st_type() == STT_FUNC,
                })
            })
            .collect()
    }

    /// The relocations that apply to section `target`.
    pub fn relocations(&self, target: usize) -> Result<Vec<Relocation>, LoadError> {
        let mut all = Vec::new();
        for s in self.sections.iter().filter(|s| s.header.sh_type(Le) == SHT_REL && s.header.sh_info(Le) as usize == target) {
            let (rels, _) = s
                .header
                .rel(Le, self.bytes)
                .map_err(|e| bad(format!("section {}: {e}", s.name)))?
                .ok_or_else(|| bad(format!("section {}: not relocations", s.name)))?;
            all.extend(rels.iter().map(|r| Relocation { offset: r.r_offset(Le), symbol: r.r_sym(Le) as usize }));
        }
        Ok(all)
    }
}
