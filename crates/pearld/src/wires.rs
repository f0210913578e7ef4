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

#[cfg(test)]
mod tests {
    use super::*;
    use pearl_control::config_from_document;
    use pearl_dataplane::packet::PacketPool;
    use serde_json::json;

    #[test]
    fn each_worker_gets_both_ends_of_its_own_wire_and_a_link_has_one_state() {
        let wire = |name: &str, peer: &str| json!({"name": name, "interface": peer, "driver": "wire"});
        let doc = json!({"workers": 2, "ports": [wire("wa1", "wb1"), wire("wb1", "wa1")], "vrs": []});
        let config = config_from_document(&doc, std::path::Path::new("/")).unwrap();
        let mut pool = PacketPool::new(8);
        for worker in 0..2 {
            let mut a = open(&config, 0, worker).unwrap();
            let mut b = open(&config, 1, worker).unwrap();
            let mut frame = pool.take().unwrap();
            frame.fill(&[worker as u8; 60]);
            assert_eq!(a.tx_batch(&mut vec![frame], &mut pool).unwrap(), 1);
            let mut got = Vec::new();
            assert_eq!(b.rx_batch(&mut pool, &mut got, 8).unwrap(), 1, "worker {worker}'s frame at its own other end");
            assert_eq!((got[0].in_port, got[0].data()[0]), (1, worker as u8));
            pool.give_all(&mut got);
        }
        let state = state("wa1").unwrap();
        assert!(Arc::ptr_eq(&state, &super::state("wb1").unwrap()), "both ends, every worker: one link");
        let bad = json!({"ports": [wire("wa2", "wb2")], "vrs": []});
        let e = config_from_document(&bad, std::path::Path::new("/")).unwrap_err();
        assert_eq!(e.path, "ports[0].interface");
    }
}
