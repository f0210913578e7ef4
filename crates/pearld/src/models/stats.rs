//! `GET /v1/stats`: the live counters per port, VR and worker.

use super::counts::Counts;
use super::vr_kind::VrKind;
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stats<'a> {
    /// a monotonic clock: rates are counter differences over its differences
    pub time_seconds: f64,
    pub ports: Vec<PortStats<'a>>,
    pub workers: Vec<WorkerStats>,
    /// VRs the query matched, before offset and limit
    pub vrs_total: usize,
    pub vrs: Vec<VrStats<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PortStats<'a> {
    pub name: &'a str,
    pub interface: &'a str,
    /// every frame received, offloaded ones included
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// every frame sent, offloaded ones included
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// of the received, those the kernel forwarded for a VR (`node.flow_offload`)
    pub offloaded_rx_packets: u64,
    pub offloaded_rx_bytes: u64,
    /// of the sent, those the kernel forwarded for a VR
    pub offloaded_tx_packets: u64,
    pub offloaded_tx_bytes: u64,
    pub tx_errors: u64,
    pub unclaimed: u64,
    /// frames the port's driver lost before the pipeline saw them (kernel ring full, no buffer, too long); updated every 0.1 s
    pub rx_dropped: u64,
    /// receive calls that failed
    pub rx_errors: u64,
    /// vxlan ports: datagrams refused for a short header or one without the I flag
    pub vxlan_malformed: u64,
    /// vxlan ports: datagrams of a VNI (or from a source) no port has
    pub vxlan_unknown_vni: u64,
    pub malformed: Counts,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VrStats<'a> {
    pub name: &'a str,
    pub id: u16,
    pub kind: VrKind,
    /// packets given to the VR, offloaded ones included
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// packets the VR's fast path forwarded, offloaded ones included
    pub forwarded_packets: u64,
    pub forwarded_bytes: u64,
    /// of the forwarded, those the kernel forwarded for the fast path (`node.flow_offload`)
    pub offloaded_packets: u64,
    pub offloaded_bytes: u64,
    /// packets the VR's own kernel forwarded (all of a kernel VR's traffic; a fast VR's slow
    /// path), from its namespace's IP MIB; null when it could not be read
    pub kernel_forwarded_packets: Option<u64>,
    pub queue_drops: u64,
    pub exceptions: Counts,
    pub exception_drops: u64,
    pub drops: Counts,
    pub impaired: Impaired,
    // Null when the VR kernel's drop counters could not be read.
    pub kernel_drops: Option<Counts>,
    // Null for a VR without routed mirroring its namespace.
    pub routed: Option<Routed>,
    pub slow_path: SlowPath,
    pub queues: Vec<QueueStats<'a>>,
}

// What the VR's impaired links (`impair:`) did to its packets.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Impaired {
    pub lost: u64,
    pub duplicated: u64,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Routed {
    pub routes_v4: u64,
    pub routes_v6: u64,
    pub neighbors: u64,
    pub refused: u64,
    pub over_quota: u64,
    pub resyncs: u64,
    pub batches: u64,
    pub held: bool,
    pub deferred_removals: u64,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlowPath {
    pub to_kernel_packets: u64,
    pub to_kernel_drops: u64,
    pub from_kernel_packets: u64,
    pub from_kernel_drops: u64,
    pub sent_packets: u64,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueStats<'a> {
    pub port: &'a str,
    pub queue: usize,
    pub weight: u32,
    /// packets the queue took (offloaded ones never enter it)
    pub enqueued_packets: u64,
    /// packets the VR sent out of the port through this queue, offloaded ones included
    pub sent_packets: u64,
    pub sent_bytes: u64,
    /// of the sent, those the kernel forwarded for the VR out of this port (`node.flow_offload`;
    /// counted on queue 0, the one queue of a VR that offloads)
    pub offloaded_packets: u64,
    pub offloaded_bytes: u64,
    pub dropped_packets: u64,
    pub backlog_packets: u64,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerStats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub drops: WorkerDrops,
    pub batches: u64,
    pub idle_polls: u64,
    /// rounds that began over 1 ms after the previous one while the worker was not pausing by choice (its rings filled unread)
    pub stalls: u64,
    /// the longest such gap since pearld started
    #[schemars(range(min = 0))]
    pub longest_stall_seconds: f64,
    /// CPU time the worker thread has used
    #[schemars(range(min = 0))]
    pub cpu_seconds: f64,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerDrops {
    pub malformed: u64,
    pub unclaimed: u64,
    pub rx_dropped: u64,
    pub tx_errors: u64,
    pub queue_full: u64,
    pub slow_path_full: u64,
}
