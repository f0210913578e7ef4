//! `resources:` of a VR, what it asks the node for (SPP's slices asked their resource manager
//! for filters, queues, buffers, memory and bandwidth), and `node.capacity`, what the node has.
//!
//! ```yaml
//! node: {capacity: {bandwidth_mbps: 10000}}          # what is not given is measured at start
//! vrs:
//!   - name: red
//!     resources: {fib_entries: 100000, filters: 64, queues: 4, buffer_kb: 4096,
//!                 bandwidth_mbps: 1000, pps: 500000, cpu_percent: 50, workers: 1}
//! ```
//!
//! A request is granted whole or refused whole, naming the resource that is short (`admit`).
//! Granted resources are enforced through what exists: FIB entries, filters and CPU become the
//! VR's limits, bandwidth its rate cap, pps its weight for ports and the worker's time; queues
//! and buffer bound its queue list (each queued frame holding a 2 KiB buffer).

use crate::at::At;
use crate::error::ConfigError;
use crate::fields::uint;
use crate::grammar::{Amounts, CapacitySpec, ResourcesSpec, WorkersAsk};
use crate::model::{Resources, VrConfig, QUEUED_FRAME_KB, RESOURCES};
use std::sync::Arc;

/// The largest amount of any resource a document may state.
const MAX_AMOUNT: u64 = 1 << 40;

/// `workers`: the node's (`workers: N`); a VR asking for `auto` gets them all.
pub(crate) fn parse_resources(spec: &ResourcesSpec, at: At<'_>, workers: usize) -> Result<Resources, ConfigError> {
    let asked = spec.workers.map(|w| match w {
        WorkersAsk::Count(n) => n,
        WorkersAsk::All(_) => workers as i64,
    });
    let mut r = Resources::default();
    for (i, (name, amount)) in RESOURCES.iter().zip(amounts(spec, asked)).enumerate() {
        let Some(amount) = amount else { continue };
        let at = at.key(name);
        let amount = uint(amount, MAX_AMOUNT, at)?;
        if amount == 0 {
            return Err(at.err("must be at least 1 (leave it out to ask for none)"));
        }
        r.0[i] = Some(amount);
    }
    if let Some(w) = r.get("workers").filter(|&w| w > workers as u64) {
        return Err(at.key("workers").err(format!("{w} workers asked, but the node runs {workers} (workers: {workers})")));
    }
    Ok(r)
}

/// `node.capacity`: amounts the operator states instead of the measured ones.
pub(crate) fn parse_capacity(spec: &CapacitySpec, at: At<'_>) -> Result<Resources, ConfigError> {
    let mut r = Resources::default();
    for (i, (name, amount)) in RESOURCES.iter().zip(amounts(spec, spec.workers)).enumerate() {
        r.0[i] = amount.map(|a| uint(a, MAX_AMOUNT, at.key(name))).transpose()?;
    }
    Ok(r)
}

/// The amounts stated, in `RESOURCES`' order, with `workers` as a number.
fn amounts<W>(a: &Amounts<W>, workers: Option<i64>) -> [Option<i64>; 8] {
    [a.fib_entries, a.filters, a.queues, a.buffer_kb, a.bandwidth_mbps, a.pps, a.cpu_percent, workers]
}

/// Checks a VR's own settings against what it asks for, so that what is granted bounds what
/// it gets; `path` is the VR's (`vrs[2]`).
pub(crate) fn check_within(vr: &VrConfig, stated: &StatedLimits, path: At<'_>) -> Result<(), ConfigError> {
    let r = &vr.resources;
    let above = |field: &str, value: u64, resource: &str, asked: u64| {
        ConfigError::at(format!("{path}.{field}"), format!("{value} is above the {asked} the VR asks for as resources.{resource}"))
    };
    for (field, value, resource) in [
        ("limits.fib_entries", stated.fib_entries.map(|v| v as u64), "fib_entries"),
        ("limits.filters", stated.filters.map(|v| v as u64), "filters"),
        ("limits.rate_mbps", stated.rate_mbps, "bandwidth_mbps"),
        ("limits.cpu_percent", stated.cpu_percent.map(u64::from), "cpu_percent"),
    ] {
        if let (Some(v), Some(asked)) = (value, r.get(resource)) {
            if v > asked {
                return Err(above(field, v, resource, asked));
            }
        }
    }
    if let Some(asked) = r.get("queues").filter(|&q| (vr.queues.len() as u64) > q) {
        return Err(above("queues", vr.queues.len() as u64, "queues", asked));
    }
    let buffer: u64 = vr.queues.iter().map(|q| q.length as u64 * QUEUED_FRAME_KB).sum();
    if let Some(asked) = r.get("buffer_kb").filter(|&b| buffer > b) {
        return Err(ConfigError::at(
            format!("{path}.queues"),
            format!("their lengths hold {buffer} KiB of frames ({QUEUED_FRAME_KB} KiB each), above the {asked} KiB of resources.buffer_kb"),
        ));
    }
    Ok(())
}

/// The limits a VR states itself, before resources fill the ones it leaves out.
#[derive(Default)]
pub(crate) struct StatedLimits {
    pub fib_entries: Option<usize>,
    pub filters: Option<usize>,
    pub rate_mbps: Option<u64>,
    pub cpu_percent: Option<u32>,
}

