//! `distribution:` of a VR and `resources.workers`: a VR's traffic runs on the node's workers
//! (`workers: N`), each port's frames spread over them by the kernel (AF_PACKET fanout) as the
//! VRs on the port ask: `flow` (the default: a hash of the flow, so a flow stays on one worker
//! and in order), `round_robin` or `proportional` (PdP's policies, kept so that the reordering
//! they cause can be shown). The kernel spreads a port's frames before anyone knows their VR,
//! so the VRs sharing a port must ask for the same distribution.
//!
//! ```yaml
//! workers: 2
//! vrs:
//!   - {name: red, resources: {workers: 2}, distribution: round_robin, interfaces: [...]}
//! ```

use crate::at::At;
use crate::error::ConfigError;
use crate::grammar::DistributionSpec;
use crate::model::{Distribution, VrConfig};
use std::sync::Arc;

/// The `distribution` of the VR at `vr`.
pub(crate) fn parse_distribution(d: Option<DistributionSpec>, vr: At<'_>, workers: usize) -> Result<Distribution, ConfigError> {
    let d = d.map(|d| match d {
        DistributionSpec::Flow => Distribution::Flow,
        DistributionSpec::RoundRobin => Distribution::RoundRobin,
        DistributionSpec::Proportional => Distribution::Proportional,
    });
    match d {
        Some(d) if d != Distribution::Flow && workers == 1 => Err(ConfigError::at(
            vr.key("distribution").to_string(),
            format!("{}: with one worker (workers: 1) there is nothing to spread; give the node workers: 2 or more", d.name()),
        )),
        _ => Ok(d.unwrap_or_default()),
    }
}

/// VRs sharing a port ask for the same distribution; `round_robin` rotates over every worker.
pub(crate) fn check_ports(vrs: &[Arc<VrConfig>], ports: usize, workers: usize) -> Result<(), ConfigError> {
    for (i, vr) in vrs.iter().enumerate() {
        if let Some(k) = vr.resources.get("workers").filter(|&k| k < workers as u64 && vr.distribution == Distribution::RoundRobin) {
            return Err(ConfigError::at(
                format!("vrs[{i}].resources.workers"),
                format!("{k}, but round_robin rotates a port's frames over all {workers} workers; ask for {workers} or use flow or proportional"),
            ));
        }
    }
    for port in 0..ports {
        let mut on = vrs.iter().enumerate().filter(|(_, v)| v.interfaces.iter().any(|i| i.port == port));
        let Some((_, first)) = on.next() else { continue };
        if let Some((i, other)) = on.find(|(_, v)| v.distribution != first.distribution) {
            return Err(ConfigError::at(
                format!("vrs[{i}].distribution"),
                format!(
                    "{}, but VR {:?} on the same port asks for {}: the kernel spreads a port's frames before their VR is known, so VRs sharing a port share its distribution",
                    other.distribution.name(),
                    first.name,
                    first.distribution.name()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::model::Distribution;
    use crate::parse_config;

    fn doc(workers: u32, vrs: &[(&str, &str, &str)]) -> String {
        let mut s = format!("workers: {workers}\nports: [{{name: p0, interface: veth0}}, {{name: p1, interface: veth1}}]\nvrs:\n");
        for (i, (name, port, extra)) in vrs.iter().enumerate() {
            s += &format!("  - {{name: {name}, {extra} interfaces: [{{name: e0, port: {port}, mac: \"02:00:00:00:{i:02x}:00\"}}]}}\n");
        }
        s
    }

    #[test]
    fn vrs_ask_for_a_distribution_and_as_many_workers_as_the_node_has() {
        let c = parse_config(&doc(2, &[("a", "p0", "distribution: round_robin, resources: {workers: 2},"), ("b", "p1", "")])).unwrap();
        assert_eq!((c.port_distribution(0), c.port_distribution(1)), (Distribution::RoundRobin, Distribution::Flow));
        assert_eq!(c.vrs[0].resources.get("workers"), Some(2));
        for (text, path, says) in [
            (doc(2, &[("a", "p0", "resources: {workers: 3},")]), "vrs[0].resources.workers", "the node runs 2"),
            (doc(1, &[("a", "p0", "distribution: proportional,")]), "vrs[0].distribution", "one worker"),
            (doc(2, &[("a", "p0", "distribution: sideways,")]), "vrs[0].distribution", "unknown distribution"),
            (doc(2, &[("a", "p0", "distribution: round_robin,"), ("b", "p0", "")]), "vrs[1].distribution", "share its distribution"),
            (doc(2, &[("a", "p0", "distribution: round_robin, resources: {workers: 1},")]), "vrs[0].resources.workers", "rotates"),
        ] {
            let e = parse_config(&text).unwrap_err();
            assert_eq!(e.path, path, "{e}");
            assert!(e.to_string().contains(says), "{e}");
        }
    }
}
