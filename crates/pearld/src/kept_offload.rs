//! Flow offload's kernel links across a restart: a stopping pearld leaves them with the TAP
//! holder (the offloaded flows forward on while no pearld runs); the next one releases them once
//! its own programs are attached.

use crate::holder::Holder;
use pearl_control::Config;

/// The holder's key of the flow offload link a stopped pearld left on interface `ifindex`
/// ('#' is in no VR's name, so no TAP's key).
pub fn offload_key(ifindex: u32) -> String {
    format!("#tcx/{ifindex}")
}

/// Detaches the flow offload programs a stopped pearld left on this node's ports: this one
/// forwards now, its own programs attached, and the flows they held come back through its fast
/// path and are offloaded again.
pub fn release_offload_links(holder: &Holder, config: &Config) {
    for port in &config.ports {
        let Ok(name) = std::ffi::CString::new(port.interface.as_str()) else { continue };
        // SAFETY: a NUL-terminated name; 0 when there is no such interface.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            continue;
        }
        let key = offload_key(ifindex);
        if let Ok(Some(link)) = holder.get(&key) {
            drop(link);
            if let Err(e) = holder.delete(&key) {
                tracing::warn!("flow offload: the program a stopped pearld left on {}: {e}", port.interface);
            }
        }
    }
}
