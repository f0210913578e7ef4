//! The roster of a plan's VRs, what its workers need to know of every VR besides its view: whether it is shared, the
//! ports it is on, its impaired links and its NAT reservation. The control side keeps them
//! from plan to plan and changes only the entries of the VRs a change touches, so that
//! a change among thousands of VRs does not read every VR's configuration again.

use crate::impair::LinkImpairment;
use crate::plan::vr_changes::VrChanges;
use crate::plan::MAX_VRS;
use pearl_control::{Config, NatConfig, VrConfig, VrKind};
use std::fmt;

/// Every list is in VR id order, however the configuration orders its VRs, so that one made
/// from the last and one made from nothing are alike.
#[derive(Clone, PartialEq)]
pub struct VrRoster {
    /// `[vr id]`: a `shared` VR.
    pub shared: Vec<bool>,
    /// `[port]`: the VRs with an interface there (multicast goes to each).
    pub port_vrs: Vec<Vec<u16>>,
    /// Every VR interface's `impair:` that does something, by VR and port.
    pub impairments: Vec<LinkImpairment>,
    /// VRs with `nat:`: (VR id, reservation, the outside interface's port).
    pub nat: Vec<(u16, NatConfig, u16)>,
}

impl VrRoster {
    /// The roster of `config`'s VRs, read from each.
    pub fn of(config: &Config) -> VrRoster {
        let mut roster = VrRoster {
            shared: vec![false; MAX_VRS],
            port_vrs: vec![Vec::new(); config.ports.len()],
            impairments: Vec::new(),
            nat: Vec::new(),
        };
        let mut vrs: Vec<&VrConfig> = config.vrs.iter().map(|v| &**v).collect();
        vrs.sort_unstable_by_key(|v| v.id);
        for vr in vrs {
            roster.add(vr);
        }
        roster
    }

    /// The roster of the configuration `changes` leads to, these being those of the one it is taken from:
    /// the entries of VRs `changes` touches are dropped, those of its changed VRs read again.
    pub fn next(&self, changes: &VrChanges<'_>) -> VrRoster {
        let mut roster = self.clone();
        if changes.is_empty() {
            return roster;
        }
        for list in roster.port_vrs.iter_mut() {
            list.retain(|&vr| !changes.touches(vr));
        }
        roster.impairments.retain(|l| !changes.touches(l.vr));
        roster.nat.retain(|n| !changes.touches(n.0));
        for id in changes.gone() {
            roster.shared[id as usize] = false;
        }
        let mut changed: Vec<&VrConfig> = changes.changed().map(|(_, vr)| &**vr).collect();
        changed.sort_unstable_by_key(|v| v.id);
        for vr in changed {
            roster.insert(vr);
        }
        roster
    }

    /// Appends VR `vr`'s entries: it comes after every VR listed.
    fn add(&mut self, vr: &VrConfig) {
        self.shared[vr.id as usize] = vr.kind == VrKind::Shared;
        for (p, list) in self.port_vrs.iter_mut().enumerate() {
            if vr.interfaces.iter().any(|i| i.port == p) {
                list.push(vr.id);
            }
        }
        self.impairments.extend(impairments(vr));
        self.nat.extend(nat(vr));
    }

    /// Puts VR `vr`'s entries in their places by id; none of it is listed.
    fn insert(&mut self, vr: &VrConfig) {
        self.shared[vr.id as usize] = vr.kind == VrKind::Shared;
        for (p, list) in self.port_vrs.iter_mut().enumerate() {
            if vr.interfaces.iter().any(|i| i.port == p) {
                list.insert(list.partition_point(|&other| other < vr.id), vr.id);
            }
        }
        let at = self.impairments.partition_point(|l| l.vr < vr.id);
        self.impairments.splice(at..at, impairments(vr));
        let at = self.nat.partition_point(|n| n.0 < vr.id);
        self.nat.splice(at..at, nat(vr));
    }
}

/// The shared VRs by id, not a flag for every possible id.
impl fmt::Debug for VrRoster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shared: Vec<usize> = (0..self.shared.len()).filter(|&id| self.shared[id]).collect();
        f.debug_struct("VrRoster")
            .field("shared", &shared)
            .field("port_vrs", &self.port_vrs)
            .field("impairments", &self.impairments)
            .field("nat", &self.nat)
            .finish()
    }
}

/// VR `vr`'s interfaces' `impair:` that does something, in interface order.
fn impairments(vr: &VrConfig) -> impl Iterator<Item = LinkImpairment> + '_ {
    vr.interfaces.iter().map(|i| LinkImpairment { port: i.port as u16, vr: vr.id, params: i.impair }).filter(|l| !l.params.is_none())
}

fn nat(vr: &VrConfig) -> Option<(u16, NatConfig, u16)> {
    vr.nat.map(|n| (vr.id, n, vr.interfaces[n.interface].port as u16))
}
