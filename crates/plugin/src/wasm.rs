//! A WebAssembly plugin as a VR program: one instance per VR, fed a batch per run of the VR's
//! packets. The module is compiled once (when the configuration is applied); an instance is
//! started then and again after each fault, with fresh memory.

use crate::area::{self, Slot};
use crate::backoff::Backoff;
use crate::route_answer::code_of;
use crate::tables::{self, HeldTables, PluginTables};
use pearl_control::VrConfig;
use pearl_plugin_sdk::abi::{FRAMES_AT, HEADROOM, MAX_BATCH, ROUTE_ANSWER_LEN, ROUTE_NONE, TABLE_NONE};
use pearl_program::reasons::VrDrop;
use pearl_program::{Decision, Run, VrProgram};
use pearl_tables::nexthop::Adjacency;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use wasmi::{Caller, Config, Engine, Linker, Memory, Module, Store, StoreLimits, StoreLimitsBuilder, TrapCode, TypedFunc};

/// Fuel for starting an instance (its start function and `pearl_init`).
const START_FUEL: u64 = 10_000_000;
/// Fuel for a batch beyond its frames' budget: a plugin's set-up per call (wasmi charges a
/// basic block whole on entry, and compilers unroll loops over a batch's arrays into long
/// ones: the LPM example's takes about 13,000 before its first frame).
const CALL_FUEL: u64 = 50_000;

pub struct WasmProgram {
    host: Mutex<Host>,
}

struct Host {
    vr: String,
    engine: Engine,
    module: Module,
    linker: Linker<State>,
    live: Option<Live>,
    backoff: Backoff,
    fuel_per_packet: u64,
    memory_bytes: usize,
    /// `plugin.config` as JSON, for `pearl_init`.
    config: Vec<u8>,
    /// `[VR interface]`: its port.
    ports: Vec<u16>,
    /// `[port]`: the VR's interface there, or `NO_INTERFACE`.
    interface_of_port: Arc<[u16]>,
    slots: Vec<Slot>,
    epoch: Instant,
    tables: PluginTables,
}

struct Live {
    store: Store<State>,
    memory: Memory,
    process: TypedFunc<i32, ()>,
    area: usize,
    size: usize,
}

/// What the host functions see.
struct State {
    limits: StoreLimits,
    run: RunPtr,
    memory: Option<Memory>,
    interface_of_port: Arc<[u16]>,
    /// Scratch room of `route_v4_batch`.
    addrs: Vec<u32>,
    hops: Vec<u32>,
    routes: Vec<Option<Adjacency>>,
    /// For `table_find`.
    tables: PluginTables,
    /// The tables, held for the call in progress; null between calls.
    held: HeldTables,
}

/// The run being processed, for the host functions the plugin calls meanwhile; null between
/// batches.
struct RunPtr(*const ());

// SAFETY: the pointer is set and read on the thread that calls the plugin, within that call.
unsafe impl Send for RunPtr {}

impl RunPtr {
    const NONE: RunPtr = RunPtr(std::ptr::null());

    /// # Safety
    /// The run must outlive every use of the returned reference: only within the plugin call
    /// during which the pointer was set.
    unsafe fn get<'a>(&self) -> Option<&'a Run<'a>> {
        // SAFETY: as the caller promises; `Run` is only read.
        unsafe { self.0.cast::<Run<'a>>().as_ref() }
    }
}

/// Why a WebAssembly module was refused.
#[derive(Debug, thiserror::Error)]
pub enum WasmError {
    /// does not compile: ERROR (not WebAssembly, or invalid)
    #[error("does not compile: {0}")]
    Compile(wasmi::Error),
    /// ERROR (PEARL's imports could not be offered to the module)
    #[error("{0}")]
    Link(wasmi::errors::LinkerError),
    /// plugin.config: ERROR (not passed on as JSON)
    #[error("plugin.config: {0}")]
    Config(serde_json::Error),
    /// ERROR (the module's start, with its config, failed: a missing export, a trap)
    #[error("{0}")]
    Start(String),
}

