//! One pearld per stored state (state directory and configuration file), API socket and port
//! interface: each is claimed with an
//! advisory lock (flock) held for pearld's life, which the kernel releases however pearld
//! ends, so a crashed pearld never blocks the next. A second pearld is refused before it
//! touches anything, and the first goes on unharmed. The lock file holds the holder's pid,
//! for the message.

use pearl_control::{Config, Driver};
use pearl_netlink::link::attached_xdp;
use pearl_netlink::socket::NlSocket;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where the port interfaces' locks are: shared by every pearld on the host, whatever its
/// state directory and socket. A lock file stays when released (removing it would race with
/// a pearld taking it).
const PORT_LOCKS: &str = "/run/pearl/interfaces";

/// The locks held; released when dropped (or pearld ends).
pub struct Claims {
    _files: Vec<File>,
}

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// PATH: ERROR (the lock file could not be opened or written)
    #[error("{}: {error}", .path.display())]
    File { path: PathBuf, error: std::io::Error },
    /// another pearld (pid PID) holds it (PATH)
    #[error("another pearld (pid {pid}) holds it ({})", .path.display())]
    Held { pid: String, path: PathBuf },
}

/// Why this pearld may not take its node's stored state, its API socket or a port.
#[derive(Debug, thiserror::Error)]
pub enum TakenError {
    /// --state DIR: ERROR (the directory could not be made)
    #[error("--state {dir}: {error}")]
    StateDir { dir: String, error: std::io::Error },
    /// --state DIR: the stored state of CONFIG: WHY
    #[error("--state {dir}: the stored state of {config}: {why}")]
    State { dir: String, config: String, why: ClaimError },
    /// --api SOCKET: ERROR (its directory could not be made)
    #[error("--api {socket}: {error}")]
    ApiDir { socket: String, error: std::io::Error },
    /// --api SOCKET: WHY
    #[error("--api {socket}: {why}")]
    Api { socket: String, why: ClaimError },
    /// PATH: ERROR (the port locks' directory, or pearld's own namespace, could not be read)
    #[error("{path}: {error}")]
    Locks { path: &'static str, error: std::io::Error },
    /// ports[N].interface: INTERFACE is driven by WHY
    #[error("ports[{n}].interface: {interface} is driven by {why}")]
    Port { n: usize, interface: String, why: ClaimError },
    /// ports[N].interface: INTERFACE is driven by another program: an XDP program (PROGRAM) is
    /// attached to it, which sees its frames before pearld would; detach it or choose another
    #[error(
        "ports[{n}].interface: {interface} is driven by another program: an XDP program ({program}) is attached to it, which \
         sees its frames before pearld would; detach it (`ip link set dev {interface} xdp off`) or choose another interface"
    )]
    Xdp { n: usize, interface: String, program: String },
}

/// Claims `path`, or says which pearld holds it.
fn claim(path: &Path) -> Result<File, ClaimError> {
    let at = |error| ClaimError::File { path: path.to_path_buf(), error };
    let mut file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(at)?;
    if file.try_lock().is_err() {
        let mut pid = String::new();
        let _ = file.read_to_string(&mut pid);
        return Err(ClaimError::Held { pid: pid.trim().to_string(), path: path.to_path_buf() });
    }
    let written = file.set_len(0).and_then(|()| file.rewind()).and_then(|()| write!(file, "{}", std::process::id()));
    written.map_err(at)?;
    Ok(file)
}

/// Claims the stored state of `config_path` in `state_dir` (the state of another
/// configuration file there is another pearld's to keep) and the API socket.
pub fn claim_node(state_dir: &str, config_path: &str, api_socket: &str) -> Result<Claims, TakenError> {
    let dir = || state_dir.to_string();
    let socket = || api_socket.to_string();
    std::fs::create_dir_all(state_dir).map_err(|error| TakenError::StateDir { dir: dir(), error })?;
    let lock = crate::store::lock_path(Path::new(state_dir), Path::new(config_path));
    let state = claim(&lock).map_err(|why| TakenError::State { dir: dir(), config: config_path.to_string(), why })?;
    if let Some(parent) = Path::new(api_socket).parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|error| TakenError::ApiDir { socket: socket(), error })?;
    }
    let api = claim(Path::new(&format!("{api_socket}.lock"))).map_err(|why| TakenError::Api { socket: socket(), why })?;
    Ok(Claims { _files: vec![state, api] })
}

/// Claims every port's interface (pcap files and loopback-only drivers included: two pearlds
/// reading one file are as wrong as two on one link).
pub fn claim_ports(config: &Config) -> Result<Claims, TakenError> {
    std::fs::create_dir_all(PORT_LOCKS).map_err(|error| TakenError::Locks { path: PORT_LOCKS, error })?;
    // An interface name is unique only in its network namespace: the lock names both.
    let own_ns = "/proc/self/ns/net";
    let netns = std::fs::metadata(own_ns).map(|m| m.ino()).map_err(|error| TakenError::Locks { path: own_ns, error })?;
    let mut held = Vec::new();
    let mut claimed = std::collections::HashSet::new();
    for (n, port) in config.ports.iter().enumerate() {
        let interface = || port.interface.clone();
        let path = PathBuf::from(PORT_LOCKS).join(format!("{netns}-{}", port.interface.replace('/', "%")));
        // Tunnel ports share their underlay device: one claim of it is this pearld's.
        if claimed.insert(path.clone()) {
            held.push(claim(&path).map_err(|why| TakenError::Port { n, interface: interface(), why })?);
        }
        if matches!(port.driver, Driver::AfPacket | Driver::AfXdp) {
            if let Some(program) = xdp_program_on(&port.interface) {
                return Err(TakenError::Xdp { n, interface: interface(), program });
            }
        }
    }
    Ok(Claims { _files: held })
}

/// The XDP program attached to `interface`, named as `ip link` names it, if one is. No pearld
/// leaves one behind (an AF_XDP port's goes with its socket), so one there is another program's.
fn xdp_program_on(interface: &str) -> Option<String> {
    let ifindex = crate::netconf::ifindex(interface).ok()?;
    let mut rtnl = NlSocket::open(0, 0, false).ok()?;
    let xdp = rtnl.link(ifindex, attached_xdp).ok()?.ok()??;
    Some(xdp.prog_id.map_or_else(|| "attached".to_string(), |id| format!("id {id}")))
}
