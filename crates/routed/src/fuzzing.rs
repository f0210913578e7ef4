//! The netlink decoding routed does, reachable from the fuzz target (`fuzz/fuzz_targets/netlink.rs`):
//! a datagram's messages applied to a kernel state as the reactor applies them.

use crate::state::KernelState;
use pearl_netlink::message::messages;

/// Applies every message of `datagram` to a fresh kernel state, as notifications or (`dumping`)
/// as a dump, stopping at the first that does not decode; returns how many did.
pub fn apply_netlink_datagram(datagram: &[u8], dumping: bool) -> usize {
    let mut state = KernelState::new(Vec::new());
    let mut applied = 0;
    for m in messages(datagram) {
        let Ok(m) = m else { break };
        if state.handle(&m, dumping).is_err() {
            break;
        }
        applied += 1;
    }
    applied
}