impl WasmProgram {
    /// Compiles `bytes` (binary or text format) for plugin VR `vr` and starts it once with
    /// `config`, so that a module that cannot run is refused with the configuration.
    pub fn new(vr: &VrConfig, bytes: &[u8], config: &serde_json::Value, tables: PluginTables) -> Result<WasmProgram, WasmError> {
        let mut c = Config::default();
        c.consume_fuel(true);
        let engine = Engine::new(&c);
        let module = Module::new(&engine, bytes).map_err(WasmError::Compile)?;
        let mut linker = Linker::new(&engine);
        linker.func_wrap("pearl", "route_v4", route_v4).map_err(WasmError::Link)?;
        linker.func_wrap("pearl", "route_v6", route_v6).map_err(WasmError::Link)?;
        linker.func_wrap("pearl", "route_v4_batch", route_v4_batch).map_err(WasmError::Link)?;
        linker.func_wrap("pearl", "table_find", table_find).map_err(WasmError::Link)?;
        linker.func_wrap("pearl", "table_get", table_get).map_err(WasmError::Link)?;
        linker.func_wrap("pearl", "table_set", table_set).map_err(WasmError::Link)?;
        linker.func_wrap("pearl", "table_remove", table_remove).map_err(WasmError::Link)?;
        let (ports, interface_of_port) = area::vr_ports(vr);
        let mut host = Host {
            vr: vr.name.clone(),
            engine,
            module,
            linker,
            live: None,
            backoff: Backoff::default(),
            fuel_per_packet: vr.limits.fuel_per_packet,
            // The tables are charged to the VR's memory first.
            memory_bytes: usize::try_from((vr.limits.memory_mb << 20).saturating_sub(tables.bound_bytes())).unwrap_or(usize::MAX),
            config: serde_json::to_vec(config).map_err(WasmError::Config)?,
            ports,
            interface_of_port,
            slots: Vec::new(),
            epoch: Instant::now(),
            tables,
        };
        host.live = Some(host.start().map_err(|e| WasmError::Start(e.0))?);
        Ok(WasmProgram { host: Mutex::new(host) })
    }
}

impl VrProgram for WasmProgram {
    fn run(&self, run: &mut Run<'_>) {
        // A panic elsewhere with the lock held cannot leave the host half-changed: take it as is.
        let mut host = self.host.lock().unwrap_or_else(|p| p.into_inner());
        host.run(run);
    }
}

/// Why an instance stopped or could not start, and the drop reason its frames count under.
struct Fault(String, VrDrop);

impl From<wasmi::Error> for Fault {
    fn from(e: wasmi::Error) -> Fault {
        let text = e.to_string();
        let reason = match e.as_trap_code() {
            Some(TrapCode::OutOfFuel) => VrDrop::ProgramFuel,
            Some(TrapCode::GrowthOperationLimited) => VrDrop::ProgramMemory,
            // An instance whose declared memory is beyond the limit fails to start without a trap code.
            _ if text.contains("memory") && text.contains("limit") => VrDrop::ProgramMemory,
            _ => VrDrop::ProgramTrap,
        };
        Fault(text, reason)
    }
}

