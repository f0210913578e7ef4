//! The kernel side of one port: its two programs, loaded once, and attached only while the port
//! has offloaded flows, so that a port without them (a 64-byte flood, say) costs the kernel
//! nothing per frame.

use crate::bpf_sys;
use crate::link::PortLink;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

pub(super) struct PortHooks {
    /// The port's interface as it was opened: a port whose interface was replaced since then
    /// offloads no more (its new sockets carry no filter).
    interface: PortLink,
    filter: OwnedFd,
    redirect: OwnedFd,
    /// Every worker's receive socket on the port (duplicates, so they outlive the workers).
    sockets: Vec<OwnedFd>,
    /// The tcx link while attached.
    tcx: Option<OwnedFd>,
}

impl PortHooks {
    pub fn new(name: &str, filter: OwnedFd, redirect: OwnedFd, sockets: Vec<OwnedFd>) -> io::Result<PortHooks> {
        let interface = PortLink::of(name).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no interface {name}")))?;
        Ok(PortHooks { interface, filter, redirect, sockets, tcx: None })
    }

    pub fn ifindex(&self) -> u32 {
        self.interface.ifindex()
    }

    /// Looks again whether the port's interface is gone (deleted, or replaced by another of
    /// its name); once gone, it stays gone.
    pub fn check(&mut self, now_ns: u64) {
        self.interface.check(now_ns);
    }

    pub fn is_gone(&self) -> bool {
        self.interface.is_gone()
    }

    /// Attaches the filter to every receive socket, then the tcx program: all or nothing.
    pub fn attach(&mut self) -> io::Result<()> {
        if self.tcx.is_some() {
            return Ok(());
        }
        for (i, s) in self.sockets.iter().enumerate() {
            if let Err(e) = bpf_sys::attach_socket_filter(s, &self.filter) {
                self.sockets[..i].iter().for_each(detach_filter);
                return Err(e);
            }
        }
        match bpf_sys::link_create(&self.redirect, self.ifindex(), bpf_sys::ATTACH_TCX_INGRESS, 0) {
            Ok(link) => {
                self.tcx = Some(link);
                Ok(())
            }
            Err(e) => {
                self.sockets.iter().for_each(detach_filter);
                Err(e)
            }
        }
    }

    pub fn detach(&mut self) {
        if self.tcx.take().is_some() {
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