/// Workers are shared, not divided: a VR's request is how many of the node's its traffic
/// spreads over, and what is granted of them is the most any VR has.
const SHARED: &str = "workers";

/// What the node grants: the sum of every VR's requests, by resource (workers: the most).
pub fn granted(vrs: &[Arc<VrConfig>]) -> [u64; 8] {
    let mut sum = [0u64; 8];
    for vr in vrs {
        for (i, v) in vr.resources.0.iter().enumerate() {
            let v = v.unwrap_or(0);
            sum[i] = if RESOURCES[i] == SHARED { sum[i].max(v) } else { sum[i] + v };
        }
    }
    sum
}

/// Grants `new`'s requests whole or refuses them whole: where a resource's requests together
/// exceed `capacity`, the refusal names the first VR whose request for it is new or grew since
/// `old` (the change that asks too much), or `node.capacity` if none did (the capacity shrank).
pub fn admit(new: &[Arc<VrConfig>], old: &[Arc<VrConfig>], capacity: &[u64; 8]) -> Result<(), ConfigError> {
    let sum = granted(new);
    for (i, name) in RESOURCES.iter().enumerate() {
        if sum[i] <= capacity[i] {
            continue;
        }
        let before = |vr: &VrConfig| old.iter().find(|o| o.name == vr.name).and_then(|o| o.resources.0[i]).unwrap_or(0);
        let culprit = new.iter().enumerate().find(|(_, vr)| vr.resources.0[i].unwrap_or(0) > before(vr));
        return Err(match culprit {
            Some((v, vr)) => {
                let asked = vr.resources.0[i].unwrap_or(0);
                let others = if *name == SHARED { 0 } else { sum[i] - asked };
                ConfigError::at(
                    format!("vrs[{v}].resources.{name}"),
                    format!(
                        "{asked} asked, but the node has {} free of {} ({others} granted to other VRs)",
                        capacity[i].saturating_sub(others),
                        capacity[i]
                    ),
                )
            }
            None => ConfigError::at(format!("node.capacity.{name}"), format!("{} is below the {} granted to VRs", capacity[i], sum[i])),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_config;

    fn vrs(resources: &[&str]) -> Vec<Arc<VrConfig>> {
        let mut s = String::from("ports: [{name: p0, interface: veth0}]\nvrs:\n");
        for (i, r) in resources.iter().enumerate() {
            s +=
                &format!("  - {{name: v{i}, resources: {{{r}}}, interfaces: [{{name: e0, port: p0, mac: \"02:00:00:00:{i:02x}:00\"}}]}}\n");
        }
        parse_config(&s).unwrap().vrs
    }

    fn capacity(bandwidth: u64) -> [u64; 8] {
        let mut c = [u64::MAX; 8];
        c[4] = bandwidth;
        c
    }

    #[test]
    fn requests_within_capacity_are_granted_and_the_one_that_asks_too_much_is_named() {
        let before = vrs(&["bandwidth_mbps: 600", "pps: 1000"]);
        assert_eq!(admit(&before, &[], &capacity(1000)), Ok(()));
        assert_eq!(granted(&before)[4], 600);
        let after = vrs(&["bandwidth_mbps: 600", "pps: 1000", "bandwidth_mbps: 500"]);
        let e = admit(&after, &before, &capacity(1000)).unwrap_err();
        assert_eq!(e.path, "vrs[2].resources.bandwidth_mbps");
        assert!(e.to_string().contains("500 asked, but the node has 400 free of 1000 (600 granted to other VRs)"), "{e}");
        // The same document with the capacity lowered under it: the capacity is at fault.
        let e = admit(&before, &before, &capacity(500)).unwrap_err();
        assert_eq!(e.path, "node.capacity.bandwidth_mbps");
    }

    #[test]
    fn granted_resources_become_limits_and_settings_beyond_them_are_refused() {
        let v = &vrs(&["fib_entries: 100, filters: 8, bandwidth_mbps: 50, cpu_percent: 20, pps: 3000"])[0];
        assert_eq!((v.limits.fib_entries, v.limits.filters, v.limits.rate_mbps, v.limits.cpu_percent), (100, 8, Some(50), 20));
        assert_eq!(v.port_share(), 3000);
        let doc = |extra: &str| {
            format!("ports: [{{name: p0, interface: veth0}}]\nvrs:\n  - {{name: v, {extra}, interfaces: [{{name: e0, port: p0, mac: \"02:00:00:00:00:01\"}}]}}\n")
        };
        for (extra, path, says) in [
            ("resources: {fib_entries: 10}, limits: {fib_entries: 11}", "vrs[0].limits.fib_entries", "above the 10"),
            ("resources: {queues: 1}, queues: [{weight: 1}, {weight: 2}]", "vrs[0].queues", "resources.queues"),
            ("resources: {buffer_kb: 100}, queues: [{weight: 1, length: 51}]", "vrs[0].queues", "102 KiB"),
            ("resources: {workers: 2}", "vrs[0].resources.workers", "the node runs 1"),
            ("resources: {pps: 0}", "vrs[0].resources.pps", "at least 1"),
            ("resources: {disk: 1}", "vrs[0].resources.disk", "unknown field"),
        ] {
            let e = parse_config(&doc(extra)).unwrap_err();
            assert_eq!(e.path, path, "{extra}: {e}");
            assert!(e.to_string().contains(says), "{extra}: {e}");
        }
    }
}
