//! The kernel side of one port: its two programs, loaded once, and attached only while the port
//! has offloaded flows, so that a port without them (a 64-byte flood, say) costs the kernel
//! nothing per frame.

use crate::bpf_sys;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

pub(super) struct PortHooks {
    /// The interface, and its index when the port was opened: a port whose interface was
    /// replaced since then offloads no more (its new sockets carry no filter).
    name: String,
    pub ifindex: u32,
    filter: OwnedFd,
    redirect: OwnedFd,
    /// Every worker's receive socket on the port (duplicates, so they outlive the workers).
    sockets: Vec<OwnedFd>,
    /// The tcx link while attached.
    link: Option<OwnedFd>,
}

impl PortHooks {
    pub fn new(name: &str, filter: OwnedFd, redirect: OwnedFd, sockets: Vec<OwnedFd>) -> io::Result<PortHooks> {
        Ok(PortHooks { name: name.to_string(), ifindex: ifindex(name)?, filter, redirect, sockets, link: None })
    }

    /// Whether the port's interface is still the one it was opened on.
    pub fn current(&self) -> bool {
        ifindex(&self.name).is_ok_and(|i| i == self.ifindex)
    }

    /// Attaches the filter to every receive socket, then the tcx program: all or nothing.
    pub fn attach(&mut self) -> io::Result<()> {
        if self.link.is_some() {
            return Ok(());
        }
        for (i, s) in self.sockets.iter().enumerate() {
            if let Err(e) = bpf_sys::attach_socket_filter(s, &self.filter) {
                self.sockets[..i].iter().for_each(detach_filter);
                return Err(e);
            }
        }
        match bpf_sys::link_create(&self.redirect, self.ifindex, bpf_sys::ATTACH_TCX_INGRESS, 0) {
            Ok(link) => {
                self.link = Some(link);
                Ok(())
            }
            Err(e) => {
                self.sockets.iter().for_each(detach_filter);
                Err(e)
            }
        }
    }

    pub fn detach(&mut self) {
        if self.link.take().is_some() {
            self.sockets.iter().for_each(detach_filter);
        }
    }
}

fn detach_filter(socket: &OwnedFd) {
    let zero: libc::c_int = 0;
    // SAFETY: a plain setsockopt; SO_DETACH_BPF takes (and ignores) an int.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_DETACH_FILTER,
            &zero as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// The index of interface `name` in this network namespace.
fn ifindex(name: &str) -> io::Result<u32> {
    let c = std::ffi::CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "an interface name with a NUL"))?;
    // SAFETY: a NUL-terminated string that outlives the call.
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(io::Error::last_os_error()),
        i => Ok(i),
    }
}
