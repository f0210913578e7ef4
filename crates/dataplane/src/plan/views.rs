//! The VRs' views of a plan, made from the last plan's: a view is made again only for a VR
//! whose configuration or program changed, or whose imports (`leak:`) may name another VR
//! differently now; every other VR keeps its view, program and all. The views are one array
//! that every worker shares, so a plan costs one copy of it, not one per worker.

use crate::leak::LeakTable;
use crate::plan::vr_changes::VrChanges;
use crate::port::DEFAULT_MTU;
use crate::program::VrProgram;
use crate::vr::links::{VrLink, VrLinks};
use crate::vr::VrView;
use pearl_control::{Config, ConfigError};
use pearl_tables::VrTables;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// What a view is made of besides the VR's configuration.
pub struct ViewSources<'a> {
    pub tables: &'a BTreeMap<u16, Arc<Mutex<VrTables>>>,
    /// `[port]`: the MTU of the port's interface.
    pub port_mtus: &'a [u32],
    /// VR id → the program attached from outside, in place of the configured one.
    pub programs: &'a HashMap<u16, Arc<dyn VrProgram>>,
    /// Whether the node offloads flows at all.
    pub offload: bool,
}

/// The views (`[vr id]`) of `config`, `last` being those of the configuration `changes` is
/// taken from; `reprogrammed`: VRs whose attached program changed since. Refused if a VR made
/// again has an MTU above its port's.
pub fn next_views(
    last: &[Option<VrView>],
    config: &Config,
    changes: &VrChanges<'_>,
    reprogrammed: &[u16],
    sources: &ViewSources<'_>,
) -> Result<Arc<[Option<VrView>]>, ConfigError> {
    let mut fresh = Vec::new();
    for v in remade(config, changes, reprogrammed) {
        let vr = &config.vrs[v];
        let links = vr_links(config, v, sources.port_mtus)?;
        let leaks = Arc::new(LeakTable::of(config, v));
        let mut view = VrView::new(&sources.tables[&vr.id].lock().expect("VR tables"), vr, links, leaks);
        if let Some(program) = sources.programs.get(&vr.id) {
            view.program = Arc::clone(program);
        }
        // The kernel forwards a flow as the port's interface MTU allows: only where the
        // VR's MTUs are its ports' own.
        view.offload = sources.offload
            && !sources.programs.contains_key(&vr.id)
            && crate::offload::vr_may_offload(vr)
            && vr.interfaces.iter().all(|i| view.mtu(i.port as u16) == sources.port_mtus[i.port]);
        fresh.push((vr.id, view));
    }
    // Made in place, one allocation, the few new views merged in by id rather than looked up
    // for each of the thousands of ids: a VR touched and not made again is gone.
    fresh.sort_unstable_by_key(|(id, _)| std::cmp::Reverse(*id));
    Ok((0..last.len())
        .map(|id| match fresh.last() {
            Some((next, _)) if usize::from(*next) == id => fresh.pop().map(|(_, view)| view),
            _ => last[id].clone().filter(|_| !changes.touches(id as u16)),
        })
        .collect())
}

/// The VRs (indices into `config.vrs`) whose views are made again: those changed or
/// reprogrammed, and, after any change at all, those importing prefixes, since their sources
/// are named and a name may have moved to another VR (leaks are few; which VRs they name, not).
pub fn remade<'a>(config: &'a Config, changes: &'a VrChanges<'a>, reprogrammed: &'a [u16]) -> impl Iterator<Item = usize> + 'a {
    let any_change = !changes.is_empty();
    config
        .vrs
        .iter()
        .enumerate()
        .filter(move |(_, vr)| changes.touches(vr.id) || reprogrammed.contains(&vr.id) || (any_change && !vr.leak.is_empty()))
        .map(|(v, _)| v)
}

/// VR `v`'s MTU and uRPF mode by port (`VrView::links`); an `mtu:` above its port
/// interface's MTU is refused, naming the field.
fn vr_links(config: &Config, v: usize, port_mtus: &[u32]) -> Result<VrLinks, ConfigError> {
    let vr = &config.vrs[v];
    let mut by_port = vec![VrLink::default(); config.ports.len()];
    for (i, iface) in vr.interfaces.iter().enumerate() {
        let port_mtu = port_mtus.get(iface.port).copied().unwrap_or(DEFAULT_MTU);
        by_port[iface.port].mtu = match iface.mtu {
            Some(m) if m > port_mtu => {
                let (interface, port) = (&config.ports[iface.port].interface, &config.ports[iface.port].name);
                return Err(ConfigError::at(
                    format!("vrs[{v}].interfaces[{i}].mtu"),
                    format!("{m} is above the MTU of {interface} ({port_mtu}), port {port}'s interface"),
                ));
            }
            Some(m) => m,
            None => port_mtu,
        };
        by_port[iface.port].urpf = iface.urpf;
    }
    Ok(VrLinks::new(by_port))
}
