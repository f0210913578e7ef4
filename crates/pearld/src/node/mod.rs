//! A running PEARL node: the VRs' namespaces, the data plane, and the slow path between them.
//! Started whole or not at all, changed at run time one validated configuration at a time (a
//! refused change leaves everything as it was), taken down in the reverse order.

mod state;
mod view;

use crate::adoption::{refuse_foreign_namespaces, remove_leftovers};
use crate::desired::{ChangeError, Desired, Edit, Undo};
use crate::dropper::drop_later;
use crate::holder::Holder;
use crate::kept_offload::{offload_key, release_offload_links};
use crate::kernel_drops::{Drops, KernelDrops, Wanted};
use crate::owned::Owned;
use crate::plugins::Plugins;
use crate::ports;
use crate::route_hold::hold_routes_while_daemons_restart;
use crate::slowpath::SlowPath;
use crate::stopwatch::Stopwatch;
use pearl_control::{Access, Config, ConfigDiff, VrChange, VrConfig};
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::slowpath::NetioCounters;
use pearl_plugin::PluginTables;
use pearl_routed::{RoutedStats, StatsReader};
use pearl_vrproc::{DaemonStatus, DaemonStatusReader};
use state::{abandon_start, create_spaces, quit_unless_vrs_run, remove_spaces, spare_namespaces, start_routed, State};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use view::NodeView;

pub struct Node {
    pub dataplane: Dataplane,
    state: Mutex<State>,
    desired: Mutex<Desired>,
    /// Who holds which token, as the desired state says: read by every API call, so kept
    /// apart from the desired state, whose lock a change holds while it runs.
    access: Mutex<Arc<Access>>,
    /// What readers (stats, metrics, listings) need of `state`, published after every change:
    /// a change holds `state` while it runs, and they must not wait for it.
    view: Mutex<Arc<NodeView>>,
    kernel_drops: KernelDrops,
    /// What the machine offers VRs, measured at start (`capacity.rs`).
    measured: [u64; 8],
}

