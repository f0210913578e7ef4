//! eBPF maps as a program and its owner see them: arrays, hashes and longest-prefix-match
//! tries. A value a program looked up stays where it is until the packet is done, even if the
//! program deletes its key meanwhile (its slot is reused only after `settle`), so a pointer the
//! program holds never reaches another key's value.

use std::collections::HashMap;

/// foldhash rather than the standard SipHash: a trie probes its index once per prefix length
/// on every lookup, and SipHash was most of that; its seed is still random per process, so an
/// owner's keys cannot aim at one bucket.
type Hasher = foldhash::fast::RandomState;

/// Key → slot.
#[derive(Clone, Debug)]
enum Index {
    /// Hashes, and tries of more than 16 bytes of data: the whole key (a trie's masked to its
    /// length). A trie's `lengths` count its keys by prefix length, so that a lookup probes only
    /// the lengths some key has (empty for a hash).
    Bytes { keys: HashMap<Box<[u8]>, u32, Hasher>, lengths: Vec<u32> },
    /// Tries of up to 16 bytes of data (IPv4, IPv6): a table per prefix length, keyed by the
    /// data as a number. A full BGP table is a million keys: in one table every probe of a
    /// lookup missed the cache twice (bucket, then the boxed key), once per length some key
    /// has; here the lengths with few keys are small tables that stay cached, and a probe
    /// reads its key inline.
    ByLength(Vec<HashMap<u128, u32, Hasher>>),
}

/// Data of at most this many bytes is kept as a number.
const INLINE_DATA: usize = 16;

/// A trie key's prefix length and data, if its data fits a number.
fn trie_parts(key: &[u8]) -> Option<(u32, &[u8])> {
    let len = u32::from_le_bytes(key.get(..4)?.try_into().ok()?);
    Some((len, key.get(4..).filter(|d| d.len() <= INLINE_DATA)?))
}

/// The first `len` bits of a trie key's data, as a number (the data's first byte highest).
fn inline_data(data: &[u8], len: u32) -> u128 {
    let mut b = [0u8; INLINE_DATA];
    b[..data.len()].copy_from_slice(data);
    inline_data_masked(u128::from_be_bytes(b), len)
}

impl Index {
    fn for_kind(kind: Kind, key_size: u32) -> Index {
        let data = key_size as usize - if kind == Kind::Lpm { 4 } else { 0 };
        match kind {
            Kind::Lpm if data <= INLINE_DATA => Index::ByLength(vec![HashMap::default(); data * 8 + 1]),
            Kind::Lpm => Index::Bytes { keys: HashMap::default(), lengths: vec![0; data * 8 + 1] },
            _ => Index::Bytes { keys: HashMap::default(), lengths: Vec::new() },
        }
    }

    /// `key` as stored (a trie's masked).
    fn get(&self, key: &[u8]) -> Option<u32> {
        match self {
            Index::Bytes { keys, .. } => keys.get(key).copied(),
            Index::ByLength(t) => {
                let (len, data) = trie_parts(key)?;
                t.get(len as usize)?.get(&inline_data(data, len)).copied()
            }
        }
    }

    fn insert(&mut self, key: Box<[u8]>, slot: u32) {
        match self {
            Index::Bytes { keys, lengths } => {
                if !lengths.is_empty() {
                    lengths[prefix_len(&key) as usize] += 1;
                }
                keys.insert(key, slot);
            }
            Index::ByLength(t) => {
                let (len, data) = trie_parts(&key).expect("update checked the key");
                t[len as usize].insert(inline_data(data, len), slot);
            }
        }
    }

