//! A running PEARL node: the VRs' namespaces, the data plane, and the slow path between them.
//! Started whole or not at all, changed at run time one validated configuration at a time (a
//! refused change leaves everything as it was), taken down in the reverse order.

use crate::adoption::{refuse_foreign_namespaces, remove_leftovers};
use crate::by_vr_id::ById;
use crate::desired::{ChangeError, Desired, Edit, Undo};
use crate::dropper::drop_later;
use crate::fresh_netns::{self, FreshNetns};
use crate::holder::Holder;
use crate::in_parallel::in_parallel;
use crate::kept_offload::{offload_key, release_offload_links};
use crate::kernel_drops::{Drops, KernelDrops, Wanted};
use crate::owned::Owned;
use crate::plugins::Plugins;
use crate::ports;
use crate::route_hold::hold_routes_while_daemons_restart;
use crate::slowpath::SlowPath;
use crate::spare_spaces::Spares;
use crate::stopwatch::Stopwatch;
use crate::vmm::VrSpace;
use crate::vr_names::VrNames;
use pearl_control::{Access, Config, ConfigDiff, VrChange, VrConfig};
use pearl_dataplane::dataplane::{vr_interface_mtu, Dataplane};
use pearl_dataplane::slowpath::{NetioCounters, NetioInterface};
use pearl_plugin::PluginTables;
use pearl_routed::{Routed, RoutedInterface, RoutedStats, StatsReader};
use pearl_tables::VrTables;
use pearl_vrproc::{DaemonStatus, DaemonStatusReader};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

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

/// The node as the last finished change left it.
struct NodeView {
    config: Arc<Config>,
    /// `config`'s VRs by name.
    names: VrNames,
    slow_path: ById<Arc<NetioCounters>>,
    routed: ById<StatsReader>,
    namespaces: ById<String>,
    daemons: ById<DaemonStatusReader>,
    /// Plugin VRs' tables.
    tables: ById<PluginTables>,
}

impl NodeView {
    fn of(state: &State) -> NodeView {
        NodeView {
            config: Arc::clone(&state.config),
            names: VrNames::of(&state.config.vrs),
            slow_path: ById::of(state.slow_path.counters.iter().map(|(&id, c)| (id, Arc::clone(c)))),
            routed: ById::of(state.routed.iter().map(|(&id, r)| (id, r.stats_reader()))),
            namespaces: ById::of(state.spaces.iter().map(|(&id, s)| (id, s.name.clone()))),
            daemons: ById::of(state.spaces.iter().filter_map(|(&id, s)| Some((id, s.daemons()?.status_reader())))),
            tables: ById::of(state.plugins.tables()),
        }
    }

    /// The view after a change that made, removed or changed the VRs `touched`: what it says of
    /// the others is shared with `self`.
    fn next(&self, state: &State, touched: &[u16]) -> NodeView {
        let mut next = NodeView {
            config: Arc::clone(&state.config),
            names: VrNames::of(&state.config.vrs),
            slow_path: self.slow_path.clone(),
            routed: self.routed.clone(),
            namespaces: self.namespaces.clone(),
            daemons: self.daemons.clone(),
            tables: self.tables.clone(),
        };
        for &id in touched {
            let space = state.spaces.get(&id);
            next.slow_path.set(id, state.slow_path.counters.get(&id).cloned());
            next.routed.set(id, state.routed.get(&id).map(Routed::stats_reader));
            next.namespaces.set(id, space.map(|s| s.name.clone()));
            next.daemons.set(id, space.and_then(|s| Some(s.daemons()?.status_reader())));
            next.tables.set(id, state.plugins.tables_of(id));
        }
        next
    }
}

struct State {
    holder: Holder,
    /// The namespaces PEARL made: the only ones it takes, changes or removes.
    owned: Owned,
    /// Namespaces made ahead for VRs created at run time; none while the VRs of the
    /// configuration are made at start, which take far more than a few.
    spares: Option<Spares<FreshNetns>>,
    /// Shared with the readers' view: a change replaces it whole, nobody edits it.
    config: Arc<Config>,
    spaces: BTreeMap<u16, VrSpace>,
    slow_path: SlowPath,
    /// VR id → the mirror of its namespace's routes into its FIB (fast VRs).
    routed: BTreeMap<u16, Routed>,
    /// `[port]`: opened to rotate its frames over the workers (`round_robin`), which its fanout
    /// group keeps until pearld restarts; the other policies are programs a change replaces.
    rotating: Vec<bool>,
    /// Plugin VRs' programs, as attached to the data plane.
    plugins: Plugins,
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

/// How many VR namespaces wait made ahead (`fresh_netns.rs`). The API creates VRs one per call,
/// and a namespace is made again in less time than a call takes, so one would do; the second
/// serves a change that adds two VRs. Changes that add more make the rest the slow way, in
/// parallel; each waiting namespace costs kernel memory and lengthens the kernel's lookups that
/// go through every namespace, so the pool stays small.
const SPARE_NAMESPACES: usize = 2;

/// The pool of namespaces made ahead, if /run/netns can be readied for naming them; else each
/// VR's is made when it is created.
fn spare_namespaces() -> Option<Spares<FreshNetns>> {
    let started = fresh_netns::prepare_names().and_then(|()| Spares::start(SPARE_NAMESPACES, "VR namespaces", FreshNetns::make));
    started.map_err(|e| tracing::warn!("namespaces made ahead of need: {e}; each VR's is made when it is created")).ok()
}

/// Makes the namespaces and TAPs of `vrs`, parking the TAPs for the slow path; all or none.
fn create_spaces(state: &mut State, vrs: &[Arc<VrConfig>]) -> Result<(), String> {
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
fn start_routed(state: &mut State, dataplane: &Dataplane, vrs: &[Arc<VrConfig>]) -> Result<(), String> {
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
fn abandon_start(mut state: State) {
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
fn quit_unless_vrs_run(holder: Holder, owned: &Owned) {
    if owned.live().is_empty() {
        holder.quit();
    }
}

fn remove_spaces(state: &mut State, ids: impl Iterator<Item = u16>) {
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
