//! The id by which the reactor's namespace (pearld's) knows a VR's namespace. The reactor's one
//! notification socket hears a namespace only once it has such an id, and tells namespaces
//! apart by it. `ip netns add` gives none; the kernel gives one when a link moves between the
//! two; otherwise routed asks for one.

use pearl_netlink::consts::NETNSA_NSID_NOT_ASSIGNED;
use pearl_netlink::socket::NlSocket;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// The id of namespace `/run/netns/NETNS`, given one if it has none yet. Call it from the
/// reactor's namespace.
pub fn id_of(netns: &str) -> io::Result<i32> {
    let path = format!("/run/netns/{netns}");
    let ns = File::open(&path).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
    let failed = |e: io::Error| io::Error::new(e.kind(), format!("the id of namespace {path}: {e}"));
    let mut socket = NlSocket::open(0, 0, false).map_err(failed)?;
    let mut buf = vec![0; 4096];
    let id = socket.namespace_id(ns.as_raw_fd(), false, &mut buf).map_err(failed)?;
    if id != NETNSA_NSID_NOT_ASSIGNED {
        return Ok(id);
    }
    match socket.namespace_id(ns.as_raw_fd(), true, &mut buf) {
        // Another thread gave it one meanwhile.
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
        other => {
            other.map_err(failed)?;
        }
    }
    match socket.namespace_id(ns.as_raw_fd(), false, &mut buf).map_err(failed)? {
        NETNSA_NSID_NOT_ASSIGNED => Err(failed(io::Error::other("the kernel gave none"))),
        id => Ok(id),
    }
}