impl Host {
    fn start(&mut self) -> Result<Live, Fault> {
        let trap = |m: String| Fault(m, VrDrop::ProgramTrap);
        let limits = StoreLimitsBuilder::new().memory_size(self.memory_bytes).trap_on_grow_failure(true).build();
        let state = State {
            limits,
            run: RunPtr::NONE,
            memory: None,
            interface_of_port: Arc::clone(&self.interface_of_port),
            addrs: Vec::with_capacity(MAX_BATCH),
            hops: Vec::with_capacity(MAX_BATCH),
            routes: Vec::with_capacity(MAX_BATCH),
            tables: self.tables.clone(),
            held: HeldTables::NONE,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_fuel(START_FUEL)?;
        // `pearl_init` may fill its tables.
        let mut held = (!self.tables.is_empty()).then(|| self.tables.lock());
        if let Some(h) = held.as_mut() {
            store.data_mut().held = HeldTables::of(h);
        }
        let instance = self.linker.instantiate_and_start(&mut store, &self.module)?;
        let memory = instance.get_memory(&store, "memory").ok_or_else(|| trap("exports no memory named \"memory\"".into()))?;
        // The imports need it from here on: `pearl_init` may call them.
        store.data_mut().memory = Some(memory);
        let export = |name: &str| trap(format!("exports no function {name} of the plugin interface's type"));
        let area_fn = instance.get_typed_func::<(), i32>(&store, "pearl_area").map_err(|_| export("pearl_area() -> i32"))?;
        let size_fn = instance.get_typed_func::<(), i32>(&store, "pearl_area_size").map_err(|_| export("pearl_area_size() -> i32"))?;
        let process = instance.get_typed_func::<i32, ()>(&store, "pearl_process").map_err(|_| export("pearl_process(i32)"))?;
        let (area, size) = (area_fn.call(&mut store, ())? as u32 as usize, size_fn.call(&mut store, ())? as u32 as usize);
        if size < FRAMES_AT + 64 + HEADROOM || area.checked_add(size).is_none_or(|end| end > memory.data_size(&store)) {
            return Err(trap(format!("its batch area ({size} bytes at {area}) is not inside its memory or too small for one frame")));
        }
        if let Ok(init) = instance.get_typed_func::<(i32, i32), i32>(&store, "pearl_init") {
            let config = &self.config;
            if FRAMES_AT + config.len() > size {
                return Err(trap(format!("plugin.config ({} bytes as JSON) does not fit its batch area", config.len())));
            }
            memory.data_mut(&mut store)[area + FRAMES_AT..area + FRAMES_AT + config.len()].copy_from_slice(config);
            if init.call(&mut store, ((area + FRAMES_AT) as i32, config.len() as i32))? != 0 {
                return Err(trap("pearl_init refused plugin.config".into()));
            }
        }
        store.data_mut().held = HeldTables::NONE;
        drop(held);
        Ok(Live { store, memory, process, area, size })
    }

    fn run(&mut self, run: &mut Run<'_>) {
        let now = Instant::now();
        if self.live.is_none() {
            if !self.backoff.may_start(now) {
                return run.decide_from(0, Decision::Drop(VrDrop::ProgramDown));
            }
            match self.start() {
                Ok(live) => {
                    self.live = Some(live);
                    self.backoff.started(now);
                }
                Err(f) => return self.fault(run, 0, f, now),
            }
        }
        let time_ns = now.duration_since(self.epoch).as_nanos() as u64;
        let mut i = 0;
        while i < run.len() {
            let live = self.live.as_mut().expect("started above");
            let mem = live.memory.data_mut(&mut live.store);
            let n = area::pack(
                &mut mem[live.area..live.area + live.size],
                &run.packets[i..],
                &self.interface_of_port,
                time_ns,
                &mut self.slots,
            );
            if n == 0 {
                run.decide(i, Decision::Drop(VrDrop::Program));
                i += 1;
                continue;
            }
            let tables = &self.tables;
            let called = live.store.set_fuel(self.fuel_per_packet.saturating_mul(n as u64).saturating_add(CALL_FUEL)).and_then(|()| {
                // Held for the whole call: the owner's API requests wait a batch at most.
                let mut held = (!tables.is_empty()).then(|| tables.lock());
                let state = live.store.data_mut();
                state.run = RunPtr(std::ptr::from_ref::<Run<'_>>(run).cast());
                state.held = held.as_mut().map_or(HeldTables::NONE, HeldTables::of);
                let r = live.process.call(&mut live.store, n as i32);
                let state = live.store.data_mut();
                (state.run, state.held) = (RunPtr::NONE, HeldTables::NONE);
                r
            });
            if let Err(e) = called {
                return self.fault(run, i, e.into(), now);
            }
            let area = &live.memory.data(&live.store)[live.area..live.area + live.size];
            for (k, &slot) in self.slots.iter().enumerate() {
                let d = area::verdict(area, k, slot, &mut run.packets[i + k], &self.ports);
                run.decide(i + k, d);
            }
            i += n;
        }
    }

    /// The instance stopped on packet `from`'s batch: it and the rest of the run are dropped
    /// by the fault's reason, and the program waits its back-off.
    fn fault(&mut self, run: &mut Run<'_>, from: usize, f: Fault, now: Instant) {
        self.live = None;
        self.backoff.fault(now);
        tracing::warn!("VR {:?}: its plugin stopped ({}: {}); it restarts after a back-off", self.vr, f.1.name(), f.0);
        run.decide_from(from, Decision::Drop(f.1));
    }
}

/// `route_v4(addr, out) -> i32`: the VR's route to `addr` (see `pearl_plugin_sdk::abi`).
fn route_v4(caller: Caller<'_, State>, addr: i32, out: i32) -> Result<i32, wasmi::Error> {
    answer(caller, out, |run| run.fib_v4(addr as u32))
}

/// `route_v6(addr, out) -> i32`: the same for the 16-byte IPv6 address at `addr`.
fn route_v6(caller: Caller<'_, State>, addr: i32, out: i32) -> Result<i32, wasmi::Error> {
    let memory = memory_of(&caller)?;
    let at = addr as u32 as usize;
    let Some(bytes) = memory.data(&caller).get(at..at + 16) else {
        return Err(wasmi::Error::new(format!("route_v6: 16 bytes at {at} are outside the plugin's memory")));
    };
    let addr = u128::from_be_bytes(bytes.try_into().expect("16 bytes"));
    answer(caller, out, |run| run.fib_v6(addr))
}

/// `route_v4_batch(addrs, count, out)`: `count` answers of `ROUTE_ANSWER_LEN` bytes at `out`.
fn route_v4_batch(mut caller: Caller<'_, State>, addrs: i32, count: i32, out: i32) -> Result<(), wasmi::Error> {
    let (memory, n) = (memory_of(&caller)?, (count as u32 as usize).min(MAX_BATCH));
    let (at, to) = (addrs as u32 as usize, out as u32 as usize);
    let (data, state) = memory.data_and_store_mut(&mut caller);
    let (Some(input), true) = (data.get(at..at + 4 * n), to + ROUTE_ANSWER_LEN * n <= data.len()) else {
        return Err(wasmi::Error::new(format!(
            "route_v4_batch: {n} addresses at {at} or their answers at {to} are outside the plugin's memory"
        )));
    };
    // SAFETY: set only for the duration of the plugin's call, on this thread.
    let Some(run) = (unsafe { state.run.get() }) else {
        data[to..to + ROUTE_ANSWER_LEN * n]
            .chunks_exact_mut(ROUTE_ANSWER_LEN)
            .for_each(|a| a[..4].copy_from_slice(&ROUTE_NONE.to_le_bytes()));
        return Ok(());
    };
    state.addrs.clear();
    state.addrs.extend(input.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])));
    run.fib_v4_batch(&state.addrs, &mut state.hops, &mut state.routes);
    for (route, a) in state.routes.iter().zip(data[to..to + ROUTE_ANSWER_LEN * n].chunks_exact_mut(ROUTE_ANSWER_LEN)) {
        let (code, macs) = code_of(*route, &state.interface_of_port);
        a[..4].copy_from_slice(&code.to_le_bytes());
        if let Some((dst, src)) = macs {
            a[4..10].copy_from_slice(&dst);
            a[10..16].copy_from_slice(&src);
        }
    }
    Ok(())
}

