//! What a node holds while it runs (its VRs' namespaces, slow path, route mirrors and programs)
//! and the steps that make and remove the VRs' parts, all or none.

use crate::fresh_netns::{self, FreshNetns};
use crate::holder::Holder;
use crate::in_parallel::in_parallel;
use crate::owned::Owned;
use crate::plugins::Plugins;
use crate::route_hold::hold_routes_while_daemons_restart;
use crate::slowpath::SlowPath;
use crate::spare_spaces::Spares;
use crate::vmm::VrSpace;
use pearl_control::{Config, VrConfig};
use pearl_dataplane::dataplane::{vr_interface_mtu, Dataplane};
use pearl_dataplane::slowpath::NetioInterface;
use pearl_routed::{Routed, RoutedInterface};
use pearl_tables::VrTables;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub(super) struct State {
    pub(super) holder: Holder,
    /// The namespaces PEARL made: the only ones it takes, changes or removes.
    pub(super) owned: Owned,
    /// Namespaces made ahead for VRs created at run time; none while the VRs of the
    /// configuration are made at start, which take far more than a few.
    pub(super) spares: Option<Spares<FreshNetns>>,
    /// Shared with the readers' view: a change replaces it whole, nobody edits it.
    pub(super) config: Arc<Config>,
    pub(super) spaces: BTreeMap<u16, VrSpace>,
    pub(super) slow_path: SlowPath,
    /// VR id → the mirror of its namespace's routes into its FIB (fast VRs).
    pub(super) routed: BTreeMap<u16, Routed>,
    /// `[port]`: opened to rotate its frames over the workers (`round_robin`), which its fanout
    /// group keeps until pearld restarts; the other policies are programs a change replaces.
    pub(super) rotating: Vec<bool>,
    /// Plugin VRs' programs, as attached to the data plane.
    pub(super) plugins: Plugins,
}

/// How many VR namespaces wait made ahead (`fresh_netns.rs`). The API creates VRs one per call,
/// and a namespace is made again in less time than a call takes, so one would do; the second
/// serves a change that adds two VRs. Changes that add more make the rest the slow way, in
/// parallel; each waiting namespace costs kernel memory and lengthens the kernel's lookups that
/// go through every namespace, so the pool stays small.
const SPARE_NAMESPACES: usize = 2;

/// The pool of namespaces made ahead, if /run/netns can be readied for naming them; else each
/// VR's is made when it is created.
pub(super) fn spare_namespaces() -> Option<Spares<FreshNetns>> {
    let started = fresh_netns::prepare_names().and_then(|()| Spares::start(SPARE_NAMESPACES, "VR namespaces", FreshNetns::make));
    started.map_err(|e| tracing::warn!("namespaces made ahead of need: {e}; each VR's is made when it is created")).ok()
}

