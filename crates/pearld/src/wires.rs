//! The node's wires (its nets' links between VRs): each worker opens both ends of every wire
//! for itself (`ports::open`, once per port and worker), the first end opened making the pair
//! and keeping the other for its port's turn; a link's carrier and losses are one
//! [`WireState`] whichever worker forwards, kept by either end's port name for `link set`.

use pearl_control::{Config, ConfigError};
use pearl_dataplane::port::{wire, Port, WireEnd, WireState};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Default)]
struct Wires {
    /// (port, worker) → the end made with its peer, not opened yet.
    waiting: HashMap<(String, usize), WireEnd>,
    /// Port name → its link's state.
    states: HashMap<String, Arc<WireState>>,
}

fn wires() -> &'static Mutex<Wires> {
    static WIRES: OnceLock<Mutex<Wires>> = OnceLock::new();
    WIRES.get_or_init(Mutex::default)
}

/// Worker `worker`'s end of wire port `port`.
pub fn open(config: &Config, port: usize, worker: usize) -> Result<Box<dyn Port>, ConfigError> {
    let p = &config.ports[port];
    let mut w = wires().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(end) = w.waiting.remove(&(p.name.clone(), worker)) {
        return Ok(Box::new(end));
    }
    let Some(peer) = config.ports.iter().position(|o| o.name == p.interface) else {
        return Err(ConfigError::at(format!("ports[{port}].interface"), format!("no wire port {:?}", p.interface)));
    };
    let state = Arc::clone(w.states.entry(p.name.clone()).or_default());
    w.states.insert(p.interface.clone(), Arc::clone(&state));
    let [mine, theirs] = wire([port as u16, peer as u16], state);
    w.waiting.insert((p.interface.clone(), worker), theirs);
    Ok(Box::new(mine))
}

/// The state of the link whose wire has port `port` at one end, once a worker opened it.
pub fn state(port: &str) -> Option<Arc<WireState>> {
    wires().lock().unwrap_or_else(|e| e.into_inner()).states.get(port).cloned()
}
