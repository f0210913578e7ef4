//! What readers (stats, metrics, listings) see of a node: published after every change, so
//! that they need not wait for the change running.

use super::state::State;
use crate::by_vr_id::ById;
use crate::vr_names::VrNames;
use pearl_control::Config;
use pearl_dataplane::slowpath::NetioCounters;
use pearl_plugin::PluginTables;
use pearl_routed::{Routed, StatsReader};
use pearl_vrproc::DaemonStatusReader;
use std::sync::Arc;

/// The node as the last finished change left it.
pub(super) struct NodeView {
    pub(super) config: Arc<Config>,
    /// `config`'s VRs by name.
    pub(super) names: VrNames,
    pub(super) slow_path: ById<Arc<NetioCounters>>,
    pub(super) routed: ById<StatsReader>,
    pub(super) namespaces: ById<String>,
    pub(super) daemons: ById<DaemonStatusReader>,
    /// Plugin VRs' tables.
    pub(super) tables: ById<PluginTables>,
}

impl NodeView {
    pub(super) fn of(state: &State) -> NodeView {
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
    pub(super) fn next(&self, state: &State, touched: &[u16]) -> NodeView {
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