/// Makes the namespaces and TAPs of `vrs`, parking the TAPs for the slow path; all or none.
pub(super) fn create_spaces(state: &mut State, vrs: &[Arc<VrConfig>]) -> Result<(), String> {
    let (config, holder, owned, spares) = (&state.config, &state.holder, &state.owned, state.spares.as_ref());
    let create = |vr: &Arc<VrConfig>| {
        let mtus: Vec<u32> = vr.interfaces.iter().map(|i| vr_interface_mtu(config, i)).collect();
        VrSpace::create(vr, &mtus, holder, owned, spares)
    };
    // The first alone: without spares, its namespace makes /run/netns a shared mount point
    // (`fresh_netns::prepare_names`), which two at once could each do.
    let split = vrs.len().min(1);
    let mut made = in_parallel(vrs[..split].iter().collect(), create);
    made.extend(in_parallel(vrs[split..].iter().collect(), create));
    let mut first_error = None;
    for (vr, m) in vrs.iter().zip(made) {
        match m {
            Ok((space, taps)) => {
                let interfaces = taps.into_iter().zip(&vr.interfaces).map(|(tap, i)| NetioInterface { port: i.port as u16, tap }).collect();
                state.slow_path.park(vr.id, interfaces);
                state.spaces.insert(vr.id, space);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        None => Ok(()),
        Some(e) => {
            // Adopted VRs ran before this start: a start that fails leaves them so
            // (`abandon_start`).
            let made: Vec<u16> = vrs.iter().map(|v| v.id).filter(|id| !state.spaces.get(id).is_some_and(VrSpace::adopted)).collect();
            remove_spaces(state, made.into_iter());
            Err(e)
        }
    }
}

/// Starts mirroring the kernel routes of each VR of `vrs` into its tables: a kernel or shared
/// VR's too, whose frames to unresolved neighbours they tell apart (`kernel_glean.rs`), and so
/// that moving a kernel VR to the fast path finds them in sync; a plugin's, which it reads
/// (`route_v4`).
pub(super) fn start_routed(state: &mut State, dataplane: &Dataplane, vrs: &[Arc<VrConfig>]) -> Result<(), String> {
    let layout = dataplane.layout();
    let fast: Vec<(&Arc<VrConfig>, &Arc<Mutex<VrTables>>)> = vrs.iter().filter_map(|v| Some((v, layout.tables.get(&v.id)?))).collect();
    // Each first sync is mostly waiting (entering the namespace, the kernel's dump): many overlap.
    let started = in_parallel(fast, |(vr, tables)| {
        let interfaces = vr.interfaces.iter().map(|i| RoutedInterface { name: i.name.clone(), port: i.port as u16, mac: i.mac }).collect();
        (vr, Routed::start(&vr.name, interfaces, Arc::clone(tables)).map_err(|e| format!("vrs {:?}: routed: {e}", vr.name)))
    });
    let mut first_error = None;
    for (vr, r) in started {
        match r {
            Ok(r) => {
                if let Some(daemons) = state.spaces.get(&vr.id).and_then(|s| s.daemons()) {
                    hold_routes_while_daemons_restart(daemons, r.hold_switch());
                }
                state.routed.insert(vr.id, r);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Undoes a start that failed: removes the VRs it made, and leaves those it adopted running as
/// they were (live restore), with the TAP holder while any VR of PEARL's runs.
pub(super) fn abandon_start(mut state: State) {
    for (_, r) in std::mem::take(&mut state.routed) {
        r.stop();
    }
    let adopted: Vec<u16> = state.spaces.iter().filter(|(_, s)| s.adopted()).map(|(id, _)| *id).collect();
    for id in adopted {
        drop(state.slow_path.forget(id));
        if let Some(space) = state.spaces.remove(&id) {
            space.leave();
        }
    }
    let made: Vec<u16> = state.spaces.keys().copied().collect();
    remove_spaces(&mut state, made.into_iter());
    quit_unless_vrs_run(state.holder, &state.owned);
}

/// Ends the TAP holder unless VRs PEARL made still run, whose TAPs it keeps.
pub(super) fn quit_unless_vrs_run(holder: Holder, owned: &Owned) {
    if owned.live().is_empty() {
        holder.quit();
    }
}

pub(super) fn remove_spaces(state: &mut State, ids: impl Iterator<Item = u16>) {
    let mut spaces = Vec::new();
    for id in ids {
        if let Some(r) = state.routed.remove(&id) {
            r.stop();
        }
        let taps = state.slow_path.forget(id);
        spaces.push((state.spaces.remove(&id), taps));
    }
    let (holder, owned) = (&state.holder, &state.owned);
    // Closing a TAP's last descriptor removes its device and waits for RCU callbacks to finish
    // (`rcu_barrier`, tens of ms): pearld keeps the last descriptors, closed by many threads
    // at once, whose waits the kernel shares, rather than one after another by the holder.
    in_parallel(spaces, |(space, taps)| {
        if let Some(s) = space {
            s.remove(holder, owned);
        }
        drop(taps);
    });
}