/// What the VR's table says (`lookup`), as a route import answers: the interface and 12 bytes
/// of MACs at `out`, or a negative code.
fn answer(mut caller: Caller<'_, State>, out: i32, lookup: impl FnOnce(&Run<'_>) -> Option<Adjacency>) -> Result<i32, wasmi::Error> {
    let state = caller.data();
    // SAFETY: set only for the duration of the plugin's call, on this thread.
    let Some(run) = (unsafe { state.run.get() }) else { return Ok(ROUTE_NONE) };
    let (answer, macs) = code_of(lookup(run), &state.interface_of_port);
    if let Some((dst, src)) = macs {
        let memory = state.memory.ok_or_else(no_memory)?;
        let at = out as u32 as usize;
        let Some(slot) = memory.data_mut(&mut caller).get_mut(at..at + 12) else {
            return Err(wasmi::Error::new(format!("route: 12 bytes at {at} are outside the plugin's memory")));
        };
        slot[..6].copy_from_slice(&dst);
        slot[6..].copy_from_slice(&src);
    }
    Ok(answer)
}

/// `table_find(name, len) -> i32`: the handle of the table declared as `name`.
fn table_find(caller: Caller<'_, State>, name: i32, len: i32) -> Result<i32, wasmi::Error> {
    let memory = memory_of(&caller)?;
    let (at, n) = (name as u32 as usize, len as u32 as usize);
    let Some(name) = memory.data(&caller).get(at..at.saturating_add(n)) else {
        return Err(wasmi::Error::new(format!("table_find: {n} bytes at {at} are outside the plugin's memory")));
    };
    Ok(caller.data().tables.find(name).map_or(TABLE_NONE, |t| t as i32))
}

/// The tables held for the call in progress and the plugin's memory, for a table import.
fn with_tables<T>(
    mut caller: Caller<'_, State>,
    f: impl FnOnce(&mut [tables::Table], &mut [u8]) -> Result<T, tables::TableCallError>,
) -> Result<T, wasmi::Error> {
    let memory = memory_of(&caller)?;
    let (data, state) = memory.data_and_store_mut(&mut caller);
    // SAFETY: set only for the duration of the plugin's call, on this thread, under the lock.
    let Some(tables) = (unsafe { state.held.get() }) else {
        return Err(wasmi::Error::new("the plugin declares no tables (plugin.tables)"));
    };
    f(tables, data).map_err(|e| wasmi::Error::new(e.to_string()))
}

/// `table_get(table, key, key_len, out, cap) -> i32` (see `pearl_plugin_sdk::abi`).
fn table_get(caller: Caller<'_, State>, t: i32, key: i32, key_len: i32, out: i32, cap: i32) -> Result<i32, wasmi::Error> {
    with_tables(caller, |tables, memory| tables::import_get(tables, memory, (t, key, key_len), out, cap))
}

fn table_set(caller: Caller<'_, State>, t: i32, key: i32, key_len: i32, value: i32, value_len: i32) -> Result<i32, wasmi::Error> {
    with_tables(caller, |tables, memory| tables::import_set(tables, memory, (t, key, key_len), value, value_len))
}

fn table_remove(caller: Caller<'_, State>, t: i32, key: i32, key_len: i32) -> Result<i32, wasmi::Error> {
    with_tables(caller, |tables, memory| tables::import_remove(tables, memory, (t, key, key_len)))
}

/// The plugin's memory, for an import; a plugin whose start function calls one has none yet.
fn memory_of(caller: &Caller<'_, State>) -> Result<Memory, wasmi::Error> {
    caller.data().memory.ok_or_else(no_memory)
}

fn no_memory() -> wasmi::Error {
    wasmi::Error::new("the plugin called pearld before its memory was known (from its start function?)")
}
