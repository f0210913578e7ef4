//! The classifier a plan carries: which VR each frame belongs to (PEARL's VID rules). Each
//! interface's MAC on its port claims frames for its VR, one pattern rule claims every shared
//! VR's, and each VR adds its `match:` rules and NAT reservations, every VR in a partition of
//! its own with its quota.
//!
//! A change of configuration usually touches one VR of thousands: a classifier of an earlier
//! plan (the data plane's spare, or a copy of the last one) then has only the partitions of the
//! VRs whose rules differ replaced, which at 4,096 VRs is a millisecond or two instead of the
//! ~20 ms of inserting every rule again. Rule
//! ids, which break ties between equal-priority rules, keep their order within a VR (its rules
//! go in together, in order), and equal-priority rules of different VRs may not overlap at all
//! (the classifier refuses them), so the copy answers every frame as a fresh build would.

use crate::plan::MAX_VRS;
use crate::vr::SHARED_VR;
use pearl_classifier::{Classifier, MatchIndex, Rule, Verdict, VrId};
use pearl_control::{shared_mac, Config, ConfigDiff, ConfigError, VrChange, VrConfig, VrKind};
use pearl_wire::flow_key::mac_to_u128;
use pearl_wire::{Field, FlowKey};

/// Priority of the default rule "frames to this interface's MAC on its port belong to its VR";
/// configured match rules (default priority 100) take precedence.
pub const INTERFACE_RULE_PRIORITY: u32 = 10;
/// Priority of the one rule that claims every `shared` VR's frames by the MAC pattern
/// 02:LO:HI:00:00:IF (`shared_mac`); below the interface rules, so an exact MAC always wins.
pub const SHARED_RULE_PRIORITY: u32 = 5;
/// A plugin VR alone on a port claims every frame arriving there (any MAC, broadcasts too), so
/// that a program may bridge, or speak a protocol of its own addressing; below every other rule.
pub const PLUGIN_PORT_RULE_PRIORITY: u32 = 1;
/// The rules that steer traffic back to a VR's reserved NAT ports: above every other rule, so
/// that a reservation holds whatever MAC the outside sends to.
pub const NAT_RULE_PRIORITY: u32 = u32::MAX;

/// Every VR's rules, inserted from scratch.
pub fn build_classifier(config: &Config) -> Result<Classifier, ConfigError> {
    let mut c = Classifier::new();
    if config.vrs.iter().any(|v| v.kind == VrKind::Shared) {
        let mac_mask: u128 = 0xff00_00ff_ff00;
        let mask = FlowKey::default().with(Field::EthDst, mac_mask);
        let value = FlowKey::default().with(Field::EthDst, mac_to_u128(shared_mac(0, 0)));
        let rule = Rule { value, mask, priority: SHARED_RULE_PRIORITY, result: Verdict { vr: SHARED_VR, rule: None, action: 0 } };
        c.insert(rule).map_err(|e| ConfigError::at("vrs", format!("the shared-VR rule: {e}")))?;
    }
    for (v, vr) in config.vrs.iter().enumerate() {
        install(&mut c, config, v, vr)?;
    }
    c.index_interfaces();
    Ok(c)
}

/// `base`, a classifier built for `old`, moved to `config`: the partitions of the VRs `redo`
/// (ids; see `rules_changed`) made again, the rest kept. Where one VR's rules depend on the
/// others' (a plugin VR alone on its port claims all of it; the shared rule exists while a
/// shared VR does), everything is built again.
pub fn update_classifier(base: Classifier, old: &Config, config: &Config, redo: &[u16]) -> Result<Classifier, ConfigError> {
    let depends_on_others = |c: &Config| c.vrs.iter().any(|v| v.kind == VrKind::Plugin);
    let has_shared = |c: &Config| c.vrs.iter().any(|v| v.kind == VrKind::Shared);
    if depends_on_others(old) || depends_on_others(config) || has_shared(old) != has_shared(config) {
        return build_classifier(config);
    }
    let mut c = base;
    let mut redone = vec![false; MAX_VRS];
    // Gone first: a new VR may take the MAC a removed one had.
    for &id in redo {
        c.remove_partition(VrId(id));
        redone[id as usize] = true;
    }
    for (v, vr) in config.vrs.iter().enumerate().filter(|(_, vr)| redone[vr.id as usize]) {
        install(&mut c, config, v, vr)?;
    }
    c.index_interfaces();
    Ok(c)
}

