//! Extra classifier rules in the configuration: `{udp_dst: 4000}`, `{ethertype: 0x88b5}`,
//! `{ip_dst: 10.9.0.0/16, priority: 20, queue: 1}`, or any field as `{value: V, mask: M}`.
//! A `code: filter` VR's rules also say what becomes of the frames they match: `out: IFACE`
//! (with `mac: NEXT_HOP` to set the destination MAC), `slow: true` or `drop: true`.

use crate::at::At;
use crate::error::ConfigError;
use crate::fields::{optional, uint};
use crate::grammar::{MaskedInt, MatchSpec};
use crate::model::{FilterAction, InterfaceConfig, MatchRule, PortConfig, VrConfig};
use crate::values::{mac, prefix};
use core::net::IpAddr;
use pearl_wire::flow_key::{ip_to_u128, ipv4_prefix_mask, ipv6_prefix_mask, mac_to_u128};
use pearl_wire::{Field, FlowKey};
use std::collections::HashMap;
use std::sync::Arc;

/// Priority of configured rules when none is given; the default per-interface rules (frames to
/// the VR's MAC) sit below every configured rule.
pub const DEFAULT_MATCH_PRIORITY: u32 = 100;

const ETHERTYPE_IPV4: u128 = 0x0800;
const ETHERTYPE_IPV6: u128 = 0x86dd;

/// The rule `m` at `at` of a VR whose `interfaces` are given; `filter`: the VR's code option is
/// `filter`, whose rules each need an action.
pub fn parse_match(
    m: &MatchSpec,
    at: At<'_>,
    ports: &[PortConfig],
    queues: usize,
    interfaces: &[InterfaceConfig],
    filter: bool,
) -> Result<MatchRule, ConfigError> {
    let action = if filter {
        Some(parse_action(m, at, interfaces)?)
    } else {
        let actions = [("out", m.out.is_some()), ("mac", m.mac.is_some()), ("slow", m.slow.is_some()), ("drop", m.drop.is_some())];
        if let Some((key, _)) = actions.iter().find(|(_, given)| *given) {
            return Err(at.key(key).err("only the rules of a code: filter VR have actions"));
        }
        None
    };
    let priority = optional(m.priority.as_ref(), at, "priority", |&p, at| uint(p, u64::from(u32::MAX), at))?
        .map_or(DEFAULT_MATCH_PRIORITY, |p| p as u32);
    let queue = optional(m.queue.as_ref(), at, "queue", |&q, at| uint(q, u64::MAX, at))?.unwrap_or(0) as usize;
    if queue >= queues {
        return Err(at.key("queue").err(format!("the VR has {queues} queue(s)")));
    }
    let mut rule = Builder { value: FlowKey::default(), mask: FlowKey::default() };
    let mut any = false;
    if let Some(name) = &m.in_port {
        let f = at.key("in_port");
        let p = ports.iter().position(|p| &p.name == name).ok_or_else(|| f.err(format!("unknown port {name:?}")))?;
        rule.exact(f, Field::InPort, p as u128)?;
        any = true;
    }
    for (key, field, value) in [("eth_src", Field::EthSrc, &m.eth_src), ("eth_dst", Field::EthDst, &m.eth_dst)] {
        let Some(value) = value else { continue };
        let f = at.key(key);
        rule.exact(f, field, mac_to_u128(mac(value, f)?))?;
        any = true;
    }
    let integers = [("ethertype", Field::EtherType, &m.ethertype), ("vlan", Field::VlanId, &m.vlan)];
    for (key, field, value) in integers {
        let Some(value) = value else { continue };
        rule.integer(at.key(key), field, value)?;
        any = true;
    }
    for (key, field, value) in [("ip_src", Field::IpSrc, &m.ip_src), ("ip_dst", Field::IpDst, &m.ip_dst)] {
        let Some(value) = value else { continue };
        let f = at.key(key);
        let p = prefix(value, f)?.network();
        let (ethertype, mask) = match p.addr {
            IpAddr::V4(_) => (ETHERTYPE_IPV4, ipv4_prefix_mask(p.len)),
            IpAddr::V6(_) => (ETHERTYPE_IPV6, ipv6_prefix_mask(p.len)),
        };
        rule.set(f, field, ip_to_u128(p.addr), mask)?;
        rule.set(f, Field::EtherType, ethertype, 0xffff)?;
        any = true;
    }
    let integers = [("ip_proto", Field::IpProto, &m.ip_proto), ("l4_src", Field::L4Src, &m.l4_src), ("l4_dst", Field::L4Dst, &m.l4_dst)];
    for (key, field, value) in integers {
        let Some(value) = value else { continue };
        rule.integer(at.key(key), field, value)?;
        any = true;
    }
    let ports = [
        ("udp_src", 17, Field::L4Src, &m.udp_src),
        ("udp_dst", 17, Field::L4Dst, &m.udp_dst),
        ("tcp_src", 6, Field::L4Src, &m.tcp_src),
        ("tcp_dst", 6, Field::L4Dst, &m.tcp_dst),
    ];
    for (key, proto, field, value) in ports {
        let Some(value) = value else { continue };
        let f = at.key(key);
        rule.exact(f, Field::IpProto, proto)?;
        rule.integer(f, field, value)?;
        any = true;
    }
    if let Some(value) = &m.opaque {
        rule.integer(at.key("opaque"), Field::Opaque, value)?;
        any = true;
    }
    if !any {
        return Err(at.err("a match rule needs at least one field"));
    }
    Ok(MatchRule { priority, value: rule.value, mask: rule.mask, queue, action })
}

