//! Map definitions as libbpf writes them: a `.maps` section described by BTF (`__uint(type,
//! BPF_MAP_TYPE_HASH)` is a member `int (*type)[1]`: a pointer to an array whose length is the
//! number; `__type(key, __u32)` is a member `__u32 *key`: a pointer to the key's type), or the
//! older `maps` section of `struct bpf_map_def` (five u32: type, key_size, value_size,
//! max_entries, map_flags).

use crate::elf::string_at;
use crate::maps::MapDef;
use crate::LoadError;

const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_DECL_TAG: u32 = 17;
const KIND_TYPE_TAG: u32 = 18;
const KIND_ENUM64: u32 = 19;

struct Type {
    name: String,
    kind: u32,
    vlen: usize,
    /// Size, or the type referred to.
    size_or_type: u32,
    /// Where the kind's extra words start in the type section.
    extra: usize,
}

pub struct Btf<'a> {
    types: Vec<Type>,
    words: &'a [u8],
    strings: &'a [u8],
}

fn bad(what: impl Into<String>) -> LoadError {
    LoadError(format!("BTF: {}", what.into()))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, LoadError> {
    at.checked_add(4)
        .and_then(|end| b.get(at..end))
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| bad(format!("truncated at byte {at}")))
}

impl<'a> Btf<'a> {
    pub fn parse(b: &'a [u8]) -> Result<Btf<'a>, LoadError> {
        if b.get(..2) != Some(&[0x9f, 0xeb]) {
            return Err(bad("no magic at byte 0"));
        }
        let hdr = u32_at(b, 4)? as usize;
        let (type_off, type_len, str_off, str_len) =
            (u32_at(b, 8)? as usize, u32_at(b, 12)? as usize, u32_at(b, 16)? as usize, u32_at(b, 20)? as usize);
        let range = |off: usize, len: usize| Some(hdr.checked_add(off)?..hdr.checked_add(off)?.checked_add(len)?);
        let words = range(type_off, type_len).and_then(|r| b.get(r)).ok_or_else(|| bad("types beyond the section"))?;
        let strings = range(str_off, str_len).and_then(|r| b.get(r)).ok_or_else(|| bad("strings beyond the section"))?;
        // Type 0 is void.
        let mut types = vec![Type { name: String::new(), kind: 0, vlen: 0, size_or_type: 0, extra: 0 }];
        let mut at = 0;
        while at < words.len() {
            let (name, info, size_or_type) = (u32_at(words, at)?, u32_at(words, at + 4)?, u32_at(words, at + 8)?);
            let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
            let extra = at + 12;
            at = extra
                + match kind {
                    KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
                    KIND_ARRAY => 12,
                    KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * vlen,
                    KIND_ENUM | KIND_FUNC_PROTO => 8 * vlen,
                    0..=19 => 0,
                    k => return Err(bad(format!("type {} has unknown kind {k}", types.len()))),
                };
            types.push(Type { name: string_at(strings, name as usize)?, kind, vlen, size_or_type, extra });
        }
        Ok(Btf { types, words, strings })
    }

    fn ty(&self, id: u32) -> Result<&Type, LoadError> {
        self.types.get(id as usize).ok_or_else(|| bad(format!("no type {id}")))
    }

    /// Follows typedefs and qualifiers.
    fn resolve(&self, mut id: u32) -> Result<&Type, LoadError> {
        for _ in 0..32 {
            let t = self.ty(id)?;
            match t.kind {
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => id = t.size_or_type,
                _ => return Ok(t),
            }
        }
        Err(bad("a chain of typedefs too long"))
    }

    /// An array's size is its element's times its length, down a chain a hostile object may
    /// make circular or overflowing: both refused.
    fn size_of(&self, mut id: u32) -> Result<usize, LoadError> {
        let mut times: usize = 1;
        for _ in 0..32 {
            let t = self.resolve(id)?;
            let size = match t.kind {
                KIND_INT | KIND_STRUCT | KIND_UNION | KIND_ENUM | KIND_ENUM64 => t.size_or_type as usize,
                KIND_PTR => 8,
                KIND_ARRAY => {
                    times = times.checked_mul(u32_at(self.words, t.extra + 8)? as usize).ok_or_else(|| bad("an array too large"))?;
                    id = u32_at(self.words, t.extra)?;
                    continue;
                }
                k => return Err(bad(format!("the size of a type of kind {k}"))),
            };
            return size.checked_mul(times).ok_or_else(|| bad("an array too large"));
        }
        Err(bad("arrays nested too deep"))
    }

    /// The maps of DATASEC `.maps`, in its order.
    pub fn maps(&self) -> Result<Vec<MapDef>, LoadError> {
        let Some(sec) = self.types.iter().find(|t| t.kind == KIND_DATASEC && t.name == ".maps") else { return Ok(Vec::new()) };
        (0..sec.vlen)
            .map(|i| {
                let var = self.ty(u32_at(self.words, sec.extra + 12 * i)?)?;
                let def = self.resolve(var.size_or_type)?;
                if def.kind != KIND_STRUCT {
                    return Err(bad(format!("map {}: its definition is not a struct", var.name)));
                }
                let mut m = MapDef { name: var.name.clone(), ..MapDef::default() };
                for f in 0..def.vlen {
                    let at = def.extra + 12 * f;
                    let (name, member) = (string_at(self.strings, u32_at(self.words, at)? as usize)?, u32_at(self.words, at + 4)?);
                    if name == VALUES {
                        // A program array's initial programs (`__array(values, ...)`): read
                        // from the relocations of `.maps` (`values_offset`); each value is a
                        // program, 4 bytes, as libbpf takes it.
                        m.value_size = m.value_size.max(4);
                        continue;
                    }
                    let pointee = {
                        let t = self.resolve(member)?;
                        if t.kind != KIND_PTR {
                            return Err(bad(format!("map {}: member {name} is not a pointer (__uint or __type)", var.name)));
                        }
                        t.size_or_type
                    };
                    // __uint(name, N): a pointer to an array of N.
                    let number = || -> Result<u32, LoadError> {
                        let t = self.resolve(pointee)?;
                        if t.kind != KIND_ARRAY {
                            return Err(bad(format!("map {}: {name} is not a number (__uint)", var.name)));
                        }
                        u32_at(self.words, t.extra + 8)
                    };
                    match name.as_str() {
                        "type" => m.kind = number()?,
                        "max_entries" => m.max_entries = number()?,
                        "map_flags" => m.flags = number()?,
                        "key_size" => m.key_size = number()?,
                        "value_size" => m.value_size = number()?,
                        "key" => m.key_size = self.size_of(pointee)? as u32,
                        "value" => m.value_size = self.size_of(pointee)? as u32,
                        // pinning and the like mean nothing here.
                        _ => {}
                    }
                }
                Ok(m)
            })
            .collect()
    }
}

/// The member of a map definition that initialises its entries (`.values = {...}`).
const VALUES: &str = "values";

impl Btf<'_> {
    /// Where in map `name`'s definition its initial entries start (the `values` member), in
    /// bytes; `None` if it has none.
    pub fn values_offset(&self, name: &str) -> Result<Option<usize>, LoadError> {
        let Some(sec) = self.types.iter().find(|t| t.kind == KIND_DATASEC && t.name == ".maps") else { return Ok(None) };
        for i in 0..sec.vlen {
            let var = self.ty(u32_at(self.words, sec.extra + 12 * i)?)?;
            if var.name != name {
                continue;
            }
            let def = self.resolve(var.size_or_type)?;
            for f in 0..def.vlen {
                let at = def.extra + 12 * f;
                if string_at(self.strings, u32_at(self.words, at)? as usize)? == VALUES {
                    // The member's offset in bits (the low 24 when the struct has bitfields).
                    return Ok(Some((u32_at(self.words, at + 8)? & 0xff_ffff) as usize / 8));
                }
            }
        }
        Ok(None)
    }
}

