//! The sources of packets about to be forwarded: martians and uRPF.

use super::lookup::{group_by_vr, lookup_groups};
use super::views::{cell_of, next_hops_of, present};
use super::Pipeline;
use crate::counters::VrDrop;
use crate::packet::Packet;
use crate::program::Decision;
use crate::vr::Urpf;
use pearl_lookup::fib::MISS;
use pearl_lookup::rcu::ReadGuard;
use pearl_tables::nexthop::{NextHopTable, SourceRoute};
use pearl_tables::LocalSources;
use pearl_wire::Field;

impl Pipeline {
    /// Looks up the sources of packets on their way to be forwarded: a source that is one of
    /// the VR's own addresses is a martian (as Linux's `fib_validate_source` has it), and an
    /// interface with `urpf` wants the source routed back through it (strict) or at all
    /// (loose), RFC 3704.
    pub(super) fn source_stage(&mut self, guard: &ReadGuard<'_>, batch: &[Packet]) {
        let s = &mut self.scratch;
        for v6 in [false, true] {
            let jobs = if v6 { &mut s.lookups.src6 } else { &mut s.lookups.src4 };
            let (vrs, keys, decisions) = (&self.vrs, &s.keys, &mut s.decisions);
            let mut local: Option<(u16, &LocalSources)> = None;
            // Where the interface asks for uRPF, the source is looked up. Elsewhere an IPv4
            // source is checked against the VR's own addresses, from the set its tables' writer
            // keeps while it can (Linux's address-hash check), and an IPv6 one not at all.
            jobs.retain(|&(vr, i)| {
                if !matches!(decisions[i as usize], Decision::Forward { .. }) {
                    return false;
                }
                if present(vrs, vr).urpf(batch[i as usize].in_port) != Urpf::Off {
                    return true;
                }
                if v6 {
                    return false;
                }
                let src = keys[i as usize].get(Field::IpSrc) as u32;
                match cell_of(vrs, guard, &mut local, vr, |v| &v.facts.local_sources).is_local(src) {
                    Some(true) => {
                        decisions[i as usize] = Decision::Drop(VrDrop::MartianSource);
                        false
                    }
                    Some(false) => false,
                    None => true,
                }
            });
            if jobs.is_empty() {
                continue;
            }
            group_by_vr(jobs);
            if v6 {
                s.addrs6.clear();
                s.addrs6.extend(jobs.iter().map(|&(_, i)| s.keys[i as usize].get(Field::IpSrc)));
                lookup_groups(guard, jobs, &s.addrs6, &mut s.hops, |vr| &present(&self.vrs, vr).fib6);
            } else {
                s.addrs4.clear();
                s.addrs4.extend(jobs.iter().map(|&(_, i)| s.keys[i as usize].get(Field::IpSrc) as u32));
                lookup_groups(guard, jobs, &s.addrs4, &mut s.hops, |vr| &present(&self.vrs, vr).fib4);
            }
            let mut next_hops: Option<(u16, &NextHopTable)> = None;
            // A source's route is another entry than its destination's: spread over many VRs,
            // each is cold, and they are asked for together before any is read.
            if jobs.first().map(|j| j.0) != jobs.last().map(|j| j.0) {
                for (&(vr, _), &nh) in jobs.iter().zip(s.hops.iter()) {
                    if nh != MISS {
                        next_hops_of(&self.vrs, guard, &mut next_hops, vr).prefetch(nh);
                    }
                }
            }
            for (&(vr, i), &nh) in jobs.iter().zip(s.hops.iter()) {
                let port = batch[i as usize].in_port;
                let route =
                    if nh == MISS { SourceRoute::None } else { next_hops_of(&self.vrs, guard, &mut next_hops, vr).source_route(nh, port) };
                let urpf = present(&self.vrs, vr).urpf(port);
                let refused = match (route, urpf) {
                    (SourceRoute::Local, _) => Some(VrDrop::MartianSource),
                    (_, Urpf::Off) => None,
                    (SourceRoute::None, _) => Some(VrDrop::Urpf),
                    (SourceRoute::Via { through_port: false }, Urpf::Strict) => Some(VrDrop::Urpf),
                    (SourceRoute::Via { .. }, _) => None,
                };
                if let Some(d) = refused {
                    s.decisions[i as usize] = Decision::Drop(d);
                }
            }
        }
    }
}