/// A rule's conditions alone, as the value and mask a frame's flow key is held to (a packet
/// trace's filter): `in_port` names one of `ports`; priority, queue and actions are refused.
/// Errors name the field as `match.FIELD`.
pub fn match_key(m: &MatchSpec, ports: &[PortConfig]) -> Result<(FlowKey, FlowKey), ConfigError> {
    let root = At::Root;
    let at = root.key("match");
    for (key, given) in [("priority", m.priority.is_some()), ("queue", m.queue.is_some())] {
        if given {
            return Err(at.key(key).err("a filter has conditions only"));
        }
    }
    let r = parse_match(m, at, ports, 1, &[], false)?;
    Ok((r.value, r.mask))
}

/// Exactly one of `out: IFACE` (optionally with `mac:`), `slow: true`, `drop: true`.
fn parse_action(m: &MatchSpec, at: At<'_>, interfaces: &[InterfaceConfig]) -> Result<FilterAction, ConfigError> {
    let (slow, drop) = (m.slow.unwrap_or(false), m.drop.unwrap_or(false));
    let out = optional(m.out.as_deref(), at, "out", |name, at| {
        interfaces.iter().position(|i| i.name == name).ok_or_else(|| at.err(format!("no interface {name:?} in this VR")))
    })?;
    let next_hop = optional(m.mac.as_deref(), at, "mac", mac)?;
    if next_hop.is_some() && out.is_none() {
        return Err(at.key("mac").err("a next hop's MAC goes with out: IFACE"));
    }
    match (out, slow, drop) {
        (Some(interface), false, false) => Ok(FilterAction::Out { interface, mac: next_hop }),
        (None, true, false) => Ok(FilterAction::Slow),
        (None, false, true) => Ok(FilterAction::Drop),
        (None, false, false) => Err(at.err("a code: filter VR's rule needs an action: out: IFACE, slow: true or drop: true")),
        _ => Err(at.err("a rule has one action: out, slow or drop")),
    }
}

struct Builder {
    value: FlowKey,
    mask: FlowKey,
}

impl Builder {
    /// Sets a field; refuses a second, contradicting constraint on it (e.g. `udp_dst` with
    /// `ip_proto: 6`).
    fn set(&mut self, at: At<'_>, field: Field, value: u128, mask: u128) -> Result<(), ConfigError> {
        let width = field.bits();
        let full = if width == 128 { u128::MAX } else { (1u128 << width) - 1 };
        if value & !full != 0 || mask & !full != 0 {
            return Err(at.err(format!("does not fit the {width}-bit {} field", field.name())));
        }
        if value & !mask != 0 {
            return Err(at.err("the value has bits outside its mask"));
        }
        let (old_v, old_m) = (self.value.get(field), self.mask.get(field));
        let common = old_m & mask;
        if old_v & common != value & common {
            return Err(at.err(format!("contradicts another condition on {}", field.name())));
        }
        self.value.set(field, old_v | value);
        self.mask.set(field, old_m | mask);
        Ok(())
    }

    fn exact(&mut self, at: At<'_>, field: Field, value: u128) -> Result<(), ConfigError> {
        self.set(at, field, value, u128::MAX >> (128 - field.bits()))
    }

    /// An integer (exact) or `{value: V, mask: M}`.
    fn integer(&mut self, at: At<'_>, field: Field, v: &MaskedInt) -> Result<(), ConfigError> {
        match *v {
            MaskedInt::Masked(m) => {
                let value = uint(m.value, u64::MAX, at.key("value"))? as u128;
                let mask = uint(m.mask, u64::MAX, at.key("mask"))? as u128;
                self.set(at, field, value, mask)
            }
            MaskedInt::Exact(v) => self.exact(at, field, uint(v, u64::MAX, at)? as u128),
        }
    }
}

/// Whether some frame matches both rules.
pub(crate) fn overlap(a: &MatchRule, b: &MatchRule) -> bool {
    (0..FlowKey::WORDS).all(|w| (a.value.words[w] ^ b.value.words[w]) & a.mask.words[w] & b.mask.words[w] == 0)
}

/// Two VRs' rules at the same priority that some frame matches both of would make the winner
/// depend on installation order (TCAM ambiguity): refused.
pub fn refuse_ambiguous(vrs: &[Arc<VrConfig>]) -> Result<(), ConfigError> {
    // Only rules at one priority can be ambiguous, and most VRs have no rules: pairs are
    // formed within each priority's rules, not over every pair of VRs.
    let mut by_priority: HashMap<u32, Vec<(usize, usize, &MatchRule)>> = HashMap::new();
    for (v, vr) in vrs.iter().enumerate() {
        for (r, rule) in vr.matches.iter().enumerate() {
            by_priority.entry(rule.priority).or_default().push((v, r, rule));
        }
    }
    let mut first: Option<(usize, usize, usize, usize, u32)> = None;
    for rules in by_priority.values() {
        for (k, &(i, ri, ra)) in rules.iter().enumerate() {
            for &(j, rj, rb) in &rules[k + 1..] {
                // The pair reported is the one a scan in document order meets first.
                if i != j && overlap(ra, rb) && first.is_none_or(|f| (i, j, ri, rj) < (f.0, f.1, f.2, f.3)) {
                    first = Some((i, j, ri, rj, ra.priority));
                }
            }
        }
    }
    match first {
        None => Ok(()),
        Some((i, j, ri, rj, priority)) => Err(ConfigError::at(
            format!("vrs[{j}].match[{rj}]"),
            format!(
                "overlaps vrs[{i}].match[{ri}] at the same priority {priority}: which VR gets a frame \
                 matching both would be arbitrary; give one a different priority"
            ),
        )),
    }
}
