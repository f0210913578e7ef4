//! A VR's view and the cells behind it, as the stages read them.

use crate::vr::VrView;
use pearl_lookup::rcu::{RcuCell, ReadGuard};
use pearl_tables::nexthop::NextHopTable;

/// The view of a VR that `vr_stage` let through.
#[inline]
pub(super) fn present(vrs: &[Option<VrView>], vr: u16) -> &VrView {
    vrs[vr as usize].as_ref().expect("vr_stage keeps only verdicts of present VRs")
}

/// The next hops of `vr`, from `cached` when it holds them.
#[inline]
pub(super) fn next_hops_of<'g>(
    vrs: &'g [Option<VrView>],
    guard: &'g ReadGuard<'_>,
    cached: &mut Option<(u16, &'g NextHopTable)>,
    vr: u16,
) -> &'g NextHopTable {
    cell_of(vrs, guard, cached, vr, |v| &v.adjacencies)
}

/// What `cell` of `vr`'s view holds now, from `cached` when it is `vr`'s: a batch's packets
/// are mostly one VR's, in runs.
#[inline]
pub(super) fn cell_of<'g, T>(
    vrs: &'g [Option<VrView>],
    guard: &'g ReadGuard<'_>,
    cached: &mut Option<(u16, &'g T)>,
    vr: u16,
    cell: impl FnOnce(&'g VrView) -> &'g RcuCell<T>,
) -> &'g T {
    match *cached {
        Some((v, held)) if v == vr => held,
        _ => {
            let held = cell(present(vrs, vr)).load(guard);
            *cached = Some((vr, held));
            held
        }
    }
}
