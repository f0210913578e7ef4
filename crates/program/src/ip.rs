//! The IP router (code options `ipv4`, `ipv6`, `ip`): what RFC 1812 and RFC 8200 let a router
//! forward is routed by destination in the VR's FIB, or in the table of the VR a leaked prefix
//! comes from; the rest goes to the VR's kernel (ARP, neighbour discovery, multicast, options,
//! a family the VR does not route) or is dropped by reason.

use super::{Decision, Run, VrProgram};
use crate::leak::LeakTable;
use crate::punt::is_neighbor_discovery;
use crate::reasons::Exception;
use crate::validity::{check_ipv4, check_ipv6};
use pearl_wire::{Field, FlowKey, L3Info, L3Kind};
use std::sync::{Arc, LazyLock};

pub struct IpRouter {
    pub v4: bool,
    pub v6: bool,
    /// Prefixes whose packets other VRs' tables forward (`leak:`); none for most VRs, whose
    /// packets then read nothing beyond the router itself.
    pub leaks: Option<Arc<LeakTable>>,
}

impl IpRouter {
    /// The router of the families `v4`, `v6`, importing `leaks`.
    pub fn importing(v4: bool, v6: bool, leaks: Arc<LeakTable>) -> Arc<dyn VrProgram> {
        match leaks.is_empty() {
            true => IpRouter::shared(v4, v6),
            false => Arc::new(IpRouter { v4, v6, leaks: Some(leaks) }),
        }
    }

    /// The router of the families `v4`, `v6` for VRs that import no prefix, one for all of
    /// them: with thousands of VRs, a router each would be one more cold line per packet.
    pub fn shared(v4: bool, v6: bool) -> Arc<dyn VrProgram> {
        static ROUTERS: LazyLock<[Arc<IpRouter>; 4]> =
            LazyLock::new(|| [0, 1, 2, 3].map(|f| Arc::new(IpRouter { v4: f & 1 != 0, v6: f & 2 != 0, leaks: None })));
        ROUTERS[usize::from(v4) | usize::from(v6) << 1].clone()
    }
}

impl VrProgram for IpRouter {
    fn run(&self, run: &mut Run<'_>) {
        let vr = run.vr;
        for i in 0..run.len() {
            let (key, x) = (&run.keys[i], &run.info[i]);
            let d = match x.kind {
                _ if key.vlan() != 0 => Decision::Slow(Exception::VlanTagged),
                L3Kind::Arp => Decision::Slow(Exception::Arp),
                L3Kind::Other => Decision::Slow(Exception::NonIp),
                L3Kind::Ipv4 if !self.v4 => Decision::Slow(Exception::UnroutedFamily),
                L3Kind::Ipv6 if !self.v6 => Decision::Slow(Exception::UnroutedFamily),
                L3Kind::Ipv6 if is_neighbor_discovery(key) => Decision::Slow(Exception::NeighborDiscovery),
                _ if key.eth_dst()[0] & 1 != 0 || is_ip_multicast(key, x) => Decision::Slow(Exception::Multicast),
                L3Kind::Ipv4 if x.ipv4_options => Decision::Slow(Exception::Ipv4Options),
                L3Kind::Ipv6 if x.ipv6_hop_by_hop => Decision::Slow(Exception::Ipv6HopByHop),
                L3Kind::Ipv4 => {
                    let l3 = &run.packets[i].data()[x.l3_offset..];
                    let (src, dst) = (key.get(Field::IpSrc) as u32, key.get(Field::IpDst) as u32);
                    match check_ipv4(l3, usize::from(l3[0] & 0xf) * 4, src, dst) {
                        Some(refusal) => refusal.into(),
                        None => {
                            let table = self.leaks.as_ref().and_then(|l| l.source_v4(dst)).unwrap_or(vr);
                            run.route_v4(i, table);
                            // Always: a VR's own address is never a source it forwards from.
                            run.check_source_v4(i);
                            continue;
                        }
                    }
                }
                L3Kind::Ipv6 => match check_ipv6(key.get(Field::IpSrc), key.get(Field::IpDst)) {
                    Some(refusal) => refusal.into(),
                    None => {
                        let dst = key.get(Field::IpDst);
                        let table = self.leaks.as_ref().and_then(|l| l.source_v6(dst)).unwrap_or(vr);
                        run.route_v6(i, table);
                        run.check_source_v6(i);
                        continue;
                    }
                },
            };
            run.decide(i, d);
        }
    }
}

/// A multicast or limited-broadcast destination, whatever the MAC.
fn is_ip_multicast(key: &FlowKey, x: &L3Info) -> bool {
    let dst = key.get(Field::IpDst);
    match x.kind {
        L3Kind::Ipv4 => (dst as u32) >> 28 == 0xe || dst as u32 == u32::MAX,
        L3Kind::Ipv6 => dst >> 120 == 0xff,
        _ => false,
    }
}
