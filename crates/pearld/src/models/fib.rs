//! A VR's fast-path FIB as the workers read it (`/v1/vrs/{name}/fib`, `…/fib/lookup`).

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FibPage {
    pub vr: String,
    /// v4 or v6
    pub family: String,
    /// routes in this family's table, all pages together
    pub total: usize,
    pub routes: Vec<FibRoute>,
    /// what to pass as `after` for the next page; null: this page is the last
    pub next: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FibRoute {
    #[schemars(example = &"10.9.0.0/24")]
    pub prefix: String,
    /// local (one of the VR's addresses), connected (an interface's subnet), static (the
    /// configuration's routes) or kernel (mirrored from the VR's kernel by routed: FRR, BIRD,
    /// `ip route`)
    pub origin: String,
    /// one, or the members of an equal-cost group (a flow takes one)
    pub next_hops: Vec<FibNextHop>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FibNextHop {
    /// forward (rewrite and send), glean (on a connected subnet, neighbour unresolved: the VR's
    /// kernel resolves it), local (to the VR's own kernel) or kernel (left to the VR's kernel:
    /// unreachable, blackhole, or a route the fast path could not mirror)
    pub kind: String,
    /// whether the fast path sends it on itself (forward, local), rather than through the kernel
    pub resolved: bool,
    /// the VR interface it leaves by
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// the destination MAC written into the frame
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FibLookup {
    pub vr: String,
    pub address: String,
    /// the longest prefix matching it; null: no route (the packet goes to the VR's kernel)
    pub route: Option<FibRoute>,
}