    fn remove(&mut self, key: &[u8]) -> Option<u32> {
        match self {
            Index::Bytes { keys, lengths } => {
                // A trie's keys are stored with a length the update checked: one found has it.
                let slot = keys.remove(key)?;
                if !lengths.is_empty() {
                    lengths[prefix_len(key) as usize] -= 1;
                }
                Some(slot)
            }
            Index::ByLength(t) => {
                let (len, data) = trie_parts(key)?;
                t.get_mut(len as usize)?.remove(&inline_data(data, len))
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Index::Bytes { keys, .. } => keys.len(),
            Index::ByLength(t) => t.iter().map(HashMap::len).sum(),
        }
    }

    /// Every (key, slot); `key_size` rebuilds a trie's keys.
    fn entries(&self, key_size: usize) -> Vec<(Vec<u8>, u32)> {
        match self {
            Index::Bytes { keys, .. } => keys.iter().map(|(k, &s)| (k.to_vec(), s)).collect(),
            Index::ByLength(t) => t
                .iter()
                .enumerate()
                .flat_map(|(len, m)| {
                    m.iter().map(move |(&data, &s)| ([&(len as u32).to_le_bytes()[..], &data.to_be_bytes()[..key_size - 4]].concat(), s))
                })
                .collect(),
        }
    }
}

pub const BPF_MAP_TYPE_HASH: u32 = 1;
pub const BPF_MAP_TYPE_ARRAY: u32 = 2;
/// Programs a program jumps to with `bpf_tail_call`: index → program number.
pub const BPF_MAP_TYPE_PROG_ARRAY: u32 = 3;
pub const BPF_MAP_TYPE_PERCPU_HASH: u32 = 5;
pub const BPF_MAP_TYPE_PERCPU_ARRAY: u32 = 6;
pub const BPF_MAP_TYPE_LPM_TRIE: u32 = 11;

/// `map_update_elem`'s flags.
const BPF_NOEXIST: u64 = 1;
const BPF_EXIST: u64 = 2;

/// The errno values the helpers answer with (negated), as the kernel's.
pub const ENOENT: i64 = 2;
pub const E2BIG: i64 = 7;
pub const EEXIST: i64 = 17;
pub const EINVAL: i64 = 22;

/// The longest key (the kernel's stack size) and value (the room the interpreter gives each
/// value a program looked up).
pub const KEY_MAX: u32 = 512;
pub const VALUE_MAX: u32 = 1 << 16;

/// The most memory one map's values may take.
pub const MAP_BYTES_MAX: usize = 64 << 20;

/// `map_flags`: the program may read the values but not write them (a `.rodata` section).
pub const BPF_F_RDONLY_PROG: u32 = 1 << 7;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapDef {
    pub name: String,
    pub kind: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub flags: u32,
    /// An array's first value as the map is made: a global data section's bytes (empty for
    /// a map, whose values start zeroed). A program array's entries as the object initialises
    /// them: a u32 program number per index, `EMPTY_SLOT` for none.
    pub data: Vec<u8>,
    /// A program array's bound: how many programs its object has (a value names one of them
    /// by number, `0..programs`).
    pub programs: u32,
}

/// The map types a program may have, for errors.
const KINDS: &str = "array (2), hash (1), lpm_trie (11), prog_array (3) and the per-CPU kin of the first two";

/// A program array's index that names no program.
pub const EMPTY_SLOT: u32 = u32::MAX;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Array,
    Hash,
    Lpm,
    /// Keyed by index like a hash (an index holds a program or nothing); only the owner and
    /// the loader write it, only `bpf_tail_call` reads it.
    ProgArray,
}

#[derive(Clone, Debug)]
pub struct Map {
    pub def: MapDef,
    kind: Kind,
    /// Hash and trie: key → slot. A trie's keys are stored with their data masked to their
    /// prefix length.
    index: Index,
    values: Vec<Box<[u8]>>,
    free: Vec<u32>,
    freed: Vec<u32>,
    /// Room for a trie's probes.
    probe: Vec<u8>,
}

