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
//! `auto` VRs take the slots the others leave, in document order, at every change: a slot freed
//! moves the first `auto` VR placed in the kernel to the fast path, in place.

use crate::error::ConfigError;
use crate::model::{NodeConfig, Placement, VrConfig, VrKind};
use crate::node::{optional, Node};

pub(crate) fn parse_placement(n: &Node<'_>, kind: Option<VrKind>) -> Result<Option<Placement>, ConfigError> {
    let placement = optional(n, "placement", |p| match p.str()? {
        "fast" => Ok(Placement::Fast),
        "kernel" => Ok(Placement::Kernel),
        "auto" => Ok(Placement::Auto),
        other => Err(p.err(format!("unknown placement {other:?} (fast, kernel, auto)"))),
    })?;
    let at = || format!("{}.placement", n.path());
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
pub(crate) fn parse_node(root: &Node<'_>) -> Result<NodeConfig, ConfigError> {
    optional(root, "node", |n| {
        n.only_keys(&["fast_slots", "capacity"])?;
        Ok(NodeConfig {
            fast_slots: optional(&n, "fast_slots", |s| s.uint(1 << 16).map(|v| v as usize))?,
            capacity: optional(&n, "capacity", crate::resources::parse_capacity)?.unwrap_or_default(),
        })
    })
    .map(Option::unwrap_or_default)
}

/// Gives each `auto` VR its data plane (`kind`): the fast path while `fast_slots` last after
/// the VRs placed there explicitly, in document order; refuses a document that places more VRs
/// on the fast path than it has slots.
pub(crate) fn place(vrs: &mut [VrConfig], fast_slots: Option<usize>) -> Result<(), ConfigError> {
    let explicit = vrs.iter().filter(|v| v.kind == VrKind::Fast && v.placement == Placement::Fast).count();
    let slots = fast_slots.unwrap_or(usize::MAX);
    if explicit > slots {
        return Err(ConfigError::at("node.fast_slots", format!("{slots} fast-path slots, but {explicit} VRs are placed on the fast path")));
    }
    let mut free = slots - explicit;
    for vr in vrs.iter_mut().filter(|v| v.placement == Placement::Auto) {
        vr.kind = if free > 0 {
            free -= 1;
            VrKind::Fast
        } else {
            VrKind::Kernel
        };
    }
    Ok(())
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
