//! The plugin's key-value tables (`plugin.tables`), which the VR's owner reads and writes
//! through the API (`pearlctl plugin table`) while the plugin runs.

use crate::abi::{TABLE_FULL, TABLE_NONE, TABLE_TOO_LONG};
use crate::host::{pearl_table_find, pearl_table_get, pearl_table_remove, pearl_table_set};

/// A handle on one of the VR's tables.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Table(i32);

/// Why `Table::set` did not store an entry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SetError {
    /// The table holds its most entries (`plugin.tables`).
    Full,
    /// The key or the value is longer than `abi::TABLE_KEY_MAX` / `TABLE_VALUE_MAX`.
    TooLong,
}

impl Table {
    /// The table the configuration declares as `name`; look it up once (in `init`), not per frame.
    pub fn find(name: &str) -> Option<Table> {
        // Safety: pearld reads `name.len()` bytes at `name`.
        let t = unsafe { pearl_table_find(name.as_ptr(), name.len() as i32) };
        (t >= 0).then_some(Table(t))
    }

    /// The handle as a number, to keep in a static between calls (`from_handle` gives it back).
    pub fn handle(self) -> i32 {
        self.0
    }

    pub fn from_handle(handle: i32) -> Option<Table> {
        (handle >= 0).then_some(Table(handle))
    }

    /// Copies the value of `key` into `out` (as much as fits) and returns its whole length.
    pub fn get(self, key: &[u8], out: &mut [u8]) -> Option<usize> {
        // Safety: pearld reads the key and writes at most `out.len()` bytes to `out`.
        let n = unsafe { pearl_table_get(self.0, key.as_ptr(), key.len() as i32, out.as_mut_ptr(), out.len() as i32) };
        (n != TABLE_NONE).then_some(n as usize)
    }

    pub fn contains(self, key: &[u8]) -> bool {
        self.get(key, &mut []).is_some()
    }

    pub fn set(self, key: &[u8], value: &[u8]) -> Result<(), SetError> {
        // Safety: pearld reads the key and the value.
        match unsafe { pearl_table_set(self.0, key.as_ptr(), key.len() as i32, value.as_ptr(), value.len() as i32) } {
            TABLE_FULL => Err(SetError::Full),
            TABLE_TOO_LONG => Err(SetError::TooLong),
            _ => Ok(()),
        }
    }

    /// Whether `key` was there.
    pub fn remove(self, key: &[u8]) -> bool {
        // Safety: pearld reads the key.
        unsafe { pearl_table_remove(self.0, key.as_ptr(), key.len() as i32) == 1 }
    }
}
