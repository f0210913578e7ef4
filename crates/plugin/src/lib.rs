//! PEARL's plugin host: a plugin VR's program (`plugin:` in its configuration) becomes the
//! VR's [`VrProgram`] in the data plane. A WebAssembly module runs in the worker, sandboxed
//! (its own memory, a fuel budget per batch, no host access but the batch interface of
//! `pearl-plugin-sdk`); a native program runs in a process of its own in the VR's namespace,
//! fed through shared memory; an XDP program runs in the worker in an eBPF interpreter
//! (`pearl-ebpf`), its maps the VR's tables. A fault stops that VR's program alone, which
//! restarts after a back-off (an XDP program's fault drops the one frame).

mod area;
mod backoff;
mod i3;
mod process;
mod process_calls;
mod route_answer;
mod tables;
mod wasm;
mod xdp;

use pearl_control::{ConfigError, PluginModule, VrConfig};
use pearl_program::{Hosted, VrProgram};
use std::sync::Arc;

pub use i3::{I3Program, I3_PORT};
pub use process::ProcessProgram;
pub use tables::{PluginTables, TableError};
pub use wasm::WasmProgram;
pub use xdp::XdpProgram;

/// A plugin VR's program, ready to attach (`Dataplane::set_program`), and its tables.
pub struct Prepared {
    pub program: Arc<dyn VrProgram>,
    pub tables: PluginTables,
}

/// The program VR `vr`'s host makes (`Hosted`, as `pearl_program::make` decided);
/// its tables start with the entries of `previous` (the VR's tables before a change) under the
/// names it declares again. An error names the VR's field that is wrong (a module that does
/// not compile, lacks an export, ...).
pub fn program_for(vr: &VrConfig, hosted: Hosted<'_>, at: &str, previous: Option<&PluginTables>) -> Result<Prepared, ConfigError> {
    let plugin = match hosted {
        Hosted::I3 => {
            let program = I3Program::new(vr, previous);
            let tables = program.tables();
            return Ok(Prepared { program: Arc::new(program), tables });
        }
        Hosted::Plugin(None) => return Err(ConfigError::at(format!("{at}.plugin"), "a plugin VR needs its program")),
        Hosted::Plugin(Some(plugin)) => plugin,
    };
    let tables = PluginTables::new(&plugin.tables, previous);
    match &plugin.module {
        PluginModule::Wasm { bytes, .. } => {
            charge_tables(vr, &tables, at)?;
            let program =
                WasmProgram::new(vr, bytes, &plugin.config, tables.clone()).map_err(|e| ConfigError::at(format!("{at}.plugin.wasm"), e))?;
            Ok(Prepared { program: Arc::new(program), tables })
        }
        PluginModule::Xdp { bytes, section, .. } => {
            let program =
                XdpProgram::new(vr, bytes, section.as_deref(), previous).map_err(|e| ConfigError::at(format!("{at}.plugin.xdp"), e))?;
            let tables = program.tables();
            charge_tables(vr, &tables, at)?;
            Ok(Prepared { program: Arc::new(program), tables })
        }
        PluginModule::Process { argv } => {
            charge_tables(vr, &tables, at)?;
            let program = ProcessProgram::new(vr, argv, &plugin.config, tables.clone())
                .map_err(|e| ConfigError::at(format!("{at}.plugin.process"), e))?;
            Ok(Prepared { program: Arc::new(program), tables })
        }
    }
}

/// `limits.memory_mb` covers a plugin VR's program and its tables: the program has what the
/// tables may not take (`PluginTables::bound_bytes`), and a VR whose tables alone may take it
/// all is refused.
fn charge_tables(vr: &VrConfig, tables: &PluginTables, at: &str) -> Result<(), ConfigError> {
    let (limit, bound) = (vr.limits.memory_mb << 20, tables.bound_bytes());
    if bound >= limit {
        return Err(ConfigError::at(
            format!("{at}.limits.memory_mb"),
            format!(
                "{} MiB cannot hold the plugin's tables, which may take {:.1} MiB (their most entries × the largest key and value)",
                vr.limits.memory_mb,
                bound as f64 / f64::from(1 << 20)
            ),
        ));
    }
    Ok(())
}
