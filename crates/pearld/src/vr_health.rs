//! A VR's `health` as `GET /v1/vrs` and `/v1/vrs/{name}` show it, from what the API already
//! holds: the supervisor's daemon status, the prober's last answer of the routing suite, and
//! routed's counters.

use crate::ctx::Ctx;
use crate::models::vr::Vr;
use crate::models::vr_health::{Families, VrHealth};
use crate::suite_query::Speaker;
use std::path::PathBuf;

/// Adds `health` to a VR that has a control plane or a route mirror.
pub fn attach(ctx: &Ctx, vr: &mut Vr) {
    let routed = ctx.node.routed_stats(vr.id);
    let speaker = vr.control_plane.as_ref().and_then(|c| match (&c.frr, &c.bird) {
        (Some(frr), _) => Some(Speaker::Frr { vr: vr.name.clone(), daemons: frr.daemons.clone() }),
        (_, Some(bird)) => Some(Speaker::Bird { socket: PathBuf::from(&bird.socket) }),
        _ => None,
    });
    if speaker.is_none() && vr.processes.is_none() && routed.is_none() {
        return;
    }
    let probed = speaker.and_then(|s| ctx.sessions.read(&vr.name, s));
    let processes = vr.processes.as_deref().unwrap_or_default();
    let sessions = probed.as_ref().map(|p| p.sessions.clone());
    vr.health = Some(VrHealth {
        daemons_running: processes.iter().filter(|p| p.running).count(),
        daemons: processes.len(),
        sessions_up: sessions.iter().flatten().filter(|s| s.up).count(),
        sessions,
        checked_seconds_ago: probed.as_ref().map(|p| (p.at.elapsed().as_secs_f64() * 10.0).round() / 10.0),
        query_errors: probed.and_then(|p| (!p.errors.is_empty()).then_some(p.errors)),
        fast_path_routes: routed.map(|r| Families { v4: r.routes_v4, v6: r.routes_v6 }),
        kernel_routes: routed.map(|r| Families { v4: r.kernel_routes_v4, v6: r.kernel_routes_v6 }),
        routed_in_sync: routed.map(|r| !r.held && r.deferred_removals == 0 && r.over_quota == 0),
    });
}