impl Node {
    /// Starts from `desired`'s document (already validated into `config`).
    pub fn start(config: &Config, mut desired: Desired, holder: Holder, owned: Owned) -> Result<Node, String> {
        let measured = crate::capacity::measure(config);
        let admitted = pearl_control::admit(&config.vrs, &[], &crate::capacity::of(config, &measured)).map_err(|e| e.to_string());
        if let Err(e) = admitted.and_then(|()| refuse_foreign_namespaces(&owned, &config.vrs, &[]).map_err(|e| e.to_string())) {
            quit_unless_vrs_run(holder, &owned);
            return Err(e);
        }
        remove_leftovers(config, &holder, &owned);
        let mut state = State {
            holder,
            owned,
            spares: None,
            config: Arc::new(config.without_vrs()),
            spaces: BTreeMap::new(),
            slow_path: SlowPath::default(),
            routed: BTreeMap::new(),
            rotating: (0..config.ports.len()).map(|p| rotates(config, p)).collect(),
            plugins: Plugins::default(),
        };
        state.plugins = match state.plugins.prepare(config) {
            Ok(p) => p,
            Err(e) => {
                abandon_start(state);
                return Err(e.to_string());
            }
        };
        let started = std::time::Instant::now();
        if let Err(e) = create_spaces(&mut state, &config.vrs) {
            abandon_start(state);
            return Err(e);
        }
        let spaces_made = started.elapsed();
        state.spares = spare_namespaces();
        // Ports change only by pearld starting again (`shutdown::restart`): a port reopened
        // after its interface came back is opened as this start's configuration says.
        let port_config = config.clone();
        let reopen = move |p, w, pool: &mut _| ports::open(&port_config, p, w, pool);
        let (dataplane, slow_start) = match Dataplane::start_reopening(config, state.plugins.programs(), reopen) {
            Ok(d) => d,
            Err(e) => {
                abandon_start(state);
                return Err(e.to_string());
            }
        };
        if let Err(e) = state.slow_path.start(slow_start) {
            dataplane.stop();
            state.slow_path.stop();
            abandon_start(state);
            return Err(format!("starting the slow path: {e}"));
        }
        let dataplane_up = started.elapsed();
        if let Err(e) = start_routed(&mut state, &dataplane, &config.vrs) {
            state.slow_path.stop();
            dataplane.stop();
            abandon_start(state);
            return Err(e);
        }
        tracing::info!(
            "{} VR namespace(s) made in {:.1} s, the data plane and slow path up after {:.1} s, routes mirrored after {:.1} s",
            config.vrs.len(),
            spaces_made.as_secs_f64(),
            dataplane_up.as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
        if let Some(spares) = &state.spares {
            spares.wait_full(Duration::from_secs(5));
        }
        // The data plane's own: each change is taken from it (`Dataplane::update`).
        state.config = Arc::clone(&dataplane.layout().config);
        desired.keep_index(&state.config);
        if let Err(e) = desired.store.save(&desired.doc) {
            tracing::warn!("the desired state cannot be stored, runtime changes will not survive a restart: {e}");
        }
        release_offload_links(&state.holder, config);
        let access = Mutex::new(Arc::new(Access::from_document(&desired.doc)));
        let view = Mutex::new(Arc::new(NodeView::of(&state)));
        Ok(Node {
            dataplane,
            state: Mutex::new(state),
            desired: Mutex::new(desired),
            access,
            view,
            kernel_drops: KernelDrops::default(),
            measured,
        })
    }

    /// The desired state's document (the configuration plus runtime changes).
    pub fn document(&self) -> Arc<serde_json::Value> {
        Arc::clone(&held(&self.desired).doc)
    }

    /// Where the document's relative file names are resolved.
    pub fn base_dir(&self) -> std::path::PathBuf {
        held(&self.desired).base_dir.clone()
    }

    /// The API's tokens as the desired state has them; never waits for a change.
    pub fn access(&self) -> Arc<Access> {
        Arc::clone(&held(&self.access))
    }

    /// Makes a runtime change: `edit` is made to the document; the result is validated whole,
    /// stored, then applied. Refused, with nothing changed, at the first problem.
    pub fn change(&self, edit: Edit<'_>) -> Result<Arc<serde_json::Value>, ChangeError> {
        self.change_reloading(None, edit)
    }

    /// Like `change`, and VR `reload`'s FRR also restarts if its configuration file now holds
    /// other text than the daemons run with: setting a VR's control plane again is how an
    /// edited file is applied, while other changes leave a file being edited alone.
    pub fn change_reloading(&self, reload: Option<&str>, edit: Edit<'_>) -> Result<Arc<serde_json::Value>, ChangeError> {
        let mut watch = Stopwatch::start();
        let mut desired = held(&self.desired);
        if let Some(why) = crate::shutdown::restarting() {
            return Err(ChangeError::Conflict(format!(
                "pearld is restarting over its VRs to apply a change of {why}; try again in a second"
            )));
        }
        let running = self.config();
        let undo = crate::landing::land(&mut desired, &running, edit, |desired, undo, config| {
            watch.lap("validate");
            self.apply(desired, undo, config, reload, &mut watch)
        })?;
        desired.advance(&running, &self.config(), &undo);
        if desired.moves_tokens(&undo) {
            let access = Arc::new(Access::from_document(&desired.doc));
            drop_later(std::mem::replace(&mut *held(&self.access), access));
        }
        // The configuration replaced may be held by nobody else by now.
        drop_later((undo, running));
        watch.lap("publish");
        tracing::debug!("change applied in {}", watch.summary());
        Ok(Arc::clone(&desired.doc))
    }

    /// Admits, stores and applies `config`, which `desired`'s document (already edited)
    /// configures. Only the running node's refusal (`Conflict`) comes after storing. A change
    /// the running data plane cannot take in place (ports, workers, a port's fanout) is stored
    /// and applied by pearld starting again over its VRs (`shutdown::restart`).
    fn apply(
        &self,
        desired: &mut Desired,
        undo: &Undo,
        mut config: Config,
        reload: Option<&str>,
        watch: &mut Stopwatch,
    ) -> Result<(), ChangeError> {
        // `auto` VRs that run stay where they are unless their requests change (the parser
        // placed them as if the node started now).
        let fast_mbps = config.node.capacity.get("bandwidth_mbps").map_or(f64::INFINITY, |m| m as f64);
        let moved = pearl_control::replace_auto(&self.config().vrs, &mut config.vrs, config.node.fast_slots, fast_mbps);
        pearl_control::admit(&config.vrs, &self.config().vrs, &self.capacity(&config)).map_err(ChangeError::Invalid)?;
        ports::check_interfaces(&self.config(), &config).map_err(ChangeError::Invalid)?;
        let restart = self.needs_restart(&config);
        let plugins = {
            let state = held(&self.state);
            refuse_foreign_namespaces(&state.owned, &config.vrs, &state.config.vrs).map_err(ChangeError::Invalid)?;
            state.plugins.clone()
        };
        let plugins = plugins.prepare(&config).map_err(ChangeError::Invalid)?;
        watch.lap("admit");
        desired.store(undo).map_err(|e| ChangeError::Storage(e.to_string()))?;
        watch.lap("store");
        if let Some((what, why)) = restart {
            tracing::info!("{why}: pearld starts again over its VRs (live restore) to apply it");
            crate::shutdown::restart(what);
            return Ok(());
        }
        if !moved.is_empty() {
            tracing::info!("placement auto: {} moved to the other data plane", moved.join(", "));
        }
        let config = Arc::new(config);
        self.update(&config, reload, plugins, watch).map_err(ChangeError::Conflict)
    }

    /// Moves the node to `new`: VRs that are gone (or whose name, kind or interfaces
    /// changed) are removed with their namespaces, new ones are created, the data plane takes
    /// the rest (rules, queues, limits, a VR moved between the fast path and its kernel)
    /// without pausing anyone's forwarding.
    fn update(&self, new: &Arc<Config>, reload: Option<&str>, plugins: Plugins, watch: &mut Stopwatch) -> Result<(), String> {
        let mut state = held(&self.state);
        let old = Arc::clone(&state.config);
        let diff = ConfigDiff::between(&old, new);
        let next = plugins.clone();
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.update_state(&mut state, &diff, reload, plugins, watch)));
        let done = done.unwrap_or_else(|panic| {
            self.take_back(&mut state, &old, &next);
            let view = Arc::new(NodeView::of(&state));
            drop_later(std::mem::replace(&mut *held(&self.view), view));
            std::panic::resume_unwind(panic)
        });
        let touched: Vec<u16> = diff.vrs.iter().map(VrChange::id).chain(diff.restated.iter().map(|(_, n)| n.id)).collect();
        let view = Arc::new(self.view().next(&state, &touched));
        drop_later(std::mem::replace(&mut *held(&self.view), view));
        if let Some(spares) = &state.spares {
            spares.refill();
        }
        done
    }

    fn update_state(
        &self,
        state: &mut State,
        diff: &ConfigDiff,
        reload: Option<&str>,
        plugins: Plugins,
        watch: &mut Stopwatch,
    ) -> Result<(), String> {
        let new = &diff.new;
        let added: Vec<Arc<VrConfig>> = diff.vrs.iter().filter_map(VrChange::made).cloned().collect();
        let removed: Vec<u16> = diff.vrs.iter().filter_map(VrChange::unmade).map(|o| o.id).collect();
        // Restated VRs too: setting a VR's control plane again rereads its FRR's file.
        let kept: Vec<(&Arc<VrConfig>, &Arc<VrConfig>)> = diff
            .vrs
            .iter()
            .filter_map(|c| match c {
                VrChange::InPlace { old, new } => Some((old, new)),
                _ => None,
            })
            .chain(diff.restated.iter().map(|(o, n)| (o, n)))
            .collect();
        // Namespaces of VRs being replaced under the same name must go before they are made anew.
        let added_names: HashSet<&str> = added.iter().map(|a| a.name.as_str()).collect();
        let renamed: Vec<u16> =
            removed.iter().copied().filter(|id| state.spaces.get(id).is_some_and(|s| added_names.contains(s.name.as_str()))).collect();
        if !renamed.is_empty() {
            return Err("a VR's interfaces or kind cannot change in place yet: delete the VR, then create it".into());
        }
        // Limits and control planes of the VRs that stay: before anything else changes, so
        // that a control plane FRR refuses stops the change with nothing else done.
        for &(o, n) in &kept {
            let State { spaces, routed, .. } = state;
            let Some(space) = spaces.get_mut(&n.id) else { continue };
            if space.update_processes(o, n, reload == Some(n.name.as_str()))? {
                if let (Some(daemons), Some(r)) = (space.daemons(), routed.get(&n.id)) {
                    hold_routes_while_daemons_restart(daemons, r.hold_switch());
                }
            }
        }
        watch.lap("diff");
        state.plugins.attach(&plugins, &self.dataplane);
        // The new VRs' namespaces are made while the data plane takes the new plan: the one
        // waits mostly on the kernel, the other computes and then waits for the workers, and
        // with thousands of VRs each takes milliseconds. The data plane may forward for a new
        // VR before its namespace is there: what it sends the VR's kernel waits in the VR's
        // channel, which the slow path serves only once both are done.
        let (spaces, plane) = std::thread::scope(|s| {
            let plane = s.spawn(|| self.dataplane.update(diff));
            let spaces = create_spaces(state, &added);
            (spaces, plane.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        });
        watch.lap("namespaces and data plane");
        let mut change = match (spaces, plane) {
            (Ok(()), Ok(change)) => change,
            (spaces, plane) => {
                // Whichever refused, the other is taken back.
                plugins.attach(&state.plugins, &self.dataplane);
                if plane.is_ok() {
                    if let Err(e) = self.dataplane.update(&ConfigDiff::between(new, &diff.old)) {
                        tracing::error!("taking the data plane back to the running configuration: {e}");
                    }
                }
                if spaces.is_ok() {
                    remove_spaces(state, added.iter().map(|v| v.id));
                }
                return Err(match (spaces, plane) {
                    (Err(e), _) => e,
                    (_, Err(e)) => e.to_string(),
                    (Ok(()), Ok(_)) => unreachable!("matched above"),
                });
            }
        };
        state.plugins = plugins;
        drop_later(std::mem::take(&mut change.replaced));
        state.slow_path.apply(change);
        remove_spaces(state, removed.iter().copied());
        watch.lap("slow path and removals");
        if let Err(e) = start_routed(state, &self.dataplane, &added) {
            tracing::warn!("{e}");
        }
        watch.lap("routed");
        for &(o, n) in &kept {
            let Some(space) = state.spaces.get(&n.id) else { continue };
            if let Err(e) = space.sync_static(o, n) {
                tracing::warn!("{e}");
            }
        }
        state.config = Arc::clone(new);
        Ok(())
    }

    /// Why the running node cannot take `new`, if it cannot: caught before the change is
    /// stored, so that a refused change is never on disk.
    /// Whether `new` changes what the workers were started with (their number, the ports, how a
    /// port spreads its frames over them): what, and why, if so.
    fn needs_restart(&self, new: &Config) -> Option<(&'static str, String)> {
        let old = self.config();
        if new.workers != old.workers {
            return Some(("workers", format!("workers: {} → {}", old.workers, new.workers)));
        }
        let ports = old.ports.len().max(new.ports.len());
        if let Some(p) = (0..ports).find(|&p| old.ports.get(p) != new.ports.get(p)) {
            let (was, is) = (old.ports.get(p), new.ports.get(p));
            let change = match (was, is) {
                (None, Some(n)) => format!("ports[{p}] ({}): added", n.name),
                (Some(o), None) => format!("ports[{p}] ({}): removed", o.name),
                (_, Some(n)) => format!("ports[{p}] ({}): changed", n.name),
                (None, None) => unreachable!("p is below one of the lengths"),
            };
            return Some(("ports", change));
        }
        let rotating = &held(&self.state).rotating;
        // A port without VRs asks for nothing.
        let used = |p: usize| new.vrs.iter().any(|v| v.interfaces.iter().any(|i| i.port == p));
        let p = (0..new.ports.len()).find(|&p| rotating.get(p).is_some_and(|&r| rotates(new, p) != r) && used(p))?;
        let (was, asked) = if rotating[p] { ("round_robin", "flow or proportional") } else { ("flow or proportional", "round_robin") };
        Some((
            "a port's distribution",
            format!("port {} spreads its frames over the workers by {was}; its VRs now ask for {asked}", new.ports[p].name),
        ))
    }

    /// After a change panicked midway through `state`: the data plane, the plugins and the VRs'
    /// namespaces back as `old` (in force before the change) had them, as far as they can be
    /// made again; what cannot is logged.
    fn take_back(&self, state: &mut State, old: &Arc<Config>, next: &Plugins) {
        next.attach(&state.plugins, &self.dataplane);
        let plane = Arc::clone(&self.dataplane.layout().config);
        if !Arc::ptr_eq(&plane, old) {
            match self.dataplane.update(&ConfigDiff::between(&plane, old)) {
                Ok(mut change) => {
                    drop_later(std::mem::take(&mut change.replaced));
                    state.slow_path.apply(change);
                }
                Err(e) => tracing::error!("taking the data plane back after a panicked change: {e}"),
            }
        }
        let kept: HashSet<u16> = old.vrs.iter().map(|v| v.id).collect();
        let made: Vec<u16> = state.spaces.keys().copied().filter(|id| !kept.contains(id)).collect();
        remove_spaces(state, made.into_iter());
        let lost: Vec<Arc<VrConfig>> = old.vrs.iter().filter(|v| !state.spaces.contains_key(&v.id)).cloned().collect();
        if !lost.is_empty() {
            let again = create_spaces(state, &lost).and_then(|()| start_routed(state, &self.dataplane, &lost));
            if let Err(e) = again {
                tracing::error!("making again the VRs a panicked change removed: {e}");
            }
        }
        state.config = Arc::clone(old);
    }

    /// What VRs may be granted under `config` (its `node.capacity` over what was measured).
    pub fn capacity(&self, config: &Config) -> [u64; 8] {
        crate::capacity::of(config, &self.measured)
    }

    /// The configuration in force; never waits for a change that is running (its VRs appear
    /// when it is done).
    pub fn config(&self) -> Arc<Config> {
        Arc::clone(&self.view().config)
    }

    /// The VR named `name`, with the configuration it is part of (both of one view).
    pub fn vr_named(&self, name: &str) -> Option<(Arc<Config>, Arc<VrConfig>)> {
        let view = self.view();
        let vr = Arc::clone(view.names.get(name)?);
        Some((Arc::clone(&view.config), vr))
    }

    fn view(&self) -> Arc<NodeView> {
        Arc::clone(&held(&self.view))
    }

    /// A VR's slow-path counters, by id.
    pub fn slow_path_counters(&self, vr: u16) -> Option<Arc<NetioCounters>> {
        self.view().slow_path.get(vr).cloned()
    }

    /// What the VRs' kernels count as dropped, by VR id, for `(id, activity)` pairs (see
    /// [`KernelDrops::get`]); VRs whose counters cannot be read are left out.
    pub fn kernel_drops(&self, vrs: &[(u16, u64)]) -> HashMap<u16, Drops> {
        let view = self.view();
        let names: Vec<(u16, &str, u64)> =
            vrs.iter().filter_map(|&(id, activity)| Some((id, view.namespaces.get(id)?.as_str(), activity))).collect();
        let wanted: Vec<Wanted<'_>> =
            names.iter().map(|(id, ns, activity)| Wanted { id: *id, namespace: ns, activity: *activity }).collect();
        self.kernel_drops.get(&wanted)
    }

    /// A VR's control-plane processes as their supervisor last saw them, by id.
    pub fn daemon_status(&self, vr: u16) -> Option<Vec<DaemonStatus>> {
        self.view().daemons.get(vr).map(DaemonStatusReader::get)
    }

    /// A plugin VR's tables, by id.
    pub fn plugin_tables(&self, vr: u16) -> Option<PluginTables> {
        self.view().tables.get(vr).cloned()
    }

    /// A VR's route mirror statistics, by id (fast VRs).
    pub fn routed_stats(&self, vr: u16) -> Option<RoutedStats> {
        self.view().routed.get(vr).map(StatsReader::get)
    }

    /// Removes every VR and everything PEARL made for them, the TAP holder included.
    pub fn stop(self) {
        let mut state = self.stop_forwarding();
        let ids: Vec<u16> = state.spaces.keys().copied().collect();
        remove_spaces(&mut state, ids.into_iter());
        state.holder.quit();
    }

    /// Stops pearld's own part and leaves every VR running (live restore): the next pearld
    /// adopts the namespaces, the TAPs the holder keeps, the cgroups and the daemons.
    pub fn leave(self) {
        let links = self.dataplane.offload_links();
        let mut state = self.stop_forwarding();
        // Flow offload's kernel programs stay attached while no pearld runs: the holder keeps
        // their links, and the offloaded flows keep going (`release_offload_links`).
        for (ifindex, link) in links {
            if let Err(e) = state.holder.put(&offload_key(ifindex), std::os::fd::AsRawFd::as_raw_fd(&link)) {
                tracing::warn!("flow offload: keeping the program on interface {ifindex} attached: {e}");
            }
        }
        for (_, space) in std::mem::take(&mut state.spaces) {
            space.leave();
        }
    }

    fn stop_forwarding(self) -> State {
        let mut state = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        for (_, r) in std::mem::take(&mut state.routed) {
            r.stop();
        }
        state.slow_path.stop();
        self.dataplane.stop();
        // Process plugins' supervisors stop theirs rather than restart them as their VRs go.
        drop(std::mem::take(&mut state.plugins));
        state
    }
}

/// A lock that a request which panicked while holding it (the API answers it with a 500) does
/// not leave unusable: later requests and the stop on SIGTERM go on with what it left.
fn held<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| {
        tracing::error!("a request panicked during a change; going on with the state it left");
        m.clear_poison();
        e.into_inner()
    })
}

/// Whether port `port`'s fanout group rotates its frames over the workers (`round_robin`).
fn rotates(config: &Config, port: usize) -> bool {
    config.workers > 1 && config.port_distribution(port) == pearl_control::Distribution::RoundRobin
}

#[cfg(test)]
mod tests {
    use super::held;
    use std::sync::Mutex;

    #[test]
    fn a_lock_held_by_a_panicked_request_is_taken_again_and_cleared() {
        let m = Mutex::new(1);
        let _ = std::thread::scope(|s| {
            s.spawn(|| {
                let mut g = m.lock().unwrap();
                *g = 2;
                panic!("a handler's bug");
            })
            .join()
        });
        assert!(m.is_poisoned());
        assert_eq!(*held(&m), 2);
        assert!(!m.is_poisoned(), "cleared: the next request does not log it again");
    }
}
