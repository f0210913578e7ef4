//! The cluster agent (`pearld --cluster URL --node NAME`): the node registers in etcd under a
//! lease, watches the nets and its own assignments, lands its part of each net through the
//! node's ordinary change path, owns the VRs it runs by lease-bound keys, and sets the links
//! to nodes that are down carrier-off. docs/CLUSTER.md has the key layout and the failure
//! semantics. A node without `--cluster` has none of it.

mod agent;
pub mod api;
mod gateway;
mod keys;
mod lease;
#[cfg(test)]
mod memory;
mod part;
mod place;
mod record;
mod store;
mod vni;

use crate::node::Node;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

/// `--cluster`'s options.
pub struct Options {
    pub urls: String,
    pub node: String,
    pub underlay: Option<String>,
    pub lease_ttl: i64,
    pub api_tcp: Option<String>,
    pub state_dir: String,
}

/// The running agent, as the API sees it.
pub struct Cluster {
    store: Arc<dyn store::Store>,
    me: String,
    lease: AtomicI64,
    leases: lease::Lease,
    underlay: record::Underlay,
    api: Option<String>,
    stop: Arc<AtomicBool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

static CLUSTER: OnceLock<Arc<Cluster>> = OnceLock::new();

/// The agent, on a node started with `--cluster`.
pub fn active() -> Option<&'static Arc<Cluster>> {
    CLUSTER.get()
}

/// A node about to join: etcd reached and its lease known, before the node's state is loaded.
pub struct Joining {
    opts: Options,
    store: Arc<dyn store::Store>,
    underlay: record::Underlay,
    leases: lease::Lease,
    lease: i64,
    /// No lease of before is alive: the cluster took this node for down, and what it ran may
    /// run elsewhere now, so it starts without the cluster's nets (`config_load`).
    pub fresh: bool,
}

/// Reaches the cluster and takes up the lease kept from before or a new one; an unreachable
/// cluster or a bad option is an error before anything runs.
pub fn connect(opts: Options) -> Result<Joining, String> {
    let gateway = gateway::Gateway::new(&opts.urls)?;
    let device = match &opts.underlay {
        Some(d) => d.clone(),
        None => record::Underlay::device_towards(gateway.first_host())?,
    };
    let underlay = record::Underlay::of(&device)?;
    let store: Arc<dyn store::Store> = Arc::new(gateway);
    let leases = lease::Lease::new(&opts.state_dir, opts.lease_ttl);
    let (lease, fresh) = match leases.kept(store.as_ref()) {
        Some(l) => (l, false),
        None => (leases.grant(store.as_ref()).map_err(|e| format!("--cluster {}: {e}", opts.urls))?, true),
    };
    Ok(Joining { opts, store, underlay, leases, lease, fresh })
}

/// Registers the node and starts the agent.
pub fn start(j: Joining, node: &Arc<Node>) -> Result<(), String> {
    let Joining { opts, store, underlay, leases, lease, .. } = j;
    let cluster = Arc::new(Cluster {
        store,
        me: opts.node,
        lease: AtomicI64::new(lease),
        leases,
        underlay,
        api: opts.api_tcp,
        stop: Arc::new(AtomicBool::new(false)),
        threads: Mutex::new(Vec::new()),
    });
    if CLUSTER.set(Arc::clone(&cluster)).is_err() {
        return Err("internal: the cluster agent started twice".into());
    }
    agent::register(&cluster, node).map_err(|e| format!("--cluster {}: {e}", opts.urls))?;
    let threads = agent::spawn(&cluster, Arc::downgrade(node));
    *cluster.threads.lock().unwrap_or_else(|e| e.into_inner()) = threads;
    tracing::info!(
        "cluster: node {} registered (lease {lease:x}, underlay {} {})",
        cluster.me,
        cluster.underlay.device,
        cluster.underlay.address
    );
    Ok(())
}

/// Stops the agent before pearld lets go of the node; `leaving` (`node stop`) also revokes
/// the lease, so the cluster takes the node for down at once rather than after its TTL.
pub fn stop(leaving: bool) {
    let Some(c) = active() else { return };
    c.stop.store(true, Ordering::SeqCst);
    let threads = std::mem::take(&mut *c.threads.lock().unwrap_or_else(|e| e.into_inner()));
    // Only the agent's loop holds the node; the watches end with the process.
    for t in threads {
        let _ = t.join();
    }
    if leaving {
        let _ = c.store.revoke(c.lease.load(Ordering::SeqCst));
        c.leases.forget();
    }
}
