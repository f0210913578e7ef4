//! PEARL's program ABI (`pearl-program`): a VR's program, what decides, packet by packet, what
//! becomes of its frames. The pipeline (pearl-dataplane) hands each program the runs of its
//! VR's packets in a batch (after extraction, classification and the VR's share of the worker)
//! and carries out the decisions in one shared action stage (forward, send, hand to the VR's
//! kernel, drop), so a program never touches queues, counters or the slow path itself. Plugin
//! hosts (pearl-plugin) build against this crate alone, not the data plane's ports and
//! schedulers.
//!
//! Here: [`VrProgram`], [`Run`], [`Decision`]; the packets they read (`packet`), the checks a
//! router owes them (`validity`, `punt`), the reasons a packet is not forwarded (`reasons`),
//! and the built-in programs: `IpRouter` (the `ipv4`, `ipv6` and `ip` code options),
//! `FilterProgram` (`code: filter`), `Reflect` (`code: reflect`) and `KernelPath` (kernel and
//! shared VRs, whose kernel forwards). A program from elsewhere (a plugin host) implements
//! [`VrProgram`] and is attached with `Dataplane::set_program`. [`make`] is the one factory:
//! adding a built-in program is adding a file here and a case there.

pub mod leak;
pub mod packet;
pub mod punt;
pub mod reasons;
pub mod validity;

mod detached;
pub mod filter;
mod ip;
mod kernel;
mod reflect;

pub use detached::Detached;
pub use filter::FilterProgram;
pub use ip::IpRouter;
pub use kernel::KernelPath;

use crate::leak::LeakTable;
use crate::packet::Packet;
use crate::reasons::{Exception, VrDrop};
use crate::validity::Refusal;
use pearl_classifier::{MatchIndex, Verdict};
use pearl_control::{CodeOption, PluginConfig, Program, VrConfig};
use pearl_lookup::fib::{FibView, MISS};
use pearl_lookup::rcu::{RcuCell, ReadGuard};
use pearl_tables::nexthop::{Adjacency, NextHopTable};
use pearl_wire::{FlowKey, L3Info};
use std::sync::Arc;

/// What a VR's program decided for one packet.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Decision {
    /// Out through next hop `nh` of the routing table: TTL or hop limit −1, the next hop's
    /// MACs, the egress MTU checked (RFC 1812).
    Forward {
        nh: u32,
    },
    /// Route by the destination (asked with `Run::route_v4`/`route_v6`): the lookup stage
    /// answers it with `Forward` or the `no_route` exception.
    Lookup,
    /// Out of `port` as the frame stands (the program rewrote what it wanted); the VR must
    /// have an interface there.
    Send {
        port: u16,
    },
    /// Copies of the frame as it stands: out of each VR interface whose bit is set in
    /// `interfaces` (bit `i`: the configuration's interface `i`), and to the VR's kernel if
    /// `slow` (counted as the `program` exception).
    Copies {
        interfaces: u64,
        slow: bool,
    },
    /// To the VR's kernel, counted under the exception.
    Slow(Exception),
    Drop(VrDrop),
}

impl From<Refusal> for Decision {
    fn from(r: Refusal) -> Decision {
        match r {
            Refusal::Drop(d) => Decision::Drop(d),
            Refusal::Slow(e) => Decision::Slow(e),
        }
    }
}

/// One VR's program.
pub trait VrProgram: Send + Sync {
    /// Decides every packet of `run` (one VR's, consecutive in the batch) with `Run::decide`
    /// or a lookup request; a packet left undecided is dropped as `program`.
    fn run(&self, run: &mut Run<'_>);

    /// Whether the VR's kernel is its data path: what goes there is its traffic, governed by
    /// the kernel's own limits, not exceptions policed by `limits.punt_pps`.
    fn is_kernel_path(&self) -> bool {
        false
    }
}

/// The lookups programs asked for in a batch: (table's VR, packet index in the batch).
#[derive(Default)]
pub struct Lookups {
    pub dst4: Vec<(u16, u16)>,
    pub dst6: Vec<(u16, u16)>,
    /// Sources to check (the VR's own addresses, uRPF) once the packet is routed.
    pub src4: Vec<(u16, u16)>,
    pub src6: Vec<(u16, u16)>,
}

impl Lookups {
    pub fn clear(&mut self) {
        self.dst4.clear();
        self.dst6.clear();
        self.src4.clear();
        self.src6.clear();
    }
}

/// A run of one VR's packets, as its program sees them; indices are the run's, from 0.
/// A program may rewrite the frames (what it sends leaves as it left them).
pub struct Run<'a> {
    pub vr: u16,
    pub packets: &'a mut [Packet],
    pub keys: &'a [FlowKey],
    pub info: &'a [L3Info],
    /// Where the run starts in the batch.
    first: usize,
    decisions: &'a mut [Decision],
    tables: &'a mut [u16],
    lookups: &'a mut Lookups,
    at: RunTables<'a>,
}

