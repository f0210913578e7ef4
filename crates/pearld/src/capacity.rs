//! What the node has to grant VRs (`resources:`, see pearl-control's `resources.rs`): measured
//! once at start where `node.capacity` does not state it, and what is granted and free of it.

use crate::models::node::{FastSlots, NodeReport, NodeVr};
use crate::models::resources::ResourceTable;
use pearl_control::{granted, Config, Slices, RESOURCES, WORKER_PPS};

/// A port whose speed nobody states and the kernel does not know (veth, TAP): 10 Gb/s.
const UNKNOWN_PORT_MBPS: u64 = 10_000;

/// What the machine offers, by `RESOURCES` index; `u64::MAX` where nothing bounds a resource
/// but the VRs' own limits (FIB entries, filters, queues: memory the VRs' requests take).
pub fn measure(config: &Config) -> [u64; 8] {
    let mut c = [u64::MAX; 8];
    let at = |name: &str| RESOURCES.iter().position(|r| *r == name).expect("a resource");
    c[at("buffer_kb")] = mem_available_kb() / 2;
    c[at("bandwidth_mbps")] =
        config.ports.iter().map(|p| p.rate_mbps.or_else(|| link_speed(&p.interface)).unwrap_or(UNKNOWN_PORT_MBPS)).sum();
    c[at("pps")] = WORKER_PPS * config.workers as u64;
    c[at("cpu_percent")] = std::thread::available_parallelism().map_or(1, |n| n.get() as u64) * 100;
    c[at("workers")] = config.workers as u64;
    c
}

/// `measured`, with what `node.capacity` states instead.
pub fn of(config: &Config, measured: &[u64; 8]) -> [u64; 8] {
    let mut c = *measured;
    for (i, v) in config.node.capacity.0.iter().enumerate() {
        if let Some(v) = v {
            c[i] = *v;
        }
    }
    c
}

fn mem_available_kb() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(1 << 20)
}

/// The link speed the kernel reports, in Mb/s (none for veth and TAP).
fn link_speed(interface: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/sys/class/net/{interface}/speed")).ok()?;
    text.trim().parse::<i64>().ok().filter(|&s| s > 0).map(|s| s as u64)
}

/// `GET /v1/node`: capacity, granted and free by resource (null: unbounded), the fast-path
/// slots, and each VR's requests, placement and workers (all of them unless it holds slices).
/// It owns the VRs' names, so it outlives the configuration it was read from and both the
/// handler and `/metrics` use it as built.
pub fn report(config: &Config, capacity: &[u64; 8], slices: &Slices) -> NodeReport {
    let granted = granted(&config.vrs);
    let amount = |v: u64| (v != u64::MAX).then_some(v);
    fn by_resource<T>(f: impl Fn(usize) -> T) -> ResourceTable<T> {
        ResourceTable(RESOURCES.iter().enumerate().map(|(i, r)| (*r, f(i))).collect())
    }
    let fast = config.vrs.iter().filter(|v| v.kind == pearl_control::VrKind::Fast).count();
    NodeReport {
        capacity: by_resource(|i| amount(capacity[i])),
        granted: by_resource(|i| granted[i]),
        free: by_resource(|i| amount(capacity[i].saturating_sub(granted[i]))),
        fast_slots: FastSlots {
            capacity: config.node.fast_slots,
            used: fast,
            free: config.node.fast_slots.map(|s| s.saturating_sub(fast)),
        },
        vrs: config
            .vrs
            .iter()
            .map(|v| NodeVr {
                name: v.name.clone(),
                kind: v.kind.into(),
                resources: (&v.resources).into(),
                workers: slices.workers_of(v.id),
            })
            .collect(),
    }
}
