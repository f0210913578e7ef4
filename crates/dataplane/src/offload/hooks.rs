//! The kernel side of one port: its two programs, loaded once. The tcx program is attached as
//! soon as the offload starts, before any flow: attaching it takes 8–15 ms here (the kernel
//! waits out an RCU grace period), and a flow offered before it is attached kept going through
//! PEARL meanwhile. PEARL copies each super-packet, so its receive ring filled with the flow,
//! and the frames the kernel then forwarded overtook hundreds of older ones; the receiver asked
//! for them again, a burst of retransmits at the start of a bulk flow. Attached ahead, the
//! program costs each frame that is no offloaded flow's one array lookup while the port is
//! unarmed, and spares the host's stack the frames addressed to VRs (`programs`). The socket
//! filters, which attach in microseconds, follow the arming.

use crate::bpf_sys;
use crate::port::link::PortLink;
use crate::port::RxClass;
use std::io;
use std::os::fd::OwnedFd;

pub(super) struct PortHooks {
    /// The port's interface as it was opened: a port whose interface was replaced since then
    /// offloads no more (its new sockets carry no filter).
    interface: PortLink,
    /// The socket filter for each class of receive socket the port has.
    filters: Vec<(RxClass, OwnedFd)>,
    redirect: OwnedFd,
    /// Every worker's receive sockets on the port (duplicates, so they outlive the workers),
    /// with the frames each takes.
    sockets: Vec<(OwnedFd, RxClass)>,
    /// Whether the sockets carry the filter.
    filtering: bool,
    /// The tcx link, from the offload's start on.
    tcx: Option<OwnedFd>,
    /// Where a copy of the tcx link goes once attached, for pearld to keep across a restart.
    kept: KeptLinks,
}

/// Copies of the ports' tcx links, by interface index: kept by whoever outlives pearld, they
/// keep the offloaded flows forwarding while no pearld runs (`FlowOffload::links`).
pub type KeptLinks = std::sync::Arc<std::sync::Mutex<Vec<(u32, OwnedFd)>>>;

impl PortHooks {
    /// `filters` must hold one for the class of each of `sockets`.
    pub fn new(
        name: &str,
        filters: Vec<(RxClass, OwnedFd)>,
        redirect: OwnedFd,
        sockets: Vec<(OwnedFd, RxClass)>,
        kept: KeptLinks,
    ) -> io::Result<PortHooks> {
        let interface = PortLink::of(name).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no interface {name}")))?;
        Ok(PortHooks { interface, filters, redirect, sockets, filtering: false, tcx: None, kept })
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

    /// Attaches the filter to every receive socket, and the tcx program if it is not yet (it
    /// failed at the start): all or nothing (a tcx program attached before stays).
    pub fn attach(&mut self) -> io::Result<()> {
        if self.filtering {
            return Ok(());
        }
        for (i, (socket, class)) in self.sockets.iter().enumerate() {
            let filter = self.filters.iter().find(|(c, _)| c == class).map(|(_, f)| f);
            let attached = filter.ok_or_else(|| io::Error::other(format!("no socket filter for {class:?}")));
            if let Err(e) = attached.and_then(|f| bpf_sys::attach_socket_filter(socket, f)) {
                self.sockets[..i].iter().for_each(restore);
                return Err(e);
            }
        }
        if let Err(e) = self.attach_program() {
            self.sockets.iter().for_each(restore);
            return Err(e);
        }
        self.filtering = true;
        Ok(())
    }

    /// Attaches the tcx program if it is not yet.
    pub fn attach_program(&mut self) -> io::Result<()> {
        if self.tcx.is_none() {
            let link = bpf_sys::link_create(&self.redirect, self.ifindex(), bpf_sys::ATTACH_TCX_INGRESS, 0)?;
            if let Ok(copy) = link.try_clone() {
                self.kept.lock().unwrap_or_else(|e| e.into_inner()).push((self.ifindex(), copy));
            }
            self.tcx = Some(link);
        }
        Ok(())
    }

    /// Detaches the socket filters; the tcx program stays (see the top of this file).
    pub fn detach(&mut self) {
        if std::mem::take(&mut self.filtering) {
            self.sockets.iter().for_each(restore);
        }
    }
}

/// Gives a socket back its own filter, which keeps it to its class of frames.
fn restore((socket, class): &(OwnedFd, RxClass)) {
    if let Err(e) = class.restore(socket) {
        tracing::warn!("a receive socket kept the flow offload's filter ({e}): it still takes only its class of frames");
    }
}