/// The maps of a `maps` section of `struct bpf_map_def`, named by `symbols` (name, offset).
pub fn legacy_maps(data: &[u8], symbols: &[(String, u64)]) -> Result<Vec<MapDef>, LoadError> {
    symbols
        .iter()
        .map(|(name, at)| {
            let word = |i: u64| {
                let at = at.checked_add(4 * i).and_then(|a| usize::try_from(a).ok());
                at.ok_or_else(|| bad(format!("map {name}: its definition beyond the maps section"))).and_then(|a| u32_at(data, a))
            };
            Ok(MapDef {
                name: name.clone(),
                kind: word(0)?,
                key_size: word(1)?,
                value_size: word(2)?,
                max_entries: word(3)?,
                flags: word(4)?,
                data: Vec::new(),
                programs: 0,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BTF of `types` (each its 12-byte head and its extra words) with an empty string table.
    fn btf(types: &[&[u32]]) -> Vec<u8> {
        let words: Vec<u8> = types.iter().flat_map(|t| t.iter().flat_map(|w| w.to_le_bytes())).collect();
        let mut b = vec![0x9f, 0xeb, 1, 0];
        for w in [24, 0, words.len() as u32, words.len() as u32, 1] {
            b.extend(w.to_le_bytes());
        }
        b.extend(words);
        b.push(0);
        b
    }

    const ARRAY: u32 = KIND_ARRAY << 24;
    const INT: u32 = KIND_INT << 24;

    #[test]
    fn an_array_of_itself_is_refused_not_followed_for_ever() {
        let b = btf(&[&[0, ARRAY, 0, 1, 1, 2]]);
        assert_eq!(Btf::parse(&b).unwrap().size_of(1).unwrap_err().0, "BTF: arrays nested too deep");
    }

    #[test]
    fn an_array_larger_than_memory_is_refused() {
        let b = btf(&[&[0, INT, 8, 64], &[0, ARRAY, 0, 1, 1, u32::MAX], &[0, ARRAY, 0, 2, 1, u32::MAX], &[0, ARRAY, 0, 3, 1, 4]]);
        let btf = Btf::parse(&b).unwrap();
        assert_eq!(btf.size_of(2).unwrap(), 8 * u32::MAX as usize);
        assert_eq!(btf.size_of(4).unwrap_err().0, "BTF: an array too large");
    }
}
