//! A plugin VR's key-value tables (`plugin.tables`, SPP's slice memory): the plugin reads and
//! writes them through its imports while it runs a batch, the VR's owner through the API. They
//! belong to the VR, not to the instance: they outlive the plugin's restarts, and a new version
//! of the plugin takes over the tables it declares under the same names.

use pearl_ebpf::Map;
use pearl_plugin_sdk::abi::{TABLE_FULL, TABLE_KEY_MAX, TABLE_NONE, TABLE_TOO_LONG, TABLE_VALUE_MAX};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The tables of one plugin VR; clones share them. An XDP program's tables are its eBPF maps.
#[derive(Clone, Default)]
pub struct PluginTables {
    tables: Arc<Mutex<Vec<Table>>>,
    /// The tables' names, by handle (their order in the configuration, which sorts them).
    names: Arc<[String]>,
    maps: Option<Arc<Mutex<Vec<Map>>>>,
    /// An XDP object's programs, by the number a program array names them with.
    programs: Arc<[String]>,
    /// Counts the owner's changes, for programs that keep an index of a table.
    generation: Arc<AtomicU64>,
}

pub(crate) struct Table {
    max: usize,
    entries: HashMap<Box<[u8]>, Box<[u8]>>,
}

/// A key and its value.
pub type Entry = (Vec<u8>, Vec<u8>);

/// Why a table refused a request.
#[derive(Debug, PartialEq, Eq)]
pub enum TableError {
    NoTable(String),
    Full {
        table: String,
        max: usize,
    },
    KeyTooLong(usize),
    ValueTooLong(usize),
    /// An eBPF map refused the request (a key or value of the wrong size, an array's delete).
    Map {
        table: String,
        why: String,
    },
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::NoTable(t) => write!(f, "the plugin declares no table {t:?} (plugin.tables)"),
            TableError::Full { table, max } => write!(f, "table {table:?} holds its most entries ({max}, plugin.tables)"),
            TableError::KeyTooLong(n) => write!(f, "a key is at most {TABLE_KEY_MAX} bytes, not {n}"),
            TableError::ValueTooLong(n) => write!(f, "a value is at most {TABLE_VALUE_MAX} bytes, not {n}"),
            TableError::Map { table, why } => write!(f, "map {table:?}: {why}"),
        }
    }
}

impl Table {
    pub fn set(&mut self, key: &[u8], value: &[u8]) -> Result<(), TableError> {
        if key.len() > TABLE_KEY_MAX {
            return Err(TableError::KeyTooLong(key.len()));
        }
        if value.len() > TABLE_VALUE_MAX {
            return Err(TableError::ValueTooLong(value.len()));
        }
        let full = self.entries.len() >= self.max;
        match self.entries.get_mut(key) {
            // A counter rewritten per frame keeps its allocation.
            Some(v) if v.len() == value.len() => v.copy_from_slice(value),
            Some(v) => *v = value.into(),
            None if full => return Err(TableError::Full { table: String::new(), max: self.max }),
            None => {
                self.entries.insert(key.into(), value.into());
            }
        }
        Ok(())
    }

    pub fn remove(&mut self, key: &[u8]) -> bool {
        self.entries.remove(key).is_some()
    }
}

impl PluginTables {
    /// The tables `declared` (name, most entries); those of `previous` (the VR's plugin before
    /// a change) with a name declared again start with a copy of its entries (a copy: the change
    /// may yet be refused, and the plugin before it go on).
    pub fn new(declared: &[(String, usize)], previous: Option<&PluginTables>) -> PluginTables {
        let old = previous.map(|p| (p.lock(), &p.names));
        let tables = declared
            .iter()
            .map(|(name, max)| {
                let kept = old.as_ref().and_then(|(t, names)| Some(t[names.iter().position(|n| n == name)?].entries.clone()));
                Table { max: *max, entries: kept.unwrap_or_default() }
            })
            .collect();
        PluginTables {
            tables: Arc::new(Mutex::new(tables)),
            names: declared.iter().map(|(n, _)| n.clone()).collect(),
            maps: None,
            programs: Arc::new([]),
            generation: Arc::default(),
        }
    }

