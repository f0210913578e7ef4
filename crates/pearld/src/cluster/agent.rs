//! The agent's loop, one thread, so that its steps keep their order: first the lease (a node
//! that finds its lease gone, say after a pause, stops what it ran before anything else), then
//! the reconcile: the cluster read (a few ranges), the scheduler's placements if this node is
//! the elected one, and for each net this node's part landed where it differs from what the
//! node runs, the carriers of its tunnel ends set by whether the far node is up, and its
//! status written. Watches on the nets, the nodes and this node's assignments wake it at once;
//! it also runs every second, so a watch broken (a member down, a compaction) costs at most
//! that, and a watch resumes from the last revision it saw.

use super::keys;
use super::part::{self, Known};
use super::place::{self, Placed};
use super::record::{NodeRecord, Underlay};
use super::store::{Seen, Store, StoreError};
use super::vni;
use super::Cluster;
use crate::node::Node;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const TICK: Duration = Duration::from_secs(1);

/// The cluster as one read sees it.
pub struct View {
    pub live: HashMap<String, NodeRecord>,
    pub underlays: HashMap<String, Underlay>,
    pub nets: BTreeMap<String, Value>,
    /// (node, net, VR).
    pub assigns: Vec<(String, String, String)>,
    /// (net, VR) → node.
    pub owners: HashMap<(String, String), String>,
    /// (net, link) → VNI.
    pub vnis: HashMap<(String, String), u32>,
    pub scheduler: Option<String>,
}

pub fn read(store: &dyn Store) -> Result<View, StoreError> {
    let json_of = |v: &str| serde_json::from_str::<Value>(v).ok();
    let live = store
        .range(keys::NODES)?
        .kvs
        .iter()
        .filter_map(|kv| serde_json::from_str::<NodeRecord>(&kv.value).ok())
        .map(|r| (r.name.clone(), r))
        .collect();
    let underlays = store
        .range(keys::UNDERLAY)?
        .kvs
        .iter()
        .filter_map(|kv| Some((kv.key.strip_prefix(keys::UNDERLAY)?.to_string(), serde_json::from_str(&kv.value).ok()?)))
        .collect();
    let nets = store
        .range(keys::NETS)?
        .kvs
        .iter()
        .filter_map(|kv| Some((kv.key.strip_prefix(keys::NETS)?.to_string(), json_of(&kv.value)?)))
        .collect();
    let assigns = store
        .range(keys::ASSIGN)?
        .kvs
        .iter()
        .filter_map(|kv| match keys::parts(&kv.key, keys::ASSIGN)[..] {
            [n, net, vr] => Some((n.to_string(), net.to_string(), vr.to_string())),
            _ => None,
        })
        .collect();
    let owners = store
        .range(keys::OWNER)?
        .kvs
        .iter()
        .filter_map(|kv| match keys::parts(&kv.key, keys::OWNER)[..] {
            [net, vr] => Some(((net.to_string(), vr.to_string()), kv.value.clone())),
            _ => None,
        })
        .collect();
    let vnis = store
        .range(keys::LINKS)?
        .kvs
        .iter()
        .filter_map(|kv| {
            let (net, link) = kv.key.strip_prefix(keys::LINKS)?.split_once('/')?;
            Some(((net.to_string(), link.to_string()), kv.value.parse().ok()?))
        })
        .collect();
    let scheduler = store.range(keys::SCHEDULER)?.kvs.into_iter().find(|kv| kv.key == keys::SCHEDULER).map(|kv| kv.value);
    Ok(View { live, underlays, nets, assigns, owners, vnis, scheduler })
}

/// The node's record and underlay written under its lease.
pub fn register(c: &Cluster, node: &Node) -> Result<(), StoreError> {
    let lease = c.lease.load(Ordering::SeqCst);
    c.store.put(&keys::underlay(&c.me), &serde_json::to_string(&c.underlay).expect("serialisable"), None)?;
    c.store.put(&keys::node(&c.me), &record(c, node, lease).to_string(), Some(lease))
}

