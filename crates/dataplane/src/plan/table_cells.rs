//! Where each VR's table cells and program state are, by VR id, in one dense array. A packet
//! reaches its VR's routes through the view, then the routes' cell, then the routes: three
//! misses in a row when thousands of VRs make each packet's VR cold. The cells' addresses never
//! change while a plan runs, so a batch starts loading the cells together with the views, not
//! once the views have arrived; and at 40 bytes a VR this array stays in cache where the
//! views, a line each, cannot. Each VR's weight for a worker's time is here too: a worker reads
//! every VR's at the end of each 10 ms window, which from the view would be a miss apiece.

use crate::prefetch::prefetch_bytes;
use crate::vr::VrView;
use pearl_wire::L3Kind;
use std::sync::Arc;

#[derive(Clone, Copy, Default)]
struct Cells {
    fib4: usize,
    fib6: usize,
    adjacencies: usize,
    program: usize,
    share: u64,
}

#[derive(Default)]
pub struct TableCells(Vec<Cells>);

impl TableCells {
    /// The cells of `views` (`[vr id]`); only ever prefetched, never read through.
    pub fn of(views: &[Option<VrView>]) -> TableCells {
        TableCells(
            views
                .iter()
                .map(|v| match v {
                    Some(v) => Cells {
                        fib4: v.fib4.cell_address(),
                        fib6: v.fib6.cell_address(),
                        adjacencies: Arc::as_ptr(&v.adjacencies) as usize,
                        program: Arc::as_ptr(&v.program) as *const u8 as usize,
                        share: v.facts.share,
                    },
                    None => Cells::default(),
                })
                .collect(),
        )
    }

    /// VR `vr`'s weight against the others for a worker's time (`VrFacts::share`); 1 for a VR
    /// the plan lacks.
    #[inline]
    pub fn share(&self, vr: u16) -> u64 {
        self.0.get(vr as usize).filter(|c| c.program != 0).map_or(1, |c| c.share)
    }

    /// Starts loading VR `vr`'s cell of the routes of a packet of `kind`, its next hops' cell
    /// and the line its program's state starts on (all the IP router reads).
    #[inline]
    pub fn prefetch(&self, vr: u16, kind: L3Kind) {
        let Some(c) = self.0.get(vr as usize).filter(|c| c.program != 0) else { return };
        match kind {
            L3Kind::Ipv4 => prefetch_bytes(c.fib4 as *const u8, 1),
            L3Kind::Ipv6 => prefetch_bytes(c.fib6 as *const u8, 1),
            L3Kind::Arp | L3Kind::Other => {}
        }
        prefetch_bytes(c.adjacencies as *const u8, 1);
        prefetch_bytes(c.program as *const u8, 1);
    }
}