/// The VRs (ids) whose rules may differ across `diff`: gone, new, or changed in what makes
/// rules.
pub fn rules_changed(diff: &ConfigDiff) -> Vec<u16> {
    let differ = |c: &&VrChange| !c.before().zip(c.after()).is_some_and(|(o, n)| same_rules(o, n));
    diff.vrs.iter().filter(differ).map(VrChange::id).collect()
}

/// Whether two configurations of a VR make the same rules.
fn same_rules(a: &VrConfig, b: &VrConfig) -> bool {
    fn claims(v: &VrConfig) -> impl Iterator<Item = (usize, [u8; 6])> + '_ {
        v.interfaces.iter().map(|i| (i.port, i.mac))
    }
    a.kind == b.kind && a.limits.filters == b.limits.filters && a.nat == b.nat && a.matches == b.matches && claims(a).eq(claims(b))
}

/// VR `vr` (`config.vrs[v]`)'s quota and rules, in its own partition.
fn install(c: &mut Classifier, config: &Config, v: usize, vr: &VrConfig) -> Result<(), ConfigError> {
    let id = VrId(vr.id);
    let at = |i: String, e: pearl_classifier::ClassifierError| ConfigError::at(format!("vrs[{v}].{i}"), e.to_string());
    let nat_rules = vr.nat.map_or(0, |n| port_blocks(n.first, n.last).len());
    c.set_quota(id, vr.limits.filters + vr.interfaces.len() + nat_rules).map_err(|e| at("limits.filters".into(), e))?;
    // Shared VRs' interfaces are all covered by the one shared rule.
    let interfaces = if vr.kind == VrKind::Shared { &[][..] } else { &vr.interfaces[..] };
    for (i, iface) in interfaces.iter().enumerate() {
        let mut mask = FlowKey::default().with(Field::InPort, 0xffff).with(Field::EthDst, (1 << 48) - 1);
        let value = FlowKey::default().with(Field::InPort, iface.port as u128).with(Field::EthDst, mac_to_u128(iface.mac));
        let mut priority = INTERFACE_RULE_PRIORITY;
        if vr.kind == VrKind::Plugin && port_is_alone(config, v, iface.port) {
            (mask, priority) = (FlowKey::default().with(Field::InPort, 0xffff), PLUGIN_PORT_RULE_PRIORITY);
        }
        let rule = Rule { value: value.masked(&mask), mask, priority, result: Verdict { vr: id, rule: None, action: 0 } };
        c.insert(rule).map_err(|e| at(format!("interfaces[{i}]"), e))?;
    }
    if let Some(nat) = &vr.nat {
        let port = vr.interfaces[nat.interface].port as u128;
        for (value, mask) in port_blocks(nat.first, nat.last) {
            let rule = Rule {
                value: FlowKey::default()
                    .with(Field::InPort, port)
                    .with(Field::IpDst, u32::from(nat.address).into())
                    .with(Field::L4Dst, value.into()),
                mask: FlowKey::default().with(Field::InPort, 0xffff).with(Field::IpDst, 0xffff_ffff).with(Field::L4Dst, mask.into()),
                priority: NAT_RULE_PRIORITY,
                result: Verdict { vr: id, rule: None, action: 0 },
            };
            c.insert(rule).map_err(|e| at("nat".into(), e))?;
        }
    }
    for (m, rule) in vr.matches.iter().enumerate() {
        let verdict = Verdict { vr: id, rule: rule.action.and_then(|_| MatchIndex::new(m)), action: rule.queue as u32 };
        let r = Rule { value: rule.value, mask: rule.mask, priority: rule.priority, result: verdict };
        c.insert(r).map_err(|e| at(format!("match[{m}]"), e))?;
    }
    Ok(())
}

/// Whether VR `v` is the only VR with an interface on `port`.
fn port_is_alone(config: &Config, v: usize, port: usize) -> bool {
    config.vrs.iter().enumerate().all(|(o, other)| o == v || other.interfaces.iter().all(|i| i.port != port))
}

