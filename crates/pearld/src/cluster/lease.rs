//! The node's lease: granted once, kept alive every third of its TTL, and kept in the state
//! directory so that pearld starting again over its VRs (a port change, `systemctl restart`)
//! goes on with the same lease, and the keys bound to it (its record, its VRs' ownership)
//! never lapse. A lease etcd says is gone means the node was taken for down: whatever it ran
//! may run elsewhere now.

use super::store::{Store, StoreError};
use std::path::PathBuf;

pub struct Lease {
    file: PathBuf,
    pub ttl: i64,
}

impl Lease {
    pub fn new(state_dir: &str, ttl: i64) -> Lease {
        Lease { file: PathBuf::from(state_dir).join("cluster.lease"), ttl }
    }

    /// The lease kept from before, if etcd still has it.
    pub fn kept(&self, store: &dyn Store) -> Option<i64> {
        let id: i64 = std::fs::read_to_string(&self.file).ok()?.trim().parse().ok()?;
        (store.keep_alive(id).ok()? > 0).then_some(id)
    }

    /// A new lease, kept in the state directory.
    pub fn grant(&self, store: &dyn Store) -> Result<i64, StoreError> {
        let id = store.grant(self.ttl)?;
        if let Err(e) = std::fs::write(&self.file, id.to_string()) {
            tracing::warn!("cluster: cannot keep the lease in {}: {e}", self.file.display());
        }
        Ok(id)
    }

    /// The lease is gone: none is kept.
    pub fn forget(&self) {
        let _ = std::fs::remove_file(&self.file);
    }
}
