//! Extra classifier rules in the configuration: `{udp_dst: 4000}`, `{ethertype: 0x88b5}`,
//! `{ip_dst: 10.9.0.0/16, priority: 20, queue: 1}`, or any field as `{value: V, mask: M}`.
//! A `code: filter` VR's rules also say what becomes of the frames they match: `out: IFACE`
//! (with `mac: NEXT_HOP` to set the destination MAC), `slow: true` or `drop: true`.

use crate::error::ConfigError;
use crate::model::{FilterAction, InterfaceConfig, MatchRule, PortConfig, VrConfig};
use crate::node::{optional, Node};
use crate::values::{mac, prefix};
use core::net::IpAddr;
use pearl_wire::flow_key::{ip_to_u128, ipv4_prefix_mask, ipv6_prefix_mask, mac_to_u128};
use pearl_wire::{Field, FlowKey};
use std::collections::HashMap;
use std::sync::Arc;
use yaml_rust2::Yaml;

/// Priority of configured rules when none is given; the default per-interface rules (frames to
/// the VR's MAC) sit below every configured rule.
pub const DEFAULT_MATCH_PRIORITY: u32 = 100;

const ETHERTYPE_IPV4: u128 = 0x0800;
const ETHERTYPE_IPV6: u128 = 0x86dd;

/// A `code: filter` VR's action keys, which only its rules have.
const ACTION_KEYS: [&str; 4] = ["out", "mac", "slow", "drop"];

const KEYS: &[&str] = &[
    "priority",
    "queue",
    "out",
    "mac",
    "slow",
    "drop",
    "in_port",
    "eth_src",
    "eth_dst",
    "ethertype",
    "vlan",
    "ip_src",
    "ip_dst",
    "ip_proto",
    "l4_src",
    "l4_dst",
    "udp_src",
    "udp_dst",
    "tcp_src",
    "tcp_dst",
    "opaque",
];

/// One rule of a VR whose `interfaces` are given; `filter`: the VR's code option is `filter`,
/// whose rules each need an action.
pub fn parse_match(
    n: Node<'_>,
    ports: &[PortConfig],
    queues: usize,
    interfaces: &[InterfaceConfig],
    filter: bool,
) -> Result<MatchRule, ConfigError> {
    n.only_keys(KEYS)?;
    let action = if filter {
        Some(parse_action(&n, interfaces)?)
    } else {
        if let Some(key) = ACTION_KEYS.iter().find(|k| n.get(k).is_some()) {
            return Err(ConfigError::at(format!("{}.{key}", n.path()), "only the rules of a code: filter VR have actions"));
        }
        None
    };
    let priority = optional(&n, "priority", |n| n.uint(u64::from(u32::MAX)))?.map_or(DEFAULT_MATCH_PRIORITY, |p| p as u32);
    let queue = optional(&n, "queue", |n| n.uint(u64::MAX))?.unwrap_or(0) as usize;
    if queue >= queues {
        return Err(ConfigError::at(format!("{}.queue", n.path()), format!("the VR has {queues} queue(s)")));
    }
    let mut rule = Builder { value: FlowKey::default(), mask: FlowKey::default() };
    let mut any = false;
    for &key in &KEYS[2 + ACTION_KEYS.len()..] {
        let Some(y) = n.get(key) else { continue };
        any = true;
        let child = n.child_path(key);
        let f = child.node(y);
        match key {
            "in_port" => {
                let name = f.str()?;
                let p = ports.iter().position(|p| p.name == name).ok_or_else(|| f.err(format!("unknown port {name:?}")))?;
                rule.exact(&f, Field::InPort, p as u128)?;
            }
            "eth_src" | "eth_dst" => {
                let field = if key == "eth_src" { Field::EthSrc } else { Field::EthDst };
                rule.exact(&f, field, mac_to_u128(mac(f)?))?;
            }
            "ip_src" | "ip_dst" => {
                let field = if key == "ip_src" { Field::IpSrc } else { Field::IpDst };
                let p = prefix(f)?.network();
                let (ethertype, mask) = match p.addr {
                    IpAddr::V4(_) => (ETHERTYPE_IPV4, ipv4_prefix_mask(p.len)),
                    IpAddr::V6(_) => (ETHERTYPE_IPV6, ipv6_prefix_mask(p.len)),
                };
                rule.set(&f, field, ip_to_u128(p.addr), mask)?;
                rule.set(&f, Field::EtherType, ethertype, 0xffff)?;
            }
            "udp_src" | "udp_dst" | "tcp_src" | "tcp_dst" => {
                let field = if key.ends_with("src") { Field::L4Src } else { Field::L4Dst };
                rule.exact(&f, Field::IpProto, if key.starts_with("udp") { 17 } else { 6 })?;
                rule.integer(&f, field)?;
            }
            "ethertype" => rule.integer(&f, Field::EtherType)?,
            "vlan" => rule.integer(&f, Field::VlanId)?,
            "ip_proto" => rule.integer(&f, Field::IpProto)?,
            "l4_src" => rule.integer(&f, Field::L4Src)?,
            "l4_dst" => rule.integer(&f, Field::L4Dst)?,
            _ => rule.integer(&f, Field::Opaque)?,
        }
    }
    if !any {
        return Err(n.err("a match rule needs at least one field"));
    }
    Ok(MatchRule { priority, value: rule.value, mask: rule.mask, queue, action })
}