impl Map {
    pub fn new(def: MapDef) -> Result<Map, String> {
        let kind = match def.kind {
            BPF_MAP_TYPE_ARRAY | BPF_MAP_TYPE_PERCPU_ARRAY => Kind::Array,
            BPF_MAP_TYPE_HASH | BPF_MAP_TYPE_PERCPU_HASH => Kind::Hash,
            BPF_MAP_TYPE_LPM_TRIE => Kind::Lpm,
            BPF_MAP_TYPE_PROG_ARRAY => Kind::ProgArray,
            k => return Err(format!("map {}: type {k} is not one of {KINDS}", def.name)),
        };
        if def.key_size == 0 || def.value_size == 0 || def.max_entries == 0 {
            return Err(format!("map {}: key, value and max_entries must not be 0", def.name));
        }
        if def.key_size > KEY_MAX || def.value_size > VALUE_MAX {
            return Err(format!("map {}: keys are at most {KEY_MAX} bytes and values at most {VALUE_MAX}", def.name));
        }
        if kind == Kind::Array && def.key_size != 4 {
            return Err(format!("map {}: an array's key is 4 bytes, not {}", def.name, def.key_size));
        }
        if kind == Kind::ProgArray && (def.key_size != 4 || def.value_size != 4) {
            return Err(format!("map {}: a program array's keys and values are 4 bytes (an index, a program)", def.name));
        }
        if kind == Kind::Lpm && def.key_size < 5 {
            return Err(format!("map {}: a trie's key is a u32 prefix length and at least a byte of data", def.name));
        }
        if (def.max_entries as usize).saturating_mul(def.value_size as usize) > MAP_BYTES_MAX {
            return Err(format!(
                "map {}: {} entries of {} bytes exceed {} MiB",
                def.name,
                def.max_entries,
                def.value_size,
                MAP_BYTES_MAX >> 20
            ));
        }
        let initial_len = if kind == Kind::ProgArray { def.max_entries as usize * 4 } else { def.value_size as usize };
        if !def.data.is_empty() && (!matches!(kind, Kind::Array | Kind::ProgArray) || def.data.len() != initial_len) {
            return Err(format!("map {}: initial data of {} bytes for values of {}", def.name, def.data.len(), def.value_size));
        }
        let mut values: Vec<Box<[u8]>> = match kind {
            Kind::Array => (0..def.max_entries).map(|_| vec![0u8; def.value_size as usize].into_boxed_slice()).collect(),
            _ => Vec::new(),
        };
        if let Some(first) = values.first_mut().filter(|_| !def.data.is_empty()) {
            first.copy_from_slice(&def.data);
        }
        let index = Index::for_kind(kind, def.key_size);
        let mut map = Map { probe: vec![0; def.key_size as usize], def, kind, index, values, free: Vec::new(), freed: Vec::new() };
        if kind == Kind::ProgArray {
            let initial = std::mem::take(&mut map.def.data);
            for (i, program) in initial.chunks_exact(4).enumerate().filter(|(_, p)| *p != EMPTY_SLOT.to_le_bytes()) {
                if map.update(&(i as u32).to_le_bytes(), program, 0) != 0 {
                    return Err(format!("map {}: index {i} names program {}, of {}", map.def.name, u32_at(program), map.def.programs));
                }
            }
            map.def.data = initial;
        }
        Ok(map)
    }

    /// The program at `index` of a program array.
    #[inline]
    pub fn program_at(&self, index: u32) -> Option<u32> {
        if self.kind != Kind::ProgArray {
            return None;
        }
        self.index.get(&index.to_le_bytes()).map(|slot| u32_at(&self.values[slot as usize]))
    }

    /// A program array: the program's own helpers neither read nor write it.
    pub fn is_program_array(&self) -> bool {
        self.kind == Kind::ProgArray
    }