    /// An XDP program's maps as its tables; a map of `previous` with the same name and shape
    /// (kind, key and value sizes) starts with a copy of its entries. `programs` are the
    /// object's, by number.
    pub fn of_maps(mut maps: Vec<Map>, programs: &[String], previous: Option<&PluginTables>) -> PluginTables {
        if let Some(old) = previous.and_then(|p| p.maps.as_ref()) {
            let old = lock(old);
            // A new object's read-only globals (`.rodata`: its constants and settings) are its
            // own, and so are its program arrays (their values number its programs).
            for m in maps.iter_mut().filter(|m| !m.read_only_for_program() && !m.is_program_array()) {
                let shape = |d: &pearl_ebpf::MapDef| (d.name.clone(), d.kind, d.key_size, d.value_size, d.max_entries);
                if let Some(kept) = old.iter().find(|o| shape(&o.def) == shape(&m.def)) {
                    *m = kept.clone();
                }
            }
        }
        let names = maps.iter().map(|m| m.def.name.clone()).collect();
        PluginTables {
            tables: Arc::default(),
            names,
            maps: Some(Arc::new(Mutex::new(maps))),
            programs: programs.iter().enumerate().map(|(n, p)| format!("{n} {p}")).collect(),
            generation: Arc::default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The maps an XDP program runs with, held for a batch.
    pub(crate) fn lock_maps(&self) -> Option<MutexGuard<'_, Vec<Map>>> {
        self.maps.as_ref().map(|m| lock(m))
    }

    /// The handle of table `name`.
    pub fn find(&self, name: &[u8]) -> Option<usize> {
        self.names.iter().position(|n| n.as_bytes() == name)
    }

    /// Held by the worker for a batch, by the API for one request.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Vec<Table>> {
        lock(&self.tables)
    }

    /// The most memory the tables can take, charged to the VR's `limits.memory_mb`: a declared
    /// table its most entries of the longest key and value, an eBPF map its most entries of its
    /// key and value sizes.
    pub fn bound_bytes(&self) -> u64 {
        if let Some(maps) = self.lock_maps() {
            return maps.iter().map(|m| u64::from(m.def.max_entries) * (u64::from(m.def.key_size) + u64::from(m.def.value_size))).sum();
        }
        self.lock().iter().map(|t| t.max as u64 * (TABLE_KEY_MAX + TABLE_VALUE_MAX) as u64).sum()
    }

    /// Each table's name, most entries and entries now.
    pub fn summary(&self) -> Vec<(String, usize, usize)> {
        if let Some(maps) = self.lock_maps() {
            return maps.iter().map(|m| (m.def.name.clone(), m.def.max_entries as usize, m.len())).collect();
        }
        let tables = self.lock();
        self.names.iter().zip(tables.iter()).map(|(n, t)| (n.clone(), t.max, t.entries.len())).collect()
    }

    /// Table `name`'s entries, by key.
    pub fn entries(&self, name: &str) -> Result<Vec<Entry>, TableError> {
        let i = self.handle(name)?;
        if let Some(maps) = self.lock_maps() {
            return Ok(maps[i].entries());
        }
        let mut all: Vec<_> = self.lock()[i].entries.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        all.sort();
        Ok(all)
    }