/// Exactly one of `out: IFACE` (optionally with `mac:`), `slow: true`, `drop: true`.
fn parse_action(n: &Node<'_>, interfaces: &[InterfaceConfig]) -> Result<FilterAction, ConfigError> {
    let flag = |key: &str| optional(n, key, |f| f.bool()).map(|b| b.unwrap_or(false));
    let (slow, drop) = (flag("slow")?, flag("drop")?);
    let out = optional(n, "out", |f| {
        let name = f.str()?;
        interfaces.iter().position(|i| i.name == name).ok_or_else(|| f.err(format!("no interface {name:?} in this VR")))
    })?;
    let next_hop = optional(n, "mac", mac)?;
    if next_hop.is_some() && out.is_none() {
        return Err(ConfigError::at(format!("{}.mac", n.path()), "a next hop's MAC goes with out: IFACE"));
    }
    match (out, slow, drop) {
        (Some(interface), false, false) => Ok(FilterAction::Out { interface, mac: next_hop }),
        (None, true, false) => Ok(FilterAction::Slow),
        (None, false, true) => Ok(FilterAction::Drop),
        (None, false, false) => Err(n.err("a code: filter VR's rule needs an action: out: IFACE, slow: true or drop: true")),
        _ => Err(n.err("a rule has one action: out, slow or drop")),
    }
}

struct Builder {
    value: FlowKey,
    mask: FlowKey,
}

impl Builder {
    /// Sets a field; refuses a second, contradicting constraint on it (e.g. `udp_dst` with
    /// `ip_proto: 6`).
    fn set(&mut self, n: &Node<'_>, field: Field, value: u128, mask: u128) -> Result<(), ConfigError> {
        let width = field.bits();
        let full = if width == 128 { u128::MAX } else { (1u128 << width) - 1 };
        if value & !full != 0 || mask & !full != 0 {
            return Err(n.err(format!("does not fit the {width}-bit {} field", field.name())));
        }
        if value & !mask != 0 {
            return Err(n.err("the value has bits outside its mask"));
        }
        let (old_v, old_m) = (self.value.get(field), self.mask.get(field));
        let common = old_m & mask;
        if old_v & common != value & common {
            return Err(n.err(format!("contradicts another condition on {}", field.name())));
        }
        self.value.set(field, old_v | value);
        self.mask.set(field, old_m | mask);
        Ok(())
    }

    fn exact(&mut self, n: &Node<'_>, field: Field, value: u128) -> Result<(), ConfigError> {
        self.set(n, field, value, u128::MAX >> (128 - field.bits()))
    }

    /// An integer (exact) or `{value: V, mask: M}`.
    fn integer(&mut self, n: &Node<'_>, field: Field) -> Result<(), ConfigError> {
        match n.yaml {
            Yaml::Hash(_) => {
                n.only_keys(&["value", "mask"])?;
                let value = crate::node::required(n, "value", |v| v.uint(u64::MAX))? as u128;
                let mask = crate::node::required(n, "mask", |v| v.uint(u64::MAX))? as u128;
                self.set(n, field, value, mask)
            }
            _ => self.exact(n, field, n.uint(u64::MAX)? as u128),
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
