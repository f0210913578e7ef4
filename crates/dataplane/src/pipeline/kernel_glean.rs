//! A kernel or shared VR's frames all go to its kernel, which forwards them; but frames it
//! would forward to a neighbour not resolved yet (RFC 6583's exhaustion flood, thc-ipv6's
//! ndpexhaust26) filled the VR's slow-path channel and took its resolved flows down with them
//! (61 % of a ping flow kept). The VR's tables mirror its kernel's routes and neighbours
//! (pearl-routed), so they say what a fast VR's lookup says: such frames get the same bound
//! (`unresolved.rs`) before they are copied anywhere, and the rest goes on as before.

use super::action::Actions;
use super::views::{next_hops_of, present};
use crate::counters::{Exception, VrDrop};
use crate::output::OutputSink;
use crate::packet::Packet;
use pearl_tables::nexthop::Adjacency;
use pearl_wire::{Field, FlowKey, L3Info, L3Kind};

impl<O: OutputSink> Actions<'_, '_, O> {
    /// `Exception::KernelVr`: to the VR's kernel, unless bound for an unresolved neighbour
    /// beyond the unresolved bound.
    #[inline]
    pub(super) fn kernel_vr(&mut self, p: Packet, key: &FlowKey, x: &L3Info, vr: u16) {
        if let Some(port) = self.glean_port(key, x, vr) {
            if !self.unresolved_admits(vr, port, key) {
                return self.drop(p, vr, VrDrop::UnresolvedPoliced);
            }
        }
        self.slow(p, key, vr, Exception::KernelVr);
    }

    /// The port of the unresolved neighbour the VR's kernel would forward this frame to, if
    /// that is what it would do (a frame that expires there is answered, not forwarded).
    #[inline]
    fn glean_port(&mut self, key: &FlowKey, x: &L3Info, vr: u16) -> Option<u16> {
        if x.ttl <= 1 {
            return None;
        }
        let view = present(self.vrs, vr);
        let nh = match x.kind {
            L3Kind::Ipv4 => view.fib4.lookup(self.guard, key.get(Field::IpDst) as u32),
            L3Kind::Ipv6 => view.fib6.lookup(self.guard, key.get(Field::IpDst)),
            L3Kind::Arp | L3Kind::Other => None,
        }?;
        match next_hops_of(self.vrs, self.guard, &mut self.next_hops, vr).resolve(nh, key) {
            Some(&Adjacency::Glean { port }) => Some(port),
            _ => None,
        }
    }
}