    /// The slot holding `key`'s value.
    pub fn lookup(&mut self, key: &[u8]) -> Option<u32> {
        match self.kind {
            Kind::Array => Some(u32::from_le_bytes(key.try_into().ok()?)).filter(|&i| i < self.def.max_entries),
            Kind::Hash => self.index.get(key),
            Kind::ProgArray => None,
            Kind::Lpm => {
                if key.len() != self.def.key_size as usize {
                    return None;
                }
                let bits = (key.len() - 4) as u32 * 8;
                let asked = prefix_len(key).min(bits);
                match &self.index {
                    Index::ByLength(tables) => {
                        let data = inline_data(&key[4..], bits);
                        (0..=asked).rev().find_map(|len| {
                            let t = &tables[len as usize];
                            if t.is_empty() {
                                None
                            } else {
                                t.get(&inline_data_masked(data, len)).copied()
                            }
                        })
                    }
                    Index::Bytes { keys, lengths } => (0..=asked).rev().filter(|&l| lengths[l as usize] > 0).find_map(|len| {
                        self.probe.copy_from_slice(key);
                        self.probe[..4].copy_from_slice(&len.to_le_bytes());
                        mask_to(&mut self.probe, len);
                        keys.get(&self.probe[..]).copied()
                    }),
                }
            }
        }
    }

    /// Whether the program may only read the values (its `.rodata`).
    pub fn read_only_for_program(&self) -> bool {
        self.def.flags & BPF_F_RDONLY_PROG != 0
    }

    pub fn value(&self, slot: u32) -> &[u8] {
        &self.values[slot as usize]
    }

    pub fn value_mut(&mut self, slot: u32) -> &mut [u8] {
        &mut self.values[slot as usize]
    }

    /// `map_update_elem`: 0, or a negated errno.
    pub fn update(&mut self, key: &[u8], value: &[u8], flags: u64) -> i64 {
        if key.len() != self.def.key_size as usize || value.len() != self.def.value_size as usize || flags > BPF_EXIST {
            return -EINVAL;
        }
        let slot = match self.kind {
            Kind::Array => match self.lookup(key) {
                None => return -E2BIG,
                Some(_) if flags == BPF_NOEXIST => return -EEXIST,
                Some(slot) => slot,
            },
            Kind::ProgArray if u32_at(key) >= self.def.max_entries => return -E2BIG,
            Kind::ProgArray if u32_at(value) >= self.def.programs => return -EINVAL,
            Kind::Hash | Kind::Lpm | Kind::ProgArray => {
                let mut key: Box<[u8]> = key.into();
                if self.kind == Kind::Lpm {
                    let len = u32::from_le_bytes(key[..4].try_into().expect("4 bytes"));
                    if len > (key.len() as u32 - 4) * 8 {
                        return -EINVAL;
                    }
                    mask_to(&mut key, len);
                }
                match self.index.get(&key) {
                    Some(_) if flags == BPF_NOEXIST => return -EEXIST,
                    Some(slot) => slot,
                    None if flags == BPF_EXIST => return -ENOENT,
                    None if self.index.len() >= self.def.max_entries as usize => return -E2BIG,
                    None => {
                        let slot = self.free.pop().unwrap_or_else(|| {
                            self.values.push(vec![0; self.def.value_size as usize].into_boxed_slice());
                            self.values.len() as u32 - 1
                        });
                        self.index.insert(key, slot);
                        slot
                    }
                }
            }
        };
        self.values[slot as usize].copy_from_slice(value);
        0
    }

    /// `map_delete_elem`: 0, or a negated errno.
    pub fn delete(&mut self, key: &[u8]) -> i64 {
        if self.kind == Kind::Array {
            return -EINVAL;
        }
        let mut probe = std::mem::take(&mut self.probe);
        probe.clear();
        probe.extend_from_slice(key);
        if self.kind == Kind::Lpm && probe.len() >= 4 {
            let len = u32::from_le_bytes(probe[..4].try_into().expect("4 bytes"));
            mask_to(&mut probe, len);
        }
        let answer = match self.index.remove(&probe[..]) {
            Some(slot) => {
                self.freed.push(slot);
                0
            }
            None => -ENOENT,
        };
        probe.resize(self.def.key_size as usize, 0);
        self.probe = probe;
        answer
    }

    /// After a packet: slots freed while it ran may hold other keys now.
    pub fn settle(&mut self) {
        self.free.append(&mut self.freed);
    }