    /// How many times the owner changed the tables (a program's imports do not count).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn set(&self, name: &str, key: &[u8], value: &[u8]) -> Result<(), TableError> {
        let i = self.handle(name)?;
        self.generation.fetch_add(1, Ordering::AcqRel);
        if let Some(mut maps) = self.lock_maps() {
            let m = &mut maps[i];
            return match m.update(key, value, 0) {
                0 => Ok(()),
                _ if key.len() != m.def.key_size as usize => {
                    Err(TableError::Map { table: name.into(), why: format!("its keys are {} bytes, not {}", m.def.key_size, key.len()) })
                }
                _ if value.len() != m.def.value_size as usize => Err(TableError::Map {
                    table: name.into(),
                    why: format!("its values are {} bytes, not {}", m.def.value_size, value.len()),
                }),
                e if e == -pearl_ebpf::maps::E2BIG => Err(TableError::Full { table: name.to_string(), max: m.def.max_entries as usize }),
                _ if m.is_program_array() => Err(TableError::Map {
                    table: name.into(),
                    why: format!("a program array's value is a program's number (a little-endian u32): {}", self.programs.join(", ")),
                }),
                e => Err(TableError::Map { table: name.into(), why: format!("the update was refused (errno {})", -e) }),
            };
        }
        self.lock()[i].set(key, value).map_err(|e| match e {
            TableError::Full { max, .. } => TableError::Full { table: name.to_string(), max },
            e => e,
        })
    }

    /// Whether `key` was there.
    pub fn remove(&self, name: &str, key: &[u8]) -> Result<bool, TableError> {
        let i = self.handle(name)?;
        self.generation.fetch_add(1, Ordering::AcqRel);
        if let Some(mut maps) = self.lock_maps() {
            return match maps[i].delete(key) {
                0 => Ok(true),
                e if e == -pearl_ebpf::maps::ENOENT => Ok(false),
                _ => Err(TableError::Map { table: name.into(), why: "an array's entries are always there: set them to zero".into() }),
            };
        }
        Ok(self.lock()[i].remove(key))
    }

    fn handle(&self, name: &str) -> Result<usize, TableError> {
        self.find(name.as_bytes()).ok_or_else(|| TableError::NoTable(name.to_string()))
    }
}

// A panic elsewhere cannot leave a table half-changed: each change is one map operation.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The tables a worker holds (their lock) for one plugin call, for the table imports.
pub(crate) struct HeldTables(*mut Vec<Table>);

// SAFETY: set and read on the thread that calls the plugin, within that call.
unsafe impl Send for HeldTables {}

impl HeldTables {
    pub(crate) const NONE: HeldTables = HeldTables(std::ptr::null_mut());

    pub(crate) fn of(held: &mut MutexGuard<'_, Vec<Table>>) -> HeldTables {
        HeldTables(&mut **held)
    }

    /// # Safety
    /// Only within the plugin call during which the pointer was set, while its guard lives.
    pub(crate) unsafe fn get<'a>(&mut self) -> Option<&'a mut Vec<Table>> {
        // SAFETY: as the caller promises.
        unsafe { self.0.as_mut() }
    }
}

/// Why a plugin's table call traps (a WebAssembly plugin) or is answered as failed (a process).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableCallError {
    /// WHAT: LEN bytes at AT are outside the plugin's memory
    #[error("{what}: {len} bytes at {at} are outside the plugin's memory")]
    OutsideMemory { what: &'static str, len: usize, at: usize },
    /// table handle HANDLE: the plugin has N table(s)
    #[error("table handle {handle}: the plugin has {tables} table(s)")]
    NoSuchTable { handle: i32, tables: usize },
}

/// The bytes `at..at + len` of a plugin's memory; `what` names them in the error.
fn span(memory: &[u8], at: i32, len: i32, what: &'static str) -> Result<std::ops::Range<usize>, TableCallError> {
    let (at, len) = (at as u32 as usize, len as u32 as usize);
    match at.checked_add(len) {
        Some(end) if end <= memory.len() => Ok(at..end),
        _ => Err(TableCallError::OutsideMemory { what, len, at }),
    }
}

fn table(tables: &mut [Table], t: i32) -> Result<&mut Table, TableCallError> {
    let n = tables.len();
    tables.get_mut(t as u32 as usize).ok_or(TableCallError::NoSuchTable { handle: t, tables: n })
}

