//! The `reflect` code option: every unicast frame addressed to the VR goes back out of the port
//! it came in by, its MACs swapped, as it stands otherwise (a loopback for testing a link or a
//! traffic generator, as `testpmd --forward-mode=macswap` is). What the VR's kernel needs to be
//! reachable (ARP, multicast and broadcast, among them IPv6 neighbour discovery) goes there.

use super::{Decision, Run, VrProgram};
use crate::reasons::Exception;
use pearl_wire::{EthernetFrame, L3Kind};

pub struct Reflect;

impl VrProgram for Reflect {
    fn run(&self, run: &mut Run<'_>) {
        for i in 0..run.len() {
            let (key, x) = (&run.keys[i], &run.info[i]);
            let d = match x.kind {
                L3Kind::Arp => Decision::Slow(Exception::Arp),
                _ if key.eth_dst()[0] & 1 != 0 => Decision::Slow(Exception::Multicast),
                L3Kind::Ipv4 | L3Kind::Ipv6 | L3Kind::Other => {
                    let packet = &mut run.packets[i];
                    let mut eth = EthernetFrame::new_unchecked(packet.data_mut());
                    let (src, dst) = (eth.src_addr(), eth.dst_addr());
                    eth.set_src_addr(dst);
                    eth.set_dst_addr(src);
                    Decision::Send { port: packet.in_port }
                }
            };
            run.decide(i, d);
        }
    }
}
