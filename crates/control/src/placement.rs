//! `placement:` of a VR: which data plane forwards its packets. A fast VR and a kernel VR are
//! the same VR placed differently (the FPGA substrate's fast hardware slots and software
//! routers): the same namespace, TAPs, addresses, daemons and fast-path tables serve both, so a
//! VR moves between them in place (`pearlctl vr migrate`) with its sessions untouched.
//!
//! ```yaml
//! node: {fast_slots: 8}        # at most 8 VRs on the fast path (the seeds' hardware slots)
//! vrs:
//!   - name: red
//!     placement: auto          # fast while slots last, else kernel; or fast, kernel
//! ```
//!
//! `kind: fast` and `kind: kernel` state a placement too; given with `placement:` they must agree.
//! `auto` VRs take the slots (and fast-path bandwidth) the others leave, placed by the FPGA
//! substrate's allocator (`allocator.rs`): at start in document order; at a change, those that
//! run stay where they are unless their bandwidth request changed (then the allocator rebalances
//! greedily), new ones take what is left, and room freed on the fast path is taken by `auto`
//! VRs in the kernel, in document order, moved in place.

use crate::allocator::{Allocator, Engine, Pool};
use crate::at::At;
use crate::error::ConfigError;
use crate::fields::{optional, uint};
use crate::grammar::{NodeSpec, PlacementSpec};
use crate::model::{NodeConfig, Placement, VrConfig, VrKind};
use std::sync::Arc;

/// The `placement` of the VR at `vr`, whose `kind` is given.
pub(crate) fn parse_placement(
    placement: Option<PlacementSpec>,
    vr: At<'_>,
    kind: Option<VrKind>,
) -> Result<Option<Placement>, ConfigError> {
    let placement = placement.map(|p| match p {
        PlacementSpec::Fast => Placement::Fast,
        PlacementSpec::Kernel => Placement::Kernel,
        PlacementSpec::Auto => Placement::Auto,
    });
    let at = || vr.key("placement").to_string();
    match (kind, placement) {
        (Some(k @ (VrKind::Shared | VrKind::Plugin)), Some(_)) => {
            Err(ConfigError::at(at(), format!("a {} VR has no placement (only fast and kernel VRs are placed)", k.name())))
        }
        (Some(k @ (VrKind::Fast | VrKind::Kernel)), Some(p @ (Placement::Fast | Placement::Kernel))) if p.kind() != Some(k) => {
            Err(ConfigError::at(at(), format!("{} contradicts kind: {} (give one of them, or placement: auto)", p.name(), k.name())))
        }
        _ => Ok(placement),
    }
}

/// `node:`: what the node offers VRs.
pub(crate) fn parse_node(node: Option<&NodeSpec>, root: At<'_>) -> Result<NodeConfig, ConfigError> {
    optional(node, root, "node", |n, at| {
        Ok(NodeConfig {
            fast_slots: optional(n.fast_slots.as_ref(), at, "fast_slots", |&s, at| uint(s, 1 << 16, at).map(|v| v as usize))?,
            capacity: optional(n.capacity.as_ref(), at, "capacity", crate::resources::parse_capacity)?.unwrap_or_default(),
            flow_offload: n.flow_offload.unwrap_or(true),
        })
    })
    .map(Option::unwrap_or_default)
}

/// Gives each `auto` VR its data plane (`kind`) from scratch, in document order: the fast path
/// while `fast_slots` last after the VRs placed there by their owners (and the bandwidth
/// `node.capacity` states, if it does); refuses a document that places more VRs on the fast
/// path than it has slots.
pub(crate) fn place(vrs: &mut [Arc<VrConfig>], node: &NodeConfig) -> Result<(), ConfigError> {
    let explicit = vrs.iter().filter(|v| v.kind == VrKind::Fast && v.placement == Placement::Fast).count();
    if let Some(slots) = node.fast_slots.filter(|&s| explicit > s) {
        return Err(ConfigError::at("node.fast_slots", format!("{slots} fast-path slots, but {explicit} VRs are placed on the fast path")));
    }
    let fast_mbps = node.capacity.get("bandwidth_mbps").map_or(f64::INFINITY, |m| m as f64);
    replace_auto(&[], vrs, node.fast_slots, fast_mbps);
    Ok(())
}