/// `table_get` on the plugin's `memory` (see `pearl_plugin_sdk::abi`).
pub(crate) fn import_get(
    tables: &mut [Table],
    memory: &mut [u8],
    (t, key, key_len): (i32, i32, i32),
    out: i32,
    cap: i32,
) -> Result<i32, TableCallError> {
    let key = span(memory, key, key_len, "table_get's key")?;
    let out = span(memory, out, cap, "table_get's room for the value")?;
    let Some(value) = table(tables, t)?.entries.get(&memory[key]) else { return Ok(TABLE_NONE) };
    let n = value.len().min(out.len());
    memory[out.start..out.start + n].copy_from_slice(&value[..n]);
    Ok(value.len() as i32)
}

pub(crate) fn import_set(
    tables: &mut [Table],
    memory: &[u8],
    (t, key, key_len): (i32, i32, i32),
    value: i32,
    value_len: i32,
) -> Result<i32, TableCallError> {
    let key = span(memory, key, key_len, "table_set's key")?;
    let value = span(memory, value, value_len, "table_set's value")?;
    Ok(match table(tables, t)?.set(&memory[key], &memory[value]) {
        Ok(()) => 0,
        Err(TableError::Full { .. }) => TABLE_FULL,
        Err(_) => TABLE_TOO_LONG,
    })
}

pub(crate) fn import_remove(tables: &mut [Table], memory: &[u8], (t, key, key_len): (i32, i32, i32)) -> Result<i32, TableCallError> {
    let key = span(memory, key, key_len, "table_remove's key")?;
    Ok(i32::from(table(tables, t)?.remove(&memory[key])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(tables: &[(&str, usize)]) -> Vec<(String, usize)> {
        tables.iter().map(|&(n, m)| (n.to_string(), m)).collect()
    }

    #[test]
    fn a_table_holds_its_most_entries_and_refuses_long_keys_and_values() {
        let t = PluginTables::new(&declared(&[("blocked", 2)]), None);
        t.set("blocked", b"a", b"1").unwrap();
        t.set("blocked", b"b", b"22").unwrap();
        assert_eq!(t.set("blocked", b"c", b"3"), Err(TableError::Full { table: "blocked".into(), max: 2 }));
        t.set("blocked", b"a", b"333").unwrap();
        assert_eq!(t.entries("blocked").unwrap(), vec![(b"a".to_vec(), b"333".to_vec()), (b"b".to_vec(), b"22".to_vec())]);
        assert_eq!(t.set("blocked", &[0; TABLE_KEY_MAX + 1], b""), Err(TableError::KeyTooLong(TABLE_KEY_MAX + 1)));
        assert_eq!(t.set("blocked", b"k", &[0; TABLE_VALUE_MAX + 1]), Err(TableError::ValueTooLong(TABLE_VALUE_MAX + 1)));
        assert_eq!(t.set("stats", b"k", b"v"), Err(TableError::NoTable("stats".into())));
        assert!(t.remove("blocked", b"a").unwrap() && !t.remove("blocked", b"a").unwrap());
        assert_eq!(t.summary(), vec![("blocked".to_string(), 2, 1)]);
    }

    #[test]
    fn a_new_version_keeps_the_tables_it_declares_again() {
        let old = PluginTables::new(&declared(&[("blocked", 8), ("stats", 8)]), None);
        old.set("blocked", b"10.0.0.1", b"").unwrap();
        old.set("stats", b"dropped", b"7").unwrap();
        let new = PluginTables::new(&declared(&[("blocked", 4), ("seen", 4)]), Some(&old));
        assert_eq!(new.entries("blocked").unwrap(), vec![(b"10.0.0.1".to_vec(), Vec::new())]);
        assert!(new.entries("seen").unwrap().is_empty());
        assert_eq!(new.entries("stats"), Err(TableError::NoTable("stats".into())), "no longer declared");
    }
}
