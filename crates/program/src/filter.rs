//! SPP's generic filter code option (`code: filter`): the VR's `match` rules, which the
//! classifier already matched to claim each frame for the VR, also say where the frame goes
//! (out of an interface with a next hop's MAC, to the VR's kernel, or nowhere). The rule a
//! frame matched travels in the classifier's verdict (`Verdict::rule`), so the program looks
//! up nothing.

use super::{Decision, Run, VrProgram};
use crate::punt::is_neighbor_discovery;
use crate::reasons::{Exception, VrDrop};
use pearl_control::{FilterAction, Mac, VrConfig};
use pearl_wire::{EthernetFrame, L3Kind};

pub struct FilterProgram {
    /// By the VR's `match` index.
    steps: Box<[Step]>,
}

#[derive(Clone, Copy)]
enum Step {
    Out { port: u16, src: Mac, dst: Option<Mac> },
    Slow,
    Drop,
}

impl FilterProgram {
    pub fn new(vr: &VrConfig) -> FilterProgram {
        let step = |a: Option<FilterAction>| match a {
            Some(FilterAction::Out { interface, mac }) => {
                let i = &vr.interfaces[interface];
                Step::Out { port: i.port as u16, src: i.mac, dst: mac }
            }
            Some(FilterAction::Slow) => Step::Slow,
            // The configuration gives every rule of a filter VR an action.
            Some(FilterAction::Drop) | None => Step::Drop,
        };
        FilterProgram { steps: vr.matches.iter().map(|m| step(m.action)).collect() }
    }
}

impl VrProgram for FilterProgram {
    fn run(&self, run: &mut Run<'_>) {
        for i in 0..run.len() {
            let d = match run.matched_rule(i).and_then(|r| self.steps.get(r)) {
                Some(&Step::Out { port, src, dst }) => {
                    let mut eth = EthernetFrame::new_unchecked(run.packets[i].data_mut());
                    eth.set_src_addr(src);
                    if let Some(dst) = dst {
                        eth.set_dst_addr(dst);
                    }
                    Decision::Send { port }
                }
                Some(Step::Slow) => Decision::Slow(Exception::Program),
                Some(Step::Drop) => Decision::Drop(VrDrop::Program),
                // Neighbours must resolve the VR's addresses whatever its rules say.
                None if run.info[i].kind == L3Kind::Arp => Decision::Slow(Exception::Arp),
                None if is_neighbor_discovery(&run.keys[i]) => Decision::Slow(Exception::NeighborDiscovery),
                None => Decision::Drop(VrDrop::FilterMiss),
            };
            run.decide(i, d);
        }
    }
}