fn record(c: &Cluster, node: &Node, lease: i64) -> Value {
    let config = node.config();
    let report = crate::capacity::report(&config, &node.capacity(&config), &node.dataplane.layout().slices);
    let since = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let vrs: Vec<String> = node
        .document()
        .get("nets")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .flat_map(|(net, spec)| {
            spec["vrs"].as_array().into_iter().flatten().filter_map(|v| Some(format!("{net}/{}", v["name"].as_str()?))).collect::<Vec<_>>()
        })
        .collect();
    let r = NodeRecord {
        name: c.me.clone(),
        api: c.api.clone(),
        underlay: c.underlay.clone(),
        capacity: serde_json::to_value(&report).unwrap_or_default(),
        vrs,
        since,
        lease,
        lease_ttl: c.leases.ttl,
    };
    serde_json::to_value(r).expect("serialisable")
}

pub fn spawn(c: &Arc<Cluster>, node: Weak<Node>) -> Vec<JoinHandle<()>> {
    let (poke, pokes) = channel();
    for prefix in [keys::NETS.to_string(), keys::NODES.to_string(), format!("{}{}/", keys::ASSIGN, c.me)] {
        let (store, poke): (Arc<dyn Store>, Sender<()>) = (Arc::clone(&c.store), poke.clone());
        std::thread::Builder::new().name("pearl-watch".into()).spawn(move || watch(store.as_ref(), &prefix, &poke)).expect("a thread");
    }
    let c = Arc::clone(c);
    vec![std::thread::Builder::new().name("pearl-cluster".into()).spawn(move || run(&c, &node, &pokes)).expect("a thread")]
}

