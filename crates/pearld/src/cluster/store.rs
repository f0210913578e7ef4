//! What the cluster agent needs of etcd, behind a trait so that the agent's logic does not
//! depend on how it is reached (the JSON gateway today, `gateway.rs`; a gRPC client could take
//! its place) and can be tested against a store in memory.

use thiserror::Error;

/// A key and its value as the store holds them.
#[derive(Debug, Clone, PartialEq)]
pub struct Kv {
    pub key: String,
    pub value: String,
    pub lease: i64,
}

/// A range's keys.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub kvs: Vec<Kv>,
}

/// What a watch saw.
#[derive(Debug, Clone)]
pub enum Seen {
    /// Keys put or deleted, up to this revision.
    Changes { revision: i64 },
    /// The revision asked for was compacted away: read everything again.
    Compacted,
}

#[derive(Debug, Error)]
pub enum StoreError {
    /// no etcd member answered: ERROR
    #[error("no etcd member answered: {0}")]
    Unreachable(String),
    /// etcd refused the request: ERROR
    #[error("etcd refused the request: {0}")]
    Refused(String),
}

pub trait Store: Send + Sync {
    /// Every key starting with `prefix`.
    fn range(&self, prefix: &str) -> Result<Listing, StoreError>;
    /// `key` = `value`, bound to `lease` when one is given (its key goes when the lease does).
    fn put(&self, key: &str, value: &str, lease: Option<i64>) -> Result<(), StoreError>;
    /// `key` = `value` only if no one holds `key` (a create-only transaction); whether it did.
    fn create(&self, key: &str, value: &str, lease: Option<i64>) -> Result<bool, StoreError>;
    /// `key`, or every key under it with `prefix`.
    fn delete(&self, key: &str, prefix: bool) -> Result<(), StoreError>;
    /// A new lease of `ttl` seconds.
    fn grant(&self, ttl: i64) -> Result<i64, StoreError>;
    /// Renews `lease`; the seconds it has left, 0 when it is gone (expired or revoked).
    fn keep_alive(&self, lease: i64) -> Result<i64, StoreError>;
    fn revoke(&self, lease: i64) -> Result<(), StoreError>;
    /// Watches the keys under `prefix` from revision `from`, calling `seen` for each batch until
    /// it returns false or the stream breaks (an error; the caller resumes where it was).
    fn watch(&self, prefix: &str, from: i64, seen: &mut dyn FnMut(Seen) -> bool) -> Result<(), StoreError>;
}
