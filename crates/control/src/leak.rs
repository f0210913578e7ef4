//! `leak:` of a VR (admin only): prefixes it imports from another VR, as VRF route leaking.
//!
//! ```yaml
//! - name: blue
//!   leak: [{from: red, prefixes: [198.51.100.0/24]}]
//! ```
//!
//! A packet of blue's to a leaked prefix is forwarded by red's routes for it (red's next hop,
//! out of red's interface), in the fast path, counted and queued as blue's. Within a leaked
//! prefix red's routes win over blue's own; elsewhere the VRs stay apart. Both VRs forward in
//! the fast path (`kind: fast`).

use crate::at::At;
use crate::error::ConfigError;
use crate::grammar::LeakSpec;
use crate::model::{Leak, VrConfig, VrKind};
use std::sync::Arc;

/// The `leak:` list of the VR at `at`.
pub(crate) fn parse_leaks(leaks: Option<&[LeakSpec]>, at: At<'_>) -> Result<Vec<Leak>, ConfigError> {
    let leak_at = at.key("leak");
    let mut out = Vec::new();
    for (i, l) in leaks.unwrap_or_default().iter().enumerate() {
        let at = leak_at.index(i);
        let prefixes_at = at.key("prefixes");
        let prefixes = l
            .prefixes
            .iter()
            .flatten()
            .enumerate()
            .map(|(j, p)| crate::values::network(p, prefixes_at.index(j)))
            .collect::<Result<Vec<_>, _>>()?;
        if prefixes.is_empty() {
            return Err(prefixes_at.err("list at least one prefix to import"));
        }
        out.push(Leak { from: l.from.clone(), prefixes });
    }
    Ok(out)
}

/// Once every VR is known: each `from` names another fast VR, and the importer is fast too.
pub(crate) fn check_leaks(vrs: &[Arc<VrConfig>]) -> Result<(), ConfigError> {
    for (v, vr) in vrs.iter().enumerate() {
        for (l, leak) in vr.leak.iter().enumerate() {
            let at = |field: &str, why: String| ConfigError::at(format!("vrs[{v}].leak[{l}]{field}"), why);
            if vr.kind != VrKind::Fast {
                return Err(at("", format!("a {} VR forwards in its kernel; only fast VRs import routes", vr.kind.name())));
            }
            if leak.from == vr.name {
                return Err(at(".from", "a VR cannot import from itself".to_string()));
            }
            let Some(source) = vrs.iter().find(|s| s.name == leak.from) else {
                return Err(at(".from", format!("no VR named {:?}", leak.from)));
            };
            if source.kind != VrKind::Fast {
                return Err(at(".from", format!("{} is a {} VR; routes are imported from fast VRs only", source.name, source.kind.name())));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::parse_config;

    fn two(blue_extra: &str, red_kind: &str) -> String {
        format!(
            "ports: [{{name: p0, interface: pe0}}, {{name: p1, interface: pe1}}]
vrs:
  - name: red
    kind: {red_kind}
    interfaces: [{{name: eth0, port: p0, mac: '02:00:00:00:01:00', addresses: [10.1.0.1/24]}}]
  - name: blue
    interfaces: [{{name: eth0, port: p1, mac: '02:00:00:00:02:00', addresses: [10.1.0.1/24]}}]
{blue_extra}"
        )
    }

    #[test]
    fn leaks_are_read_and_checked_against_the_other_vrs() {
        let c = parse_config(&two("    leak: [{from: red, prefixes: [198.51.100.0/24, '2001:db8::/32']}]\n", "fast")).unwrap();
        assert_eq!(c.vrs[1].leak[0].from, "red");
        assert_eq!(c.vrs[1].leak[0].prefixes.len(), 2);
        for (extra, kind, want) in [
            ("    leak: [{from: green, prefixes: [198.51.100.0/24]}]\n", "fast", "vrs[1].leak[0].from: no VR named \"green\""),
            ("    leak: [{from: blue, prefixes: [198.51.100.0/24]}]\n", "fast", "vrs[1].leak[0].from: a VR cannot import from itself"),
            ("    leak: [{from: red, prefixes: [198.51.100.1/24]}]\n", "fast", "vrs[1].leak[0].prefixes[0]: 198.51.100.1/24 has bits set"),
            ("    leak: [{from: red, prefixes: []}]\n", "fast", "vrs[1].leak[0].prefixes: list at least one prefix"),
            ("    leak: [{from: red}]\n", "fast", "vrs[1].leak[0].prefixes: list at least one prefix"),
            ("    leak: [{from: red, prefixes: [198.51.100.0/24]}]\n", "kernel", "vrs[1].leak[0].from: red is a kernel VR"),
            ("    leak: [{from: red, prefixes: [198.51.100.0/24], via: x}]\n", "fast", "vrs[1].leak[0].via: unknown field"),
        ] {
            let got = parse_config(&two(extra, kind)).expect_err(extra).to_string();
            assert!(got.starts_with(want), "{extra}\nwant {want:?}\n got {got:?}");
        }
    }
}