/// Pokes the agent on every change under `prefix`, resuming after the last revision seen.
fn watch(store: &dyn Store, prefix: &str, poke: &Sender<()>) {
    let mut from = 0;
    loop {
        let mut gone = false;
        let r = store.watch(prefix, from, &mut |seen| {
            match seen {
                Seen::Changes { revision, .. } => from = revision + 1,
                Seen::Compacted => from = 0,
            }
            gone = poke.send(()).is_err();
            !gone
        });
        if gone {
            return;
        }
        if let Err(e) = r {
            tracing::debug!("cluster: watch {prefix}: {e}; resuming");
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// What the loop remembers between rounds, to touch only what changed.
#[derive(Default)]
struct Memory {
    carriers: HashMap<(String, String), bool>,
    status: HashMap<String, String>,
    record: Option<Value>,
    waiting: HashMap<String, Vec<String>>,
}

fn run(c: &Cluster, node: &Weak<Node>, pokes: &Receiver<()>) {
    let mut alive = Instant::now();
    let mut memory = Memory::default();
    let renew = Duration::from_millis((c.leases.ttl.max(1) as u64) * 1000 / 3);
    while !c.stop.load(Ordering::SeqCst) {
        let Some(node) = node.upgrade() else { return };
        if alive.elapsed() >= renew {
            match c.store.keep_alive(c.lease.load(Ordering::SeqCst)) {
                Ok(ttl) if ttl > 0 => alive = Instant::now(),
                Ok(_) | Err(StoreError::Refused(_)) => {
                    lost(c, &node, &mut memory);
                    alive = Instant::now();
                }
                // No quorum, or no member: nothing can be decided, so nothing changes and
                // forwarding goes on.
                Err(e) => tracing::warn!("cluster: cannot renew the lease: {e}"),
            }
        }
        if let Err(e) = reconcile(c, &node, &mut memory) {
            tracing::warn!("cluster: {e}");
        }
        drop(node);
        match pokes.recv_timeout(TICK) {
            Ok(()) => while pokes.try_recv().is_ok() {},
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(TICK),
        }
    }
}

/// The lease is gone: the node was taken for down, and what it ran may run elsewhere. Its
/// copies stop first; then it joins again under a new lease and the next round takes back
/// what is still its own.
fn lost(c: &Cluster, node: &Node, memory: &mut Memory) {
    tracing::warn!("cluster: the lease is gone (this node was taken for down): stopping every VR of the cluster's nets here");
    c.leases.forget();
    let doc = node.document();
    for (net, spec) in doc.get("nets").and_then(Value::as_object).into_iter().flatten() {
        if let Err(e) = crate::nets::land_part(node, net, None, &[], &part::tunnel_ports(spec)) {
            tracing::warn!("cluster: stopping net {net}: {}", e.message);
        }
    }
    *memory = Memory::default();
    match c.leases.grant(c.store.as_ref()) {
        Ok(l) => {
            c.lease.store(l, Ordering::SeqCst);
            if let Err(e) = register(c, node) {
                tracing::warn!("cluster: registering again: {e}");
            }
        }
        Err(e) => tracing::warn!("cluster: a new lease: {e}"),
    }
}

fn reconcile(c: &Cluster, node: &Node, memory: &mut Memory) -> Result<(), StoreError> {
    let store = c.store.as_ref();
    let lease = c.lease.load(Ordering::SeqCst);
    let mut view = read(store)?;
    if !view.live.contains_key(&c.me) {
        register(c, node)?;
        view.live.insert(c.me.clone(), serde_json::from_value(record(c, node, lease)).expect("a record"));
    }
    let (mut placed, homeless) = place::resolve(&view.nets, &view.assigns, &view.live);
    if !homeless.is_empty() && elected(c, &view, lease)? {
        schedule(store, &view, &mut placed, &homeless)?;
    }
    // A VR another node owns is that node's until its lease goes.
    for ((net, vr), owner) in &view.owners {
        placed.insert((net.clone(), vr.clone()), owner.clone());
    }
    let doc = node.document();
    let mut running = Vec::new();
    for (net, spec) in &view.nets {
        let vr_node: HashMap<String, String> =
            placed.iter().filter(|((n, _), _)| n == net).map(|((_, v), at)| (v.clone(), at.clone())).collect();
        for (link, a, b) in part::cross_links(spec, &vr_node) {
            if (a == c.me || b == c.me) && !view.vnis.contains_key(&(net.clone(), link.clone())) {
                let n = vni::vni_of(store, net, &link)?;
                view.vnis.insert((net.clone(), link), n);
            }
        }
        // Owned before it runs.
        for (vr, at) in &vr_node {
            if *at == c.me
                && !view.owners.contains_key(&(net.clone(), vr.clone()))
                && !store.create(&keys::owner(net, vr), &c.me, Some(lease))?
            {
                return Ok(()); // taken meanwhile: the next round sees by whom
            }
        }
        let vnis: HashMap<String, u32> = view.vnis.iter().filter(|((n, _), _)| n == net).map(|((_, l), v)| (l.clone(), *v)).collect();
        let mut underlays = view.underlays.clone();
        underlays.insert(c.me.clone(), c.underlay.clone());
        let p = part::part(net, spec, &Known { me: &c.me, vr_node: &vr_node, underlays: &underlays, vnis: &vnis });
        if !p.missing.is_empty() {
            if memory.waiting.get(net) != Some(&p.missing) {
                tracing::info!("cluster: net {net} waits for {}", p.missing.join(", "));
                memory.waiting.insert(net.clone(), p.missing.clone());
            }
            continue;
        }
        memory.waiting.remove(net);
        let old = doc.get("nets").and_then(|n| n.get(net)).map(part::tunnel_ports).unwrap_or_default();
        match crate::nets::land_part(node, net, p.spec.as_ref(), &p.ports, &old) {
            Ok(true) => tracing::info!(
                "cluster: net {net}: this node's part landed ({} VR(s), {} tunnel(s))",
                vr_node.values().filter(|n| **n == c.me).count(),
                p.ports.len()
            ),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!("cluster: net {net}: {}", e.message);
                continue;
            }
        }
        for end in &p.cross {
            let up = view.live.contains_key(&end.remote);
            let key = (end.vr.clone(), end.interface.clone());
            if memory.carriers.get(&key) != Some(&up) {
                tracing::info!("cluster: net {net} link {}: node {} is {}", end.link, end.remote, if up { "up" } else { "down" });
                if let Err(e) = crate::net_hosts::set_vr_carrier(&end.vr, &end.interface, up) {
                    tracing::warn!("cluster: {e}");
                }
                memory.carriers.insert(key, up);
            }
        }
        for (vr, _) in vr_node.iter().filter(|(_, at)| **at == c.me) {
            let links: Value = p.cross.iter().filter(|e| e.vr == *vr).map(|e| (e.link.clone(), json!({"vni": e.vni, "to": e.remote, "up": memory.carriers.get(&(e.vr.clone(), e.interface.clone())) == Some(&true)}))).collect::<serde_json::Map<_, _>>().into();
            running.push((keys::status(&c.me, net, vr), json!({"state": "running", "tunnels": links}).to_string()));
        }
    }
    // What this node runs and the cluster has no more: gone.
    for (net, spec) in doc.get("nets").and_then(Value::as_object).into_iter().flatten() {
        let here = view.nets.get(net).is_some_and(|s| placed.iter().any(|((n, _), at)| n == net && *at == c.me) && !s.is_null());
        if !here {
            match crate::nets::land_part(node, net, None, &[], &part::tunnel_ports(spec)) {
                Ok(_) => tracing::info!("cluster: net {net}: nothing of it here any more; removed"),
                Err(e) => tracing::warn!("cluster: net {net}: {}", e.message),
            }
        }
    }
    for ((net, vr), owner) in &view.owners {
        let mine_still = placed.get(&(net.clone(), vr.clone())).is_some_and(|n| *n == c.me) && view.nets.contains_key(net);
        if *owner == c.me && !mine_still {
            store.delete(&keys::owner(net, vr), false)?;
        }
    }
    write_status(c, &running, memory)?;
    let r = record(c, node, lease);
    if memory.record.as_ref().map(|m| &m["vrs"]) != Some(&r["vrs"]) {
        store.put(&keys::node(&c.me), &r.to_string(), Some(lease))?;
        memory.record = Some(r);
    }
    Ok(())
}

/// Whether this node is the scheduler: the lease-bound key names it, or it just took it.
fn elected(c: &Cluster, view: &View, lease: i64) -> Result<bool, StoreError> {
    match &view.scheduler {
        Some(s) => Ok(*s == c.me),
        None => c.store.create(keys::SCHEDULER, &c.me, Some(lease)),
    }
}

/// Each auto VR without a live node gets one; its assignment to a dead node goes.
fn schedule(store: &dyn Store, view: &View, placed: &mut Placed, homeless: &[(String, String)]) -> Result<(), StoreError> {
    for (net, vr) in homeless {
        let old: Vec<&String> = view.assigns.iter().filter(|(_, a, v)| a == net && v == vr).map(|(n, _, _)| n).collect();
        placed.remove(&(net.clone(), vr.clone()));
        let Some(to) = place::choose(placed, &view.live) else { return Ok(()) };
        for n in old {
            store.delete(&keys::assign(n, net, vr), false)?;
        }
        store.put(&keys::assign(&to, net, vr), "", None)?;
        tracing::info!("cluster: scheduler placed {net}/{vr} on {to}");
        placed.insert((net.clone(), vr.clone()), to);
    }
    Ok(())
}

/// `/pearl/status/ME/...` as this round found it: changed keys written, gone ones removed.
fn write_status(c: &Cluster, running: &[(String, String)], memory: &mut Memory) -> Result<(), StoreError> {
    let lease = c.lease.load(Ordering::SeqCst);
    let now: BTreeSet<&String> = running.iter().map(|(k, _)| k).collect();
    for k in memory.status.keys().filter(|k| !now.contains(k)).cloned().collect::<Vec<_>>() {
        c.store.delete(&k, false)?;
        memory.status.remove(&k);
    }
    for (k, v) in running {
        if memory.status.get(k) != Some(v) {
            c.store.put(k, v, Some(lease))?;
            memory.status.insert(k.clone(), v.clone());
        }
    }
    Ok(())
}
