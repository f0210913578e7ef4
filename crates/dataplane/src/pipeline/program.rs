//! The VRs' programs decide their packets, run by run.

use super::views::present;
use super::{Pipeline, Scratch};
use crate::counters::VrDrop;
use crate::packet::Packet;
use crate::program::{Decision, Run, RunTables};
use pearl_lookup::rcu::ReadGuard;

impl Pipeline {
    /// Each run of one VR's packets goes to the VR's program, which decides them or asks for
    /// lookups.
    pub(super) fn program_stage(&mut self, guard: &ReadGuard<'_>, batch: &mut [Packet]) {
        if !self.nat.is_empty() {
            self.nat_inbound_stage(batch);
        }
        let Scratch { keys, info, count, verdicts, decisions, tables, lookups, .. } = &mut self.scratch;
        let count = *count;
        // A packet its program leaves undecided is dropped; it is routed in its own VR's table
        // unless its program names another.
        decisions.clear();
        decisions.resize(count, Decision::Drop(VrDrop::Program));
        tables.clear();
        tables.extend(verdicts[..count].iter().map(|v| v.expect("claimed").vr.0));
        lookups.clear();
        let mut start = 0;
        while start < count {
            let vr = verdicts[start].expect("claimed").vr.0;
            let end = start + 1 + verdicts[start + 1..count].iter().take_while(|v| v.expect("claimed").vr.0 == vr).count();
            let view = present(&self.vrs, vr);
            let mut run = Run::new(
                vr,
                start,
                &mut batch[start..end],
                &keys[start..end],
                &info[start..end],
                &mut decisions[start..end],
                &mut tables[start..end],
                lookups,
                RunTables { verdicts: &verdicts[start..end], fib4: &view.fib4, fib6: &view.fib6, adjacencies: &view.adjacencies, guard },
            );
            view.program.run(&mut run);
            start = end;
        }
    }
}
