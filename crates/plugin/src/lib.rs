//! PEARL's plugin host: a plugin VR's program (`plugin:` in its configuration) becomes the
//! VR's [`VrProgram`] in the data plane. A WebAssembly module runs in the worker, sandboxed
//! (its own memory, a fuel budget per batch, no host access but the batch interface of
//! `pearl-plugin-sdk`); a fault stops that VR's program alone, which restarts after a back-off.

mod area;
mod backoff;
mod wasm;

use pearl_control::{ConfigError, PluginModule, VrConfig};
use pearl_dataplane::program::VrProgram;
use std::sync::Arc;

pub use wasm::WasmProgram;

/// The program of plugin VR `vr`, ready to attach (`Dataplane::set_program`); an error names
/// the VR's field that is wrong (a module that does not compile, lacks an export, ...).
pub fn program_for(vr: &VrConfig, at: &str) -> Result<Arc<dyn VrProgram>, ConfigError> {
    let plugin = vr.plugin.as_ref().ok_or_else(|| ConfigError::at(format!("{at}.plugin"), "a plugin VR needs its program"))?;
    match &plugin.module {
        PluginModule::Wasm { bytes, .. } => {
            let program = WasmProgram::new(vr, bytes, &plugin.config).map_err(|e| ConfigError::at(format!("{at}.plugin.wasm"), e))?;
            Ok(Arc::new(program))
        }
    }
}