/// Places the `auto` VRs of `new` with the FPGA substrate's allocator (`allocator.rs`), each by
/// the bandwidth it asks for (`resources.bandwidth_mbps`, none: 0): VRs placed by their owners
/// take their room first and never move; `auto` VRs of `old` (the node as it runs) stay where
/// they are, a changed bandwidth request rebalanced greedily (which may move other `auto` VRs);
/// new ones go to the fast path while its `fast_slots` and `fast_mbps` last, else to the kernel;
/// then room left on the fast path goes to `auto` VRs in the kernel, in document order.
/// Returns the `auto` VRs that changed data plane, by name.
pub fn replace_auto(old: &[Arc<VrConfig>], new: &mut [Arc<VrConfig>], fast_slots: Option<usize>, fast_mbps: f64) -> Vec<String> {
    // Nothing to place: with thousands of VRs, pinning each in the allocator took longer than
    // the rest of validating a change.
    if new.iter().all(|v| v.placement != Placement::Auto) {
        return Vec::new();
    }
    let mbps = |v: &VrConfig| v.resources.get("bandwidth_mbps").unwrap_or(0) as f64;
    let fast = Pool { mbps: fast_mbps, slots: fast_slots };
    let mut a = Allocator::new(fast, Pool { mbps: f64::INFINITY, slots: None }, Engine::Fast, true);
    let engine = |k: VrKind| if k == VrKind::Fast { Engine::Fast } else { Engine::Kernel };
    for (i, v) in new.iter().enumerate().filter(|(_, v)| v.kind.is_placed() && v.placement != Placement::Auto) {
        a.pin(i as u32, engine(v.kind), mbps(v));
    }
    let was = |v: &VrConfig| old.iter().find(|o| o.name == v.name && o.placement == Placement::Auto && o.kind.is_placed());
    for (i, v) in new.iter().enumerate().filter(|(_, v)| v.placement == Placement::Auto) {
        if let Some(o) = was(v) {
            a.keep(i as u32, engine(o.kind), mbps(o));
        }
    }
    for (i, v) in new.iter().enumerate().filter(|(_, v)| v.placement == Placement::Auto) {
        match was(v) {
            Some(o) if mbps(o) != mbps(v) => {
                // Not granted: it stays where it is (admission has granted the bandwidth).
                a.revise(i as u32, mbps(v));
            }
            Some(_) => {}
            None => {
                if a.add(i as u32, mbps(v)).is_none() {
                    a.keep(i as u32, Engine::Kernel, mbps(v));
                }
            }
        }
    }
    // Room freed on the fast path (a VR gone, a request lowered) goes to the kernel's `auto`
    // VRs, in document order.
    for (i, _) in new.iter().enumerate().filter(|(_, v)| v.placement == Placement::Auto) {
        a.move_if_room(i as u32, Engine::Fast);
    }
    let mut moved = Vec::new();
    for (i, v) in new.iter_mut().enumerate().filter(|(_, v)| v.placement == Placement::Auto) {
        let kind = if a.engine_of(i as u32) == Some(Engine::Fast) { VrKind::Fast } else { VrKind::Kernel };
        if was(v).is_some_and(|o| o.kind != kind) {
            moved.push(v.name.clone());
        }
        if v.kind != kind {
            Arc::make_mut(v).kind = kind;
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use crate::model::{Placement, VrKind};
    use crate::parse_config;

    fn doc(slots: &str, vrs: &[(&str, &str)]) -> String {
        let mut s = format!("{slots}ports: [{{name: p0, interface: veth0}}]\nvrs:\n");
        for (i, (name, extra)) in vrs.iter().enumerate() {
            s += &format!("  - {{name: {name}, {extra} interfaces: [{{name: e0, port: p0, mac: \"02:00:00:00:{i:02x}:00\"}}]}}\n");
        }
        s
    }

    fn kinds(text: &str) -> Vec<(VrKind, Placement)> {
        parse_config(text).unwrap().vrs.iter().map(|v| (v.kind, v.placement)).collect()
    }

    #[test]
    fn kind_alone_places_the_vr_and_auto_takes_the_slots_left_in_order() {
        assert_eq!(
            kinds(&doc("", &[("a", ""), ("b", "kind: kernel,")])),
            [(VrKind::Fast, Placement::Fast), (VrKind::Kernel, Placement::Kernel)]
        );
        let text = doc("node: {fast_slots: 2}\n", &[("a", "placement: auto,"), ("b", "placement: fast,"), ("c", "placement: auto,")]);
        assert_eq!(kinds(&text), [(VrKind::Fast, Placement::Auto), (VrKind::Fast, Placement::Fast), (VrKind::Kernel, Placement::Auto)]);
        let unlimited = doc("", &[("a", "placement: auto,"), ("b", "placement: auto,")]);
        assert_eq!(kinds(&unlimited), [(VrKind::Fast, Placement::Auto), (VrKind::Fast, Placement::Auto)]);
    }

    #[test]
    fn a_grown_request_is_rebalanced_greedily_and_running_vrs_stay_where_they_are_otherwise() {
        let node = "node: {fast_slots: 2, capacity: {bandwidth_mbps: 1000}}\n";
        let auto = |mbps: u32| format!("placement: auto, resources: {{bandwidth_mbps: {mbps}}},");
        let before = parse_config(&doc(node, &[("x", &auto(600)), ("y", &auto(300)), ("z", &auto(300))])).unwrap().vrs;
        let kinds = |vrs: &[std::sync::Arc<crate::VrConfig>]| vrs.iter().map(|v| v.kind).collect::<Vec<_>>();
        assert_eq!(kinds(&before), [VrKind::Fast, VrKind::Fast, VrKind::Kernel]);
        // y asks for 500: the fast path cannot hold it beside x, the kernel can; z then takes
        // the slot y left.
        let mut after = parse_config(&doc(node, &[("x", &auto(600)), ("y", &auto(500)), ("z", &auto(300))])).unwrap().vrs;
        let moved = super::replace_auto(&before, &mut after, Some(2), 1000.0);
        assert_eq!((kinds(&after), moved), (vec![VrKind::Fast, VrKind::Kernel, VrKind::Fast], vec!["y".to_string(), "z".to_string()]));
        // Running, nobody moves when nothing changes.
        let mut again = parse_config(&doc(node, &[("x", &auto(600)), ("y", &auto(500)), ("z", &auto(300))])).unwrap().vrs;
        assert_eq!(kinds(&again), [VrKind::Fast, VrKind::Kernel, VrKind::Fast]);
        assert!(super::replace_auto(&after, &mut again, Some(2), 1000.0).is_empty());
    }

    #[test]
    fn contradictions_and_too_few_slots_are_refused_by_field() {
        let e = parse_config(&doc("", &[("a", "kind: kernel, placement: fast,")])).unwrap_err();
        assert!(e.to_string().contains("vrs[0].placement") && e.to_string().contains("contradicts kind: kernel"), "{e}");
        let e = parse_config(&doc("", &[("a", "kind: shared, placement: auto,")])).unwrap_err();
        assert!(e.to_string().contains("vrs[0].placement"), "{e}");
        let e = parse_config(&doc("", &[("a", "placement: somewhere,")])).unwrap_err();
        assert!(e.to_string().contains("unknown placement \"somewhere\""), "{e}");
        let e = parse_config(&doc("node: {fast_slots: 1}\n", &[("a", ""), ("b", "placement: fast,")])).unwrap_err();
        assert!(e.to_string().contains("node.fast_slots") && e.to_string().contains("2 VRs"), "{e}");
        let e = parse_config(&doc("node: {slots: 1}\n", &[("a", "")])).unwrap_err();
        assert!(e.to_string().contains("node"), "{e}");
        // Agreeing spellings are fine.
        assert_eq!(kinds(&doc("", &[("a", "kind: kernel, placement: kernel,")])), [(VrKind::Kernel, Placement::Kernel)]);
    }
}
