//! A [`Store`] in memory, for the agent's tests: keys, create-only transactions and leases, without watches.

use super::store::{Kv, Listing, Seen, Store, StoreError};
use std::collections::BTreeMap;
use std::sync::Mutex;

#[derive(Default)]
pub struct Memory {
    state: Mutex<(BTreeMap<String, Kv>, i64, Vec<i64>)>,
}

impl Memory {
    /// Lease `lease` expires: its keys go.
    pub fn expire(&self, lease: i64) {
        let mut s = self.state.lock().unwrap();
        s.0.retain(|_, kv| kv.lease != lease);
        s.2.retain(|&l| l != lease);
    }
}

impl Store for Memory {
    fn range(&self, prefix: &str) -> Result<Listing, StoreError> {
        let s = self.state.lock().unwrap();
        Ok(Listing { kvs: s.0.values().filter(|kv| kv.key.starts_with(prefix)).cloned().collect() })
    }
    fn put(&self, key: &str, value: &str, lease: Option<i64>) -> Result<(), StoreError> {
        let mut s = self.state.lock().unwrap();
        s.1 += 1;
        let kv = Kv { key: key.into(), value: value.into(), lease: lease.unwrap_or(0) };
        s.0.insert(key.into(), kv);
        Ok(())
    }
    fn create(&self, key: &str, value: &str, lease: Option<i64>) -> Result<bool, StoreError> {
        if self.state.lock().unwrap().0.contains_key(key) {
            return Ok(false);
        }
        self.put(key, value, lease).map(|()| true)
    }
    fn delete(&self, key: &str, prefix: bool) -> Result<(), StoreError> {
        self.state.lock().unwrap().0.retain(|k, _| if prefix { !k.starts_with(key) } else { k != key });
        Ok(())
    }
    fn grant(&self, _ttl: i64) -> Result<i64, StoreError> {
        let mut s = self.state.lock().unwrap();
        s.1 += 1;
        let id = s.1;
        s.2.push(id);
        Ok(id)
    }
    fn keep_alive(&self, lease: i64) -> Result<i64, StoreError> {
        Ok(if self.state.lock().unwrap().2.contains(&lease) { 5 } else { 0 })
    }
    fn revoke(&self, lease: i64) -> Result<(), StoreError> {
        self.expire(lease);
        Ok(())
    }
    fn watch(&self, _: &str, _: i64, _: &mut dyn FnMut(Seen) -> bool) -> Result<(), StoreError> {
        Err(StoreError::Unreachable("no watches in memory".into()))
    }
}
