//! The key layout in etcd, all under `/pearl/` (docs/CLUSTER.md draws it). Lease-bound keys
//! vanish with their node's lease; the others are the network's desired state.

pub const NODES: &str = "/pearl/nodes/";
pub const UNDERLAY: &str = "/pearl/underlay/";
pub const NETS: &str = "/pearl/nets/";
pub const LINKS: &str = "/pearl/links/";
pub const VNI: &str = "/pearl/vni/";
pub const ASSIGN: &str = "/pearl/assign/";
pub const OWNER: &str = "/pearl/owner/";
pub const STATUS: &str = "/pearl/status/";
pub const SCHEDULER: &str = "/pearl/scheduler";

/// `/pearl/nodes/NODE`: the node's record, bound to its lease (its presence is "up").
pub fn node(name: &str) -> String {
    format!("{NODES}{name}")
}

/// `/pearl/underlay/NODE`: where its tunnels end, kept while it is down so that its
/// neighbours' ports stay as they are.
pub fn underlay(name: &str) -> String {
    format!("{UNDERLAY}{name}")
}

/// `/pearl/nets/NET`: the net as applied (its VRs with their `node:`).
pub fn net(name: &str) -> String {
    format!("{NETS}{name}")
}

/// `/pearl/links/NET/A|B`: the VNI of the link between ends A and B (`red/eth1`).
pub fn link(net: &str, link: &str) -> String {
    format!("{LINKS}{net}/{link}")
}

/// `/pearl/vni/N`: who holds VNI N (created only if absent, so no two links share one).
pub fn vni(n: u32) -> String {
    format!("{VNI}{n}")
}

/// `/pearl/assign/NODE/NET/VR`: the scheduler placed `node: auto` VR NET/VR on NODE.
pub fn assign(node: &str, net: &str, vr: &str) -> String {
    format!("{ASSIGN}{node}/{net}/{vr}")
}

/// `/pearl/owner/NET/VR`: the node running VR NET/VR, bound to that node's lease.
pub fn owner(net: &str, vr: &str) -> String {
    format!("{OWNER}{net}/{vr}")
}

/// `/pearl/status/NODE/NET/VR`: what the node runs of it, bound to its lease.
pub fn status(node: &str, net: &str, vr: &str) -> String {
    format!("{STATUS}{node}/{net}/{vr}")
}

/// The key's parts after `prefix`, split at '/'.
pub fn parts<'a>(key: &'a str, prefix: &str) -> Vec<&'a str> {
    key.strip_prefix(prefix).map(|r| r.split('/').collect()).unwrap_or_default()
}