/// `first..=last` as the fewest (value, mask) blocks of 16-bit ports.
fn port_blocks(first: u16, last: u16) -> Vec<(u16, u16)> {
    let (mut blocks, mut at, last) = (Vec::new(), u32::from(first), u32::from(last));
    while at <= last {
        let mut size = 1u32;
        while at % (size * 2) == 0 && at + size * 2 - 1 <= last && size < 1 << 16 {
            size *= 2;
        }
        blocks.push((at as u16, !(size - 1) as u16));
        at += size;
    }
    blocks
}

#[cfg(test)]
mod tests {
    //! The copy made by `update_classifier` against a fresh build, over random sequences of
    //! configurations of a few VRs whose MACs and rules may collide.

    use super::{build_classifier, rules_changed, update_classifier};
    use pearl_classifier::{Classifier, VrId};
    use pearl_control::{parse_config, Config, ConfigDiff};
    use pearl_wire::flow_key::mac_to_u128;
    use pearl_wire::{Field, FlowKey};
    use proptest::prelude::*;
    use std::sync::Arc;

    /// One VR: present, kind (fast or kernel), which of its two MACs and which port, its match
    /// rule (UDP port, priority). Rules of different VRs may tie, which the classifier refuses.
    type VrSpec = (bool, bool, u8, Option<(u16, u8)>);

    fn config(vrs: &[VrSpec]) -> Option<Config> {
        let mut text = String::from("ports: [{name: p0, interface: pe0}, {name: p1, interface: pe1}]\nvrs:\n");
        for (i, &(present, kernel, mac, rule)) in vrs.iter().enumerate() {
            if !present {
                continue;
            }
            let kind = if kernel { "kernel" } else { "fast" };
            text += &format!(
                "  - {{name: v{i}, id: {}, kind: {kind}, interfaces: [{{name: eth0, port: p{}, mac: '02:00:00:00:0{}:0{}'}}]",
                i + 1,
                mac / 2 % 2,
                i + 1,
                mac % 2
            );
            if let Some((udp, priority)) = rule {
                text += &format!(", match: [{{udp_dst: {}, priority: {}}}]", 4000 + udp % 3, 100 + u32::from(priority % 2) * 100);
            }
            text += "}\n";
        }
        // Rules of two VRs that tie are refused here already.
        parse_config(&text).ok()
    }

    fn rules(c: &Classifier, vr: u16) -> Vec<String> {
        c.partition_rules(VrId(vr)).map(|(_, r)| format!("{r:?}")).collect()
    }

    fn answers(c: &Classifier) -> Vec<Option<u16>> {
        let mut out = Vec::new();
        for port in 0..2u128 {
            for (vr, variant) in (1..=6u8).flat_map(|v| [(v, 0u8), (v, 1)]) {
                for udp in 3999..4003u128 {
                    let key = FlowKey::default()
                        .with(Field::InPort, port)
                        .with(Field::EthDst, mac_to_u128([2, 0, 0, 0, vr, variant]))
                        .with(Field::EtherType, 0x0800)
                        .with(Field::IpProto, 17)
                        .with(Field::L4Dst, udp);
                    out.push(c.lookup(&key).map(|(_, v)| v.vr.0));
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn a_copy_with_changed_vrs_replaced_answers_as_a_fresh_build(
            steps in proptest::collection::vec(
                proptest::collection::vec((any::<bool>(), any::<bool>(), 0u8..4, proptest::option::of((0u16..3, 0u8..2))), 6),
                2..6,
            ),
        ) {
            let mut running: Option<(Arc<Config>, Classifier)> = None;
            for spec in &steps {
                let Some(next) = config(spec).map(Arc::new) else { continue };
                let fresh = build_classifier(&next);
                let Some((old, last)) = &running else {
                    if let Ok(c) = fresh {
                        running = Some((next, c));
                    }
                    continue;
                };
                let copied = update_classifier(last.clone(), old, &next, &rules_changed(&ConfigDiff::between(old, &next)));
                prop_assert_eq!(copied.is_ok(), fresh.is_ok(), "{:?} / {:?}", copied.as_ref().err(), fresh.as_ref().err());
                if let (Ok(copied), Ok(fresh)) = (copied, fresh) {
                    for vr in 1..=6 {
                        prop_assert_eq!(rules(&copied, vr), rules(&fresh, vr));
                    }
                    prop_assert_eq!(answers(&copied), answers(&fresh));
                    running = Some((next, copied));
                }
            }
        }
    }
}
