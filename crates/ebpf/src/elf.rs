//! Just enough of ELF64 (little-endian, as clang's `-target bpf` writes on x86) to find an
//! object's sections, symbols and relocations. Every offset is checked against the file: a
//! truncated or hostile object is refused, naming what is wrong.

use crate::LoadError;

pub struct Elf<'a> {
    bytes: &'a [u8],
    pub sections: Vec<Section>,
}

#[derive(Clone, Debug)]
pub struct Section {
    pub name: String,
    pub kind: u32,
    pub offset: usize,
    pub size: usize,
    pub link: u32,
    /// For a relocation section: the section it applies to.
    pub info: u32,
}

#[derive(Clone, Debug)]
pub struct Symbol {
    pub name: String,
    pub section: u16,
    pub value: u64,
    /// `st_info`: binding and type.
    pub info: u8,
}

/// `STT_FUNC`: a symbol naming a function (in a program section: a program).
const STT_FUNC: u8 = 2;

impl Symbol {
    pub fn is_function(&self) -> bool {
        self.info & 0xf == STT_FUNC
    }
}

/// A relocation: the byte offset in its section and the symbol it names.
#[derive(Clone, Copy, Debug)]
pub struct Relocation {
    pub offset: u64,
    pub symbol: usize,
}

pub const SHT_SYMTAB: u32 = 2;
pub const SHT_REL: u32 = 9;

fn bad(what: impl Into<String>) -> LoadError {
    LoadError(format!("not an eBPF ELF object: {}", what.into()))
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, LoadError> {
    b.get(at..at.saturating_add(2)).map(|s| u16::from_le_bytes([s[0], s[1]])).ok_or_else(|| bad(format!("truncated at byte {at}")))
}

pub fn u32_at(b: &[u8], at: usize) -> Result<u32, LoadError> {
    b.get(at..at.saturating_add(4))
        .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
        .ok_or_else(|| bad(format!("truncated at byte {at}")))
}

fn u64_at(b: &[u8], at: usize) -> Result<u64, LoadError> {
    b.get(at..at.saturating_add(8))
        .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| bad(format!("truncated at byte {at}")))
}

/// The NUL-terminated string at `at` of a string table.
pub fn string_at(table: &[u8], at: usize) -> Result<String, LoadError> {
    let tail = table.get(at..).ok_or_else(|| bad(format!("a name at {at} outside its string table")))?;
    let end = tail.iter().position(|&b| b == 0).ok_or_else(|| bad("an unterminated name"))?;
    Ok(String::from_utf8_lossy(&tail[..end]).into_owned())
}

impl<'a> Elf<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Elf<'a>, LoadError> {
        if bytes.get(..4) != Some(b"\x7fELF") {
            return Err(bad("no ELF magic at byte 0"));
        }
        if bytes.get(4) != Some(&2) || bytes.get(5) != Some(&1) {
            return Err(bad("byte 4/5: not a 64-bit little-endian object"));
        }
        if u16_at(bytes, 0x12)? != 247 {
            return Err(bad(format!("byte 18: machine {} is not BPF (247)", u16_at(bytes, 0x12)?)));
        }
        let (shoff, shentsize, shnum, shstrndx) =
            (u64_at(bytes, 0x28)? as usize, u16_at(bytes, 0x3a)? as usize, u16_at(bytes, 0x3c)? as usize, u16_at(bytes, 0x3e)? as usize);
        if shentsize != 64 {
            return Err(bad(format!("byte 58: section headers of {shentsize} bytes, not 64")));
        }
        let mut raw = Vec::with_capacity(shnum);
        for i in 0..shnum {
            let h = shoff.checked_add(i * 64).filter(|h| *h < bytes.len()).ok_or_else(|| bad("section headers beyond the file"))?;
            let (name, kind, offset, size) =
                (u32_at(bytes, h)?, u32_at(bytes, h + 4)?, u64_at(bytes, h + 24)? as usize, u64_at(bytes, h + 32)? as usize);
            let (link, info) = (u32_at(bytes, h + 40)?, u32_at(bytes, h + 44)?);
            // SHT_NOBITS (.bss) has a size but no bytes in the file.
            if kind != 8 && offset.checked_add(size).is_none_or(|end| end > bytes.len()) {
                return Err(bad(format!("section {i} runs past the end of the file")));
            }
            raw.push((name, Section { name: String::new(), kind, offset, size, link, info }));
        }
        let table = raw
            .get(shstrndx)
            .filter(|(_, s)| s.kind != 8)
            .and_then(|(_, s)| bytes.get(s.offset..s.offset + s.size))
            .ok_or_else(|| bad(format!("byte 62: section {shstrndx} is no section-name table")))?;
        let sections = raw
            .into_iter()
            .map(|(name, mut s)| {
                s.name = string_at(table, name as usize)?;
                Ok(s)
            })
            .collect::<Result<_, LoadError>>()?;
        Ok(Elf { bytes, sections })
    }

    pub fn data(&self, s: &Section) -> &'a [u8] {
        if s.kind == 8 {
            return &[];
        }
        &self.bytes[s.offset..s.offset + s.size]
    }

    pub fn section(&self, name: &str) -> Option<(usize, &Section)> {
        self.sections.iter().enumerate().find(|(_, s)| s.name == name)
    }

    pub fn symbols(&self) -> Result<Vec<Symbol>, LoadError> {
        let Some(symtab) = self.sections.iter().find(|s| s.kind == SHT_SYMTAB) else { return Ok(Vec::new()) };
        let strings = self.sections.get(symtab.link as usize).ok_or_else(|| bad("the symbol table names no string table"))?;
        let (data, strings) = (self.data(symtab), self.data(strings));
        (0..data.len() / 24)
            .map(|i| {
                let e = i * 24;
                Ok(Symbol {
                    name: string_at(strings, u32_at(data, e)? as usize)?,
                    section: u16_at(data, e + 6)?,
                    value: u64_at(data, e + 8)?,
                    info: *data.get(e + 4).ok_or_else(|| bad("a symbol beyond its table"))?,
                })
            })
            .collect()
    }

    /// The relocations that apply to section `target`.
    pub fn relocations(&self, target: usize) -> Result<Vec<Relocation>, LoadError> {
        let mut all = Vec::new();
        for s in self.sections.iter().filter(|s| s.kind == SHT_REL && s.info as usize == target) {
            let data = self.data(s);
            for i in 0..data.len() / 16 {
                let info = u64_at(data, i * 16 + 8)?;
                all.push(Relocation { offset: u64_at(data, i * 16)?, symbol: (info >> 32) as usize });
            }
        }
        Ok(all)
    }
}
