//! PEARL's plugin host: a plugin VR's program (`plugin:` in its configuration) becomes the
//! VR's [`VrProgram`] in the data plane. A WebAssembly module runs in the worker, sandboxed
//! (its own memory, a fuel budget per batch, no host access but the batch interface of
//! `pearl-plugin-sdk`); a native program runs in a process of its own in the VR's namespace,
//! fed through shared memory; an XDP program runs in the worker in an eBPF interpreter
//! (`pearl-ebpf`), its maps the VR's tables. A fault stops that VR's program alone, which
//! restarts after a back-off (an XDP program's fault drops the one frame).
//!
//! ## In detail
//!
//! A plugin VR (`kind: plugin`, `plugin: {wasm: FILE, config: …}`) runs its owner's WebAssembly
//! module in place of the IP router; the interface is `docs/PLUGINS.md`, its byte layout
//! `plugin-sdk/src/abi.rs`, which host and SDK share. pearl-control reads the module with the
//! configuration (`plugin.rs`); pearld's `plugins.rs` compiles and starts it when a change that
//! names it is checked (a module that cannot run refuses the change, naming `vrs[i].plugin.wasm`),
//! hands it to the data plane with the change (`Dataplane::set_program` before `update`, undone if
//! the update is refused), and keeps the running instance across changes that leave its plugin,
//! ports and limits alone. `wasm.rs`: one wasmi instance per VR behind a mutex taken once per run
//! (workers sharing a VR take turns), fuel per run (`limits.fuel_per_packet` × frames), memory
//! capped at `limits.memory_mb`, the imports `route_v4`, `route_v6`, `route_v4_batch` answered from
//! the run's FIB view (`Run::fib_*`) while the call lasts; `area.rs` packs a run into the plugin's
//! batch area and reads verdicts back from the host's own record of where each frame is;
//! `backoff.rs` decides when a faulted plugin starts again. `tables.rs`: the VR's key-value
//! tables (`plugin.tables`), one mutex over all of them held by the worker for each plugin call
//! (the imports `table_find/get/set/remove` work on them through a pointer set for the call) and by
//! pearld's `plugin_tables.rs` for each API request (`/v1/vrs/{name}/tables…`, `pearlctl plugin
//! table`); `program_for` copies a previous version's tables into the new one under the names it
//! declares again, and pearld's view publishes each plugin VR's tables. `process.rs`: a native
//! program (`plugin.process`) in the VR's namespace, sharing a memfd with pearld (a control block of
//! futex words and a batch area packed by `area.rs` as for wasm); the worker posts a run, wakes the
//! process and waits at most 2 ms (`program_hang` after), answering meanwhile the process's calls for
//! routes and tables (`process_calls.rs`: the WebAssembly imports' work on the call's bytes in the
//! control block, the route answers shared with wasm's through `route_answer.rs`), a supervisor thread per program spawns it
//! (`ip netns exec`, joining the VR's cgroup before exec through `pearl_vrproc::Cgroup::placement_of`,
//! `RLIMIT_AS` from `limits.memory_mb` too, killed with its supervisor), and restarts
//! it after the back-off when it exits or leaves a batch for 100 ms. A plugin VR alone on a port gets every
//! frame arriving there (`PLUGIN_PORT_RULE_PRIORITY`, the lowest classifier rule), so that a
//! program may bridge or address by its own protocol. `xdp.rs`: an XDP program (`plugin.xdp`)
//! loaded by pearl-ebpf, run on each frame of the run in place (no copy) with the VR's maps held
//! for the run; its action becomes the decision (PASS → slow path, TX → back out, REDIRECT →
//! `bpf_redirect`'s VR interface, DROP/ABORTED → `program`), a fault drops the frame alone
//! (`program_trap`, `program_fuel`). A super-packet whose head the program grew is marked
//! encapsulated (`Packet::follow_head`, shared with the wasm and process hosts: `Offload::encapsulated`
//! says where its inner IP header now starts), for `tx_offload` to cut in software; the slow path
//! refuses one (no virtio-net header can describe it). Its maps are the VR's tables (`PluginTables::of_maps`), so
//! the same API and `pearlctl plugin table` read and write them. `i3.rs`: the `code: i3` code
//! option, hosted here because it keeps tables as plugins do (`ring`, `fingers`, `triggers`,
//! written by the VR's control process; the program rebuilds its index of them when their
//! `generation` moves): I3 datagrams to the VR are forwarded by Chord or by their trigger and
//! re-addressed in place; the rest of the run goes to the IP router through `Run::part`.

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
            let program = WasmProgram::new(vr, bytes, &plugin.config, tables.clone())
                .map_err(|e| ConfigError::at(format!("{at}.plugin.wasm"), e.to_string()))?;
            Ok(Prepared { program: Arc::new(program), tables })
        }
        PluginModule::Xdp { bytes, section, .. } => {
            let program = XdpProgram::new(vr, bytes, section.as_deref(), previous)
                .map_err(|e| ConfigError::at(format!("{at}.plugin.xdp"), e.to_string()))?;
            let tables = program.tables();
            charge_tables(vr, &tables, at)?;
            Ok(Prepared { program: Arc::new(program), tables })
        }
        PluginModule::Process { argv } => {
            charge_tables(vr, &tables, at)?;
            let program = ProcessProgram::new(vr, argv, &plugin.config, tables.clone())
                .map_err(|e| ConfigError::at(format!("{at}.plugin.process"), e.to_string()))?;
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