    /// Every key and its value (an array's keys are its indices).
    pub fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut all: Vec<_> = match self.kind {
            Kind::Array => self.values.iter().enumerate().map(|(i, v)| ((i as u32).to_le_bytes().to_vec(), v.to_vec())).collect(),
            _ => self.index.entries(self.def.key_size as usize).into_iter().map(|(k, s)| (k, self.values[s as usize].to_vec())).collect(),
        };
        all.sort();
        all
    }

    pub fn len(&self) -> usize {
        match self.kind {
            Kind::Array => self.values.len(),
            _ => self.index.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A 4-byte key or value as the program lays it out.
fn u32_at(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("checked: 4 bytes"))
}

/// `data` (as `inline_data` gives it) cut to its first `len` bits.
fn inline_data_masked(data: u128, len: u32) -> u128 {
    data & u128::MAX.checked_shr(len).map_or(u128::MAX, |m| !m)
}

/// A trie key's prefix length (its first four bytes), as stored: checked against the key's size.
fn prefix_len(key: &[u8]) -> u32 {
    u32::from_le_bytes(key[..4].try_into().expect("a trie key has its length"))
}

/// Keeps the first `len` bits of a trie key's data (after its 4-byte length), zeroing the rest.
fn mask_to(key: &mut [u8], len: u32) {
    for (i, b) in key[4..].iter_mut().enumerate() {
        let kept = len.saturating_sub(i as u32 * 8).min(8);
        *b &= (0xff00u16 >> kept) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn def(kind: u32, key: u32, value: u32, max: u32) -> MapDef {
        MapDef { name: "m".into(), kind, key_size: key, value_size: value, max_entries: max, ..MapDef::default() }
    }

    fn trie_key(len: u32, addr: [u8; 4]) -> Vec<u8> {
        [len.to_le_bytes(), addr].concat()
    }

    #[test]
    fn a_hash_refuses_by_flags_and_size_as_the_kernel() {
        let mut m = Map::new(def(BPF_MAP_TYPE_HASH, 2, 4, 1)).unwrap();
        assert_eq!(m.update(b"ab", &[1, 0, 0, 0], BPF_EXIST), -ENOENT);
        assert_eq!(m.update(b"ab", &[1, 0, 0, 0], 0), 0);
        assert_eq!(m.update(b"ab", &[2, 0, 0, 0], BPF_NOEXIST), -EEXIST);
        assert_eq!(m.update(b"cd", &[2, 0, 0, 0], 0), -E2BIG, "full");
        assert_eq!(m.update(b"abc", &[2, 0, 0, 0], 0), -EINVAL, "a key of the wrong size");
        let slot = m.lookup(b"ab").unwrap();
        assert_eq!(m.delete(b"ab"), 0);
        assert_eq!(m.update(b"cd", &[3, 0, 0, 0], 0), 0);
        assert_ne!(m.lookup(b"cd"), Some(slot), "a slot freed in this packet is not reused before it settles");
        assert_eq!(m.value(slot), &[1, 0, 0, 0], "what the program still points at is unchanged");
    }

    #[test]
    fn an_array_has_every_index_and_refuses_deletes() {
        let mut m = Map::new(def(BPF_MAP_TYPE_ARRAY, 4, 8, 3)).unwrap();
        assert_eq!(m.lookup(&2u32.to_le_bytes()), Some(2));
        assert_eq!(m.lookup(&3u32.to_le_bytes()), None);
        assert_eq!(m.delete(&1u32.to_le_bytes()), -EINVAL);
        assert_eq!(m.update(&1u32.to_le_bytes(), &[7; 8], BPF_NOEXIST), -EEXIST);
        assert_eq!(m.entries().len(), 3);
        assert!(Map::new(def(BPF_MAP_TYPE_ARRAY, 8, 8, 3)).is_err());
        assert!(Map::new(def(27, 4, 8, 3)).unwrap_err().contains("type 27"));
    }

    proptest! {
        /// The trie answers as a scan of its prefixes for the longest that covers the address.
        #[test]
        fn the_trie_finds_the_longest_prefix_as_a_scan_does(
            routes in proptest::collection::vec((0u32..=32, any::<u32>(), any::<u8>(), any::<bool>()), 0..40),
            probes in proptest::collection::vec(any::<u32>(), 1..40),
        ) {
            let mut m = Map::new(def(BPF_MAP_TYPE_LPM_TRIE, 8, 1, 64)).unwrap();
            let mut reference: Vec<(u32, u32, u8)> = Vec::new();
            for &(len, addr, v, delete) in &routes {
                let net = if len == 0 { 0 } else { addr & (u32::MAX << (32 - len)) };
                let had = reference.iter().any(|&(l, n, _)| (l, n) == (len, net));
                reference.retain(|&(l, n, _)| (l, n) != (len, net));
                if delete {
                    prop_assert_eq!(m.delete(&trie_key(len, addr.to_be_bytes())), if had { 0 } else { -ENOENT });
                } else {
                    prop_assert_eq!(m.update(&trie_key(len, addr.to_be_bytes()), &[v], 0), 0);
                    reference.push((len, net, v));
                }
            }
            for &a in &probes {
                let want = reference.iter().filter(|&&(l, n, _)| l == 0 || a & (u32::MAX << (32 - l)) == n).max_by_key(|r| r.0).map(|r| r.2);
                let got = m.lookup(&trie_key(32, a.to_be_bytes())).map(|s| m.value(s)[0]);
                prop_assert_eq!(got, want);
            }
        }

        /// Tries of any data size, kept as numbers (up to 16 bytes) or as bytes (more), answer as
        /// a scan of their prefixes, and list what was written.
        #[test]
        fn tries_of_every_data_size_answer_as_a_scan(
            data_bytes in prop_oneof![Just(1usize), Just(3), Just(16), Just(20)],
            routes in proptest::collection::vec(
                (any::<u32>(), proptest::collection::vec(any::<u8>(), 20), any::<u8>(), any::<bool>()),
                0..40,
            ),
            probes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 20), 1..20),
        ) {
            let bits = data_bytes as u32 * 8;
            let key = |len: u32, data: &[u8]| [&len.to_le_bytes()[..], &data[..data_bytes]].concat();
            let covers = |len: u32, net: &[u8], addr: &[u8]| {
                (0..len).all(|i| (net[i as usize / 8] ^ addr[i as usize / 8]) & (0x80 >> (i % 8)) == 0)
            };
            let mut m = Map::new(def(BPF_MAP_TYPE_LPM_TRIE, 4 + data_bytes as u32, 1, 64)).unwrap();
            let mut reference: Vec<(u32, Vec<u8>, u8)> = Vec::new();
            for (len, data, v, delete) in &routes {
                let len = len % (bits + 1);
                let had = reference.iter().position(|(l, n, _)| *l == len && covers(len, n, data));
                if let Some(i) = had {
                    reference.remove(i);
                }
                if *delete {
                    prop_assert_eq!(m.delete(&key(len, data)), if had.is_some() { 0 } else { -ENOENT });
                } else {
                    prop_assert_eq!(m.update(&key(len, data), &[*v], 0), 0);
                    reference.push((len, data[..data_bytes].to_vec(), *v));
                }
            }
            prop_assert_eq!(m.len(), reference.len());
            prop_assert_eq!(m.entries().len(), reference.len());
            for (k, v) in m.entries() {
                let len = prefix_len(&k);
                prop_assert!(reference.iter().any(|(l, n, rv)| *l == len && covers(len, n, &k[4..]) && [*rv] == v[..]), "{:?}", k);
            }
            for a in &probes {
                let want = reference.iter().filter(|(l, n, _)| covers(*l, n, a)).max_by_key(|r| r.0).map(|r| r.2);
                let got = m.lookup(&key(bits, a)).map(|s| m.value(s)[0]);
                prop_assert_eq!(got, want);
            }
        }
    }
}
