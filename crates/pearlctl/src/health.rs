//! A VR's `health` (see `GET /v1/vrs/{name}`) as `pearlctl vr show` prints it: one summary line,
//! then one line per session and per failed query.

use serde_json::Value;

/// `suite`: the VR runs FRR or BIRD, whose sessions pearld asks for.
pub fn describe(h: &Value, suite: bool) -> String {
    let mut parts = vec![format!("{}/{} daemons running", h["daemons_running"], h["daemons"])];
    match (h["sessions"].as_array(), h["checked_seconds_ago"].as_f64()) {
        (Some(s), Some(ago)) => parts.push(format!("{}/{} sessions up (asked {ago} s ago)", h["sessions_up"], s.len())),
        _ if !suite => {}
        _ => parts.push("sessions not asked yet (ask again in a second)".into()),
    }
    if let (Some(fast), Some(kernel)) = (h["fast_path_routes"].as_object(), h["kernel_routes"].as_object()) {
        parts.push(format!("fast path {} IPv4 + {} IPv6 routes, kernel {} + {}", fast["v4"], fast["v6"], kernel["v4"], kernel["v6"]));
    }
    match h["routed_in_sync"].as_bool() {
        Some(true) => parts.push("routed in sync".into()),
        Some(false) => parts.push("routed NOT in sync (held, or over the FIB quota)".into()),
        None => {}
    }
    let mut out = format!("  health: {}\n", parts.join(", "));
    for s in h["sessions"].as_array().into_iter().flatten() {
        let mut on = s["interface"].as_str().map_or(String::new(), |i| format!(" on {i}"));
        if let Some(vrf) = s["vrf"].as_str() {
            on += &format!(" in VRF {vrf}");
        }
        let received = s["prefixes_received"].as_u64().map_or(String::new(), |n| format!(", {n} prefixes received"));
        let mark = if s["up"] == true { "up" } else { "DOWN" };
        out += &format!("    {} {}{on}: {} ({mark}){received}\n", text(&s["protocol"]), text(&s["peer"]), text(&s["state"]));
    }
    for e in h["query_errors"].as_array().into_iter().flatten() {
        out += &format!("    query failed: {}\n", text(e));
    }
    out
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn health_says_what_runs_which_sessions_are_up_and_whether_the_fast_path_follows() {
        let h = json!({
            "daemons_running": 2, "daemons": 2, "sessions_up": 1, "checked_seconds_ago": 0.4,
            "sessions": [
                {"protocol": "ospf", "peer": "10.1.0.2", "interface": "eth0", "state": "Full/-", "up": true},
                {"protocol": "bgp", "peer": "10.9.0.2", "state": "Active", "up": false, "prefixes_received": 0},
            ],
            "query_errors": ["vtysh -c 'show bgp summary json': no answer within 5 s"],
            "fast_path_routes": {"v4": 7, "v6": 2}, "kernel_routes": {"v4": 5, "v6": 2}, "routed_in_sync": true,
        });
        assert_eq!(
            describe(&h, true),
            "  health: 2/2 daemons running, 1/2 sessions up (asked 0.4 s ago), fast path 7 IPv4 + 2 IPv6 routes, kernel 5 + 2, \
             routed in sync\n    ospf 10.1.0.2 on eth0: Full/- (up)\n    bgp 10.9.0.2: Active (DOWN), 0 prefixes received\n    \
             query failed: vtysh -c 'show bgp summary json': no answer within 5 s\n"
        );
        let first = json!({"daemons_running": 1, "daemons": 2, "sessions_up": 0});
        assert_eq!(describe(&first, true), "  health: 1/2 daemons running, sessions not asked yet (ask again in a second)\n");
        assert_eq!(describe(&first, false), "  health: 1/2 daemons running\n");
    }
}
