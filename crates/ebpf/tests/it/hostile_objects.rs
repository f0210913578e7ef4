//! Objects clang built, then damaged where a careless or hostile owner would damage them: each
//! is refused with words that name what is wrong (the section, the symbol, the byte), never a
//! panic and never a program half-loaded.

use crate::clang;
use object::elf::{FileHeader64, SHT_NOBITS};
use object::read::elf::FileHeader;
use object::LittleEndian as Le;
use pearl_ebpf::Program;

/// The ELF64 section header's fields this file changes, as byte offsets within a header.
const SH_TYPE: usize = 4;
const SH_OFFSET: usize = 24;
const SH_SIZE: usize = 32;
const SH_ENTRY: usize = 64;
const E_SHOFF: usize = 0x28;
const E_SHSTRNDX: usize = 0x3e;

/// Where section `name`'s header starts in `elf`, and its index.
fn header_of(elf: &[u8], name: &str) -> (usize, usize) {
    let header = FileHeader64::<Le>::parse(elf).unwrap();
    let sections = header.sections(Le, elf).unwrap();
    let (index, _) = sections.enumerate().find(|(_, s)| sections.section_name(Le, s).unwrap() == name.as_bytes()).unwrap();
    (header.e_shoff(Le) as usize + index.0 * SH_ENTRY, index.0)
}

fn refused(elf: &[u8]) -> String {
    Program::load(elf, None).expect_err("a damaged object is refused").0
}

#[test]
fn a_section_that_runs_past_the_end_of_the_file_is_refused_by_its_number() {
    let mut wire = clang::build("wire");
    let (at, index) = header_of(&wire, "xdp");
    let len = wire.len() as u64;
    wire[at + SH_SIZE..at + SH_SIZE + 8].copy_from_slice(&len.to_le_bytes());
    let why = refused(&wire);
    assert!(why.contains(&format!("section {index}")), "{why}");
}

#[test]
fn section_headers_beyond_the_file_are_refused_saying_where_they_were_looked_for() {
    let mut wire = clang::build("wire");
    let len = wire.len() as u64;
    wire[E_SHOFF..E_SHOFF + 8].copy_from_slice(&len.to_le_bytes());
    let why = refused(&wire);
    assert!(why.contains(&format!("section headers (from byte {len})")), "{why}");
}

#[test]
fn a_relocation_naming_a_symbol_the_object_lacks_is_refused_by_the_symbols_number() {
    let mut wire = clang::build("wire");
    // wire's program refers to its map `frames`: one relocation in `.relxdp`.
    let (at, _) = header_of(&wire, ".relxdp");
    let first = u64::from_le_bytes(wire[at + SH_OFFSET..at + SH_OFFSET + 8].try_into().unwrap()) as usize;
    // r_info: the symbol in the high 32 bits, the type in the low.
    wire[first + 12..first + 16].copy_from_slice(&9999u32.to_le_bytes());
    let why = refused(&wire);
    assert!(why.contains("symbol 9999"), "{why}");
}

#[test]
fn a_section_name_table_with_no_bytes_in_the_file_is_refused() {
    // What the fuzzer found first: `.bss`-like names (SHT_NOBITS) read as if they were there.
    let mut wire = clang::build("wire");
    let header = FileHeader64::<Le>::parse(&wire[..]).unwrap();
    let names = usize::from(u16::from_le_bytes([wire[E_SHSTRNDX], wire[E_SHSTRNDX + 1]]));
    let at = header.e_shoff(Le) as usize + names * SH_ENTRY;
    wire[at + SH_TYPE..at + SH_TYPE + 4].copy_from_slice(&SHT_NOBITS.0.to_le_bytes());
    let why = refused(&wire);
    assert_eq!(why, format!("not an eBPF ELF object: byte 62: section {names} is no section-name table"));
}

#[test]
fn an_object_for_another_machine_is_refused_by_its_machine_byte() {
    let mut wire = clang::build("wire");
    wire[0x12..0x14].copy_from_slice(&62u16.to_le_bytes());
    assert_eq!(refused(&wire), "not an eBPF ELF object: byte 18: machine 62 is not BPF (247)");
}
