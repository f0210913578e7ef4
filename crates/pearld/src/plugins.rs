//! Plugin VRs' programs (and the `i3` code option's, which keeps tables as they do): compiled
//! and started when a configuration naming them is checked (a module that cannot run refuses
//! the change), attached to the data plane with the change, and kept across changes that leave
//! a VR's plugin alone, so that the plugin keeps its state.

use pearl_control::{Config, ConfigError, IpPrefix, PluginConfig, VrConfig};
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::program::{self, Hosted, VrProgram};
use pearl_plugin::PluginTables;
use std::collections::HashMap;
use std::sync::Arc;

/// The plugin programs of one configuration, by VR id.
#[derive(Default, Clone)]
pub struct Plugins(HashMap<u16, Attached>);

#[derive(Clone)]
struct Attached {
    made_from: MadeFrom,
    program: Arc<dyn VrProgram>,
    tables: PluginTables,
}

/// What a plugin program is made from: a change to any of it starts a new one.
#[derive(Clone, PartialEq, Eq)]
struct MadeFrom {
    /// The plugin; none for a code option hosted here (`i3`).
    plugin: Option<PluginConfig>,
    ports: Vec<usize>,
    /// An `i3` node's addresses (what it answers on and sends from).
    addresses: Vec<Vec<IpPrefix>>,
    fuel_per_packet: u64,
    memory_mb: u64,
}

impl MadeFrom {
    fn of(vr: &VrConfig, hosted: Hosted<'_>) -> MadeFrom {
        let i3 = matches!(hosted, Hosted::I3);
        MadeFrom {
            plugin: vr.plugin.clone(),
            ports: vr.interfaces.iter().map(|i| i.port).collect(),
            addresses: if i3 { vr.interfaces.iter().map(|i| i.addresses.clone()).collect() } else { Vec::new() },
            fuel_per_packet: vr.limits.fuel_per_packet,
            memory_mb: vr.limits.memory_mb,
        }
    }
}

impl Plugins {
    /// The programs `config` needs: the ones attached now where a VR's plugin is unchanged,
    /// the others compiled and started; refused naming the first VR whose plugin cannot run.
    pub fn prepare(&self, config: &Config) -> Result<Plugins, ConfigError> {
        let mut next = HashMap::new();
        for (i, vr) in config.vrs.iter().enumerate() {
            let Some(hosted) = program::hosted(vr) else { continue };
            let made_from = MadeFrom::of(vr, hosted);
            let now = self.0.get(&vr.id);
            let (program, tables) = match now {
                Some(a) if a.made_from == made_from => (Arc::clone(&a.program), a.tables.clone()),
                _ => {
                    let p = pearl_plugin::program_for(vr, hosted, &format!("vrs[{i}]"), now.map(|a| &a.tables))?;
                    (p.program, p.tables)
                }
            };
            next.insert(vr.id, Attached { made_from, program, tables });
        }
        Ok(Plugins(next))
    }

    pub fn programs(&self) -> HashMap<u16, Arc<dyn VrProgram>> {
        self.0.iter().map(|(&id, a)| (id, Arc::clone(&a.program))).collect()
    }

    /// Each plugin VR's tables, by VR id.
    pub fn tables(&self) -> impl Iterator<Item = (u16, PluginTables)> + '_ {
        self.0.iter().map(|(&id, a)| (id, a.tables.clone()))
    }

    /// Plugin VR `id`'s tables; `None` for a VR without a plugin.
    pub fn tables_of(&self, id: u16) -> Option<PluginTables> {
        self.0.get(&id).map(|a| a.tables.clone())
    }

    /// Hands the data plane `next`'s programs in place of these; they take effect at its next
    /// update.
    pub fn attach(&self, next: &Plugins, dataplane: &Dataplane) {
        for (&id, a) in &next.0 {
            if !self.0.get(&id).is_some_and(|o| Arc::ptr_eq(&o.program, &a.program)) {
                dataplane.set_program(id, Some(Arc::clone(&a.program)));
            }
        }
        for &id in self.0.keys().filter(|id| !next.0.contains_key(id)) {
            dataplane.set_program(id, None);
        }
    }
}