/// The run's VR's tables and what the classifier said of its packets, for `Run::new`.
pub struct RunTables<'a> {
    /// What the classifier answered for each packet of the run.
    pub verdicts: &'a [Option<Verdict>],
    pub fib4: &'a FibView<u32>,
    pub fib6: &'a FibView<u128>,
    pub adjacencies: &'a RcuCell<NextHopTable>,
    pub guard: &'a ReadGuard<'a>,
}

impl<'a> Run<'a> {
    /// The run of `vr`'s packets `first..first + decisions.len()` of the batch.
    #[allow(clippy::too_many_arguments, reason = "the run is slices of six batch-wide arrays; a struct for them would only be built here")]
    pub fn new(
        vr: u16,
        first: usize,
        packets: &'a mut [Packet],
        keys: &'a [FlowKey],
        info: &'a [L3Info],
        decisions: &'a mut [Decision],
        tables: &'a mut [u16],
        lookups: &'a mut Lookups,
        at: RunTables<'a>,
    ) -> Run<'a> {
        Run { vr, packets, keys, info, first, decisions, tables, lookups, at }
    }

    /// Where the VR's IPv4 table sends `addr` now (`None`: no route, or one its kernel
    /// handles); an equal-cost group's member is chosen by the address. For programs that
    /// forward themselves; `route_v4` is the IP router's whole forwarding.
    pub fn fib_v4(&self, addr: u32) -> Option<Adjacency> {
        let nh = self.at.fib4.lookup(self.at.guard, addr)?;
        self.at.adjacencies.load(self.at.guard).resolve_hashed(nh, spread_v4(addr)).copied()
    }

    /// `fib_v4` for many addresses at once (`out[i]` for `addrs[i]`), the table's lookups
    /// overlapped as the lookup stage's are; `hops` is scratch room.
    pub fn fib_v4_batch(&self, addrs: &[u32], hops: &mut Vec<u32>, out: &mut Vec<Option<Adjacency>>) {
        hops.clear();
        hops.resize(addrs.len(), MISS);
        self.at.fib4.lookup_batch(self.at.guard, addrs, hops);
        let table = self.at.adjacencies.load(self.at.guard);
        out.clear();
        out.extend(addrs.iter().zip(hops.iter()).map(|(&a, &nh)| match nh {
            MISS => None,
            nh => table.resolve_hashed(nh, spread_v4(a)).copied(),
        }));
    }

    pub fn fib_v6(&self, addr: u128) -> Option<Adjacency> {
        let nh = self.at.fib6.lookup(self.at.guard, addr)?;
        let hash = ((addr >> 64) as u64 ^ addr as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
        self.at.adjacencies.load(self.at.guard).resolve_hashed(nh, hash as u32).copied()
    }

    /// Which of the VR's `match` rules claimed packet `i`, where the VR's code option carries
    /// it (`filter`); `None` for a frame claimed by its destination MAC.
    #[inline]
    pub fn matched_rule(&self, i: usize) -> Option<usize> {
        self.at.verdicts[i]?.rule.map(MatchIndex::index)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.decisions.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.decisions.is_empty()
    }

    #[inline]
    pub fn decide(&mut self, i: usize, d: Decision) {
        self.decisions[i] = d;
    }

    /// Packets `range` of the run as a run of their own, for a program that hands some of its
    /// packets to another (an overlay's node leaves what is not overlay traffic to the IP router).
    pub fn part(&mut self, range: std::ops::Range<usize>) -> Run<'_> {
        Run {
            vr: self.vr,
            packets: &mut self.packets[range.clone()],
            keys: &self.keys[range.clone()],
            info: &self.info[range.clone()],
            first: self.first + range.start,
            decisions: &mut self.decisions[range.clone()],
            tables: &mut self.tables[range.clone()],
            lookups: self.lookups,
            at: RunTables {
                verdicts: &self.at.verdicts[range],
                fib4: self.at.fib4,
                fib6: self.at.fib6,
                adjacencies: self.at.adjacencies,
                guard: self.at.guard,
            },
        }
    }

    /// Decides packets `from..` alike (a program that stopped part-way through the run).
    pub fn decide_from(&mut self, from: usize, d: Decision) {
        self.decisions[from..].fill(d);
    }

    /// Routes packet `i` by its IPv4 destination in the table of VR `table` (the run's VR, or
    /// one whose prefix it imports).
    #[inline]
    pub fn route_v4(&mut self, i: usize, table: u16) {
        self.decisions[i] = Decision::Lookup;
        self.tables[i] = table;
        self.lookups.dst4.push((table, (self.first + i) as u16));
    }

    #[inline]
    pub fn route_v6(&mut self, i: usize, table: u16) {
        self.decisions[i] = Decision::Lookup;
        self.tables[i] = table;
        self.lookups.dst6.push((table, (self.first + i) as u16));
    }

    /// Checks packet `i`'s source in the VR's own table once it is routed: none of the VR's
    /// addresses (IPv4), and uRPF as its interface says.
    #[inline]
    pub fn check_source_v4(&mut self, i: usize) {
        self.lookups.src4.push((self.vr, (self.first + i) as u16));
    }

    #[inline]
    pub fn check_source_v6(&mut self, i: usize) {
        self.lookups.src6.push((self.vr, (self.first + i) as u16));
    }
}

