//! What the node has to grant VRs (`resources:`, see pearl-control's `resources.rs`): measured
//! once at start where `node.capacity` does not state it, and what is granted and free of it.

use pearl_control::{granted, Config, Slices, RESOURCES, WORKER_PPS};
use serde_json::{json, Map, Value};

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
pub fn report(config: &Config, capacity: &[u64; 8], slices: &Slices) -> Value {
    let granted = granted(&config.vrs);
    let amount = |v: u64| if v == u64::MAX { Value::Null } else { v.into() };
    let by_resource = |f: &dyn Fn(usize) -> Value| RESOURCES.iter().enumerate().map(|(i, r)| (r.to_string(), f(i))).collect::<Map<_, _>>();
    let fast = config.vrs.iter().filter(|v| v.kind == pearl_control::VrKind::Fast).count();
    json!({
        "capacity": by_resource(&|i| amount(capacity[i])),
        "granted": by_resource(&|i| granted[i].into()),
        "free": by_resource(&|i| amount(capacity[i].saturating_sub(granted[i]))),
        "fast_slots": {
            "capacity": config.node.fast_slots,
            "used": fast,
            "free": config.node.fast_slots.map(|s| s.saturating_sub(fast)),
        },
        "vrs": config.vrs.iter().map(|v| json!({
            "name": v.name,
            "kind": v.kind.name(),
            "resources": v.resources.iter().map(|(r, a)| (r.to_string(), Value::from(a))).collect::<Map<_, _>>(),
            "workers": slices.workers_of(v.id),
        })).collect::<Vec<_>>(),
    })
}