/// The equal-cost member a program's lookup of `addr` takes: chosen by the destination, as a
/// program asks by address, not by flow.
fn spread_v4(addr: u32) -> u32 {
    addr.wrapping_mul(0x9e37_79b1)
}

/// How a VR's program is made.
pub enum Made<'a> {
    /// A built-in program, made here.
    BuiltIn(Arc<dyn VrProgram>),
    /// A program its host makes (`pearl_plugin::program_for`) and attaches
    /// (`Dataplane::set_program`); until then the VR runs `Detached`, so that it forwards
    /// nothing its program has not decided.
    Hosted(Hosted<'a>),
}

/// The programs made outside the data plane.
#[derive(Clone, Copy)]
pub enum Hosted<'a> {
    /// The `i3` code option's, which keeps tables as a plugin does.
    I3,
    Plugin(Option<&'a PluginConfig>),
}

/// The one place a VR's program is chosen: every kind and code option, built-in or hosted.
/// `leaks` are the IP router's (the prefixes it imports).
pub fn make(vr: &VrConfig, leaks: Arc<LeakTable>) -> Made<'_> {
    let router = |v4, v6| Made::BuiltIn(IpRouter::importing(v4, v6, leaks));
    match vr.program() {
        Program::Code(CodeOption::Ip) => router(true, true),
        Program::Code(CodeOption::Ipv4) => router(true, false),
        Program::Code(CodeOption::Ipv6) => router(false, true),
        Program::Code(CodeOption::Filter) => Made::BuiltIn(Arc::new(FilterProgram::new(vr))),
        Program::Code(CodeOption::I3) => Made::Hosted(Hosted::I3),
        Program::Code(CodeOption::Reflect) => Made::BuiltIn(Arc::new(reflect::Reflect)),
        Program::Kernel | Program::Shared => Made::BuiltIn(Arc::new(KernelPath)),
        Program::Plugin(plugin) => Made::Hosted(Hosted::Plugin(plugin)),
    }
}

/// What VR `vr`'s host makes of it; none for a built-in program.
pub fn hosted(vr: &VrConfig) -> Option<Hosted<'_>> {
    match make(vr, Arc::default()) {
        Made::BuiltIn(_) => None,
        Made::Hosted(h) => Some(h),
    }
}

/// The program VR `vr` runs before its host attaches one.
pub fn built_in(vr: &VrConfig, leaks: Arc<LeakTable>) -> Arc<dyn VrProgram> {
    match make(vr, leaks) {
        Made::BuiltIn(program) => program,
        Made::Hosted(_) => Arc::new(Detached),
    }
}
