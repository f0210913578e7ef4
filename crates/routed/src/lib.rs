//! routed: mirrors a VR namespace's kernel routes and neighbours into the VR's fast-path
//! tables, so that whatever routes the namespace (FRR, BIRD, `ip route`) drives the fast path.
//!
//! Starting a VR's mirror has the process's one routed thread (the reactor: one netlink socket
//! that hears every VR namespace, each by the id pearld's namespace gives it) collect what the
//! namespace says, and dumps its links, routes (IPv4 and IPv6, main and local tables) and
//! neighbours on the calling thread through a socket opened in the namespace; from then on the
//! reactor follows the kernel's notifications. Changes are read until none are left and applied
//! as one batch per family; a burst becomes a few large batches. Lost notifications (`ENOBUFS`),
//! links going down and IPv4 addresses going away (the kernel drops routes then without
//! notifying) trigger a full dump, diffed against what the tables hold.
//!
//! What a kernel route becomes:
//!
//! | kernel route | fast-path next hop |
//! |---|---|
//! | via gateway G on VR interface I | entry (I, G): forward to G's MAC if resolved, else glean on I |
//! | `dev I` only (connected, on-link) | glean on I |
//! | several next hops (`RTA_MULTIPATH`) | an ECMP group; each flow takes one member by 5-tuple hash |
//! | local (local table) | local: the VR's own address (also as a source: martian) |
//! | broadcast, anycast (local table); unreachable, prohibit, blackhole, throw, multicast | to the VR's kernel, which answers as it would |
//! | through a link that is not a VR interface, encapsulating, source- or TOS-specific | refused: counted, logged once, to the VR's kernel |
//!
//! A resolved neighbour (REACHABLE, STALE, DELAY, PROBE, PERMANENT) on a connected subnet also
//! gets a host route (/32, /128), so traffic to directly attached hosts is forwarded in the fast
//! path. Neighbour changes rewrite one next-hop entry, never the routes through it. Refused
//! routes still get an entry ("to the kernel") so that a less specific route does not capture
//! their traffic. Address notifications serve only to notice IPv4 address removals: the local
//! table already states the VR's own addresses. Routes using next-hop objects (FRR's default)
//! are mirrored through the next hops the kernel spells out beside them
//! (`net.ipv4.nexthop_compat_mode`, on by default).
//!
//! # Use (pearld)
//!
//! ```no_run
//! # use std::sync::{Arc, Mutex};
//! # use pearl_tables::VrTables;
//! # fn vr(tables: Arc<Mutex<VrTables>>) -> std::io::Result<()> {
//! use pearl_routed::{Routed, RoutedInterface};
//! let interfaces = vec![RoutedInterface { name: "eth0".into(), port: 0, mac: [2, 0, 0, 0, 1, 0] }];
//! // Once namespace `red` exists (its TAPs may appear later); `tables` are the VR's, shared
//! // with the data plane.
//! let routed = Routed::start("red", interfaces, tables)?;
//! println!("{} IPv4 routes mirrored", routed.stats().routes_v4);
//! routed.stop();
//! # Ok(()) }
//! ```
//!
//! `start` returns once the tables mirror the kernel: its first batch replaces whatever they
//! held (the configuration's routes), so static routes and neighbours belong in the namespace's
//! kernel. Dropping a [`Routed`] stops it too.
//!
//! # Hold-down
//!
//! When a routing daemon dies, zebra deletes its routes from the kernel within milliseconds.
//! [`Routed::set_hold`] (or a [`HoldSwitch`] from [`Routed::hold_switch`], for the supervisor's
//! callback) keeps the fast path forwarding on them meanwhile: routed goes on reading and
//! tracking the kernel, applies what it adds or changes, defers what it removes, and on release
//! converges to the kernel in one batch.
//!
//! ## In detail
//!
//! `Routed::start(netns, interfaces, tables)` makes sure pearld's namespace knows the VR's
//! namespace by an id (`namespace.rs`: `RTM_GETNSID`, or `RTM_NEWNSID` to have one given), has the
//! process's one routed thread (`reactor.rs`, "pearl-routed") start collecting what that id says,
//! then opens a dump socket in the VR's namespace (through `pearl_vrproc::in_netns`; no netlink
//! crate) and, on the calling thread, dumps links, routes (main and local tables) and neighbours and
//! replaces whatever the VR's tables held with that; the mirror then joins the reactor, which
//! replays what was said meanwhile. The reactor holds one raw `NETLINK_ROUTE` socket in pearld's
//! namespace, subscribed to link, neighbour, address and IPv4/IPv6 route notifications with
//! `NETLINK_LISTEN_ALL_NSID` (256 MiB receive buffer): every datagram comes tagged with its
//! namespace's id and goes to the mirrors following that id. The kernel sends each notification as
//! a datagram of its own (a full table is ~900,000 of them), so the socket is read 16 datagrams a
//! system call (`recvmmsg` into 16 KiB slots; a datagram cut short counts as lost for its
//! namespace, whose mirrors dump again). One socket, not one per VR, because
//! the kernel hands each notification, whatever its namespace, to every subscribed route socket on
//! the host in turn: with a socket per VR, N idle VRs' neighbour updates (a host's router
//! solicitation reaches each of them) cost N² socket visits in the thread that sent the frame. The
//! reactor's epoll set holds that socket, a doorbell for commands (reserve, fill, remove, and "step
//! this mirror" when its hold-down switch turns) and a timer queue for batches that wait;
//! notifications arriving while a batch waits join it. A resync (after the kernel dropped notifications) opens a dump socket again. If the shared socket overflows (`ENOBUFS`), nobody knows whose news was lost, and
//! every mirror dumps again. An idle VR costs it nothing; each VR's CPU time is counted around
//! its steps, plus its share (by datagrams) of the time spent reading (`RoutedStats::cpu_ns`). Each kernel route becomes a FIB entry pointing at a
//! next-hop id shared by every route with the same next hop (VPP's indirection): via a gateway →
//! forward to the gateway's MAC once its neighbour entry is resolved, glean before; `dev` only →
//! glean; several next hops → an ECMP group; local/broadcast/anycast → local; unreachable, prohibit,
//! blackhole, throw, multicast → "to the kernel" (the slow path; the VR's kernel answers as it
//! would). Routes through links that are not VR interfaces (`lo`, links a user made), encapsulating
//! or source-specific routes are refused: counted, logged once, and also sent to the kernel, so that
//! a less specific route never captures their traffic. Resolved neighbours on a connected subnet
//! become host routes (not IPv6 link-local ones: they are next hops, never destinations, and a
//! host's router solicitation reaches every VR on its port). A neighbour change rewrites one
//! next-hop entry, not the routes through it.
//!
//! ```text
//! notifications ──read until none are left──► kernel state (route lists per prefix with IPv4 alias
//!    │                                          and IPv6 multipath semantics, neighbours, links)
//!    │  ENOBUFS, a link down or renamed,          │ marks the prefixes and next hops a change affects
//!    │  an IPv4 address removed ──► dump again    ▼
//!    │                              and diff   mirror: dirty prefixes → their entries → one batch
//!    │                                            │ per family (no lock held so far)
//!    ▼                                            ▼
//!  paced (pace.rs, a cell-rate rule): after    lock VrTables: publish next hops (new ids first),
//!  a quiet spell changes are applied at once;  Fib::apply v4, v6; then free ids no route uses
//!  under load each batch is followed by a gap
//!  of 8× its cost (≤ 50 ms)
//! ```
//!
//! Hold-down (`Routed::set_hold`, or a cloneable `HoldSwitch` for another thread): when a routing
//! daemon dies, zebra deletes its routes from the kernel within ~20 ms. While held, routed keeps
//! reading and tracking notifications, applies additions and changes, but never lets the fast path
//! lose a route: a prefix the kernel deletes or hands to itself keeps its FIB entry (counted in
//! `RoutedStats::deferred_removals`, `held` says the hold is on), and a resolved next hop does not
//! fall back to glean. On release the kept prefixes and all next hops are recomputed against the
//! tracked kernel state and published in one batch. The decision is made when a batch is
//! prepared, so changes read but not yet published when the hold comes are held too.
//!
//! Figures (`bench/routed.sh`, `docs/benchmarks/routed.md`): a route is usually in the FIB before
//! `ip route add` has exited (~0.3 ms from the netlink request, ~0.4 ms with a full table loaded);
//! the full IPv4 table (901,899 routes through `ip -batch`) costs the mirror ~1.8–2.0 s of CPU and is
//! complete within a millisecond of `ip -batch` finishing; a full resync ~0.6 s of CPU.

mod family;
#[doc(hidden)]
pub mod fuzzing;
mod hash;
mod hold;
mod kernel_route;
mod mirror;
#[cfg(test)]
mod mirror_props;
mod namespace;
mod next_hops;
mod pace;
mod reactor;
mod route_list;
mod runner;
mod state;
mod stats;

pub use hold::HoldSwitch;
pub use stats::RoutedStats;

use pearl_tables::VrTables;
use reactor::{reactor, reactor_with, SlotId};
use runner::{lock, Runner};
use std::io;
use std::sync::{Arc, Mutex};

/// A VR interface as it appears in the namespace: its TAP's name, the fast-path port behind
/// it, and the MAC the VR sends from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutedInterface {
    pub name: String,
    pub port: u16,
    pub mac: [u8; 6],
}

/// Tuning; the defaults suit a full Internet table.
#[derive(Debug, Clone)]
pub struct Options {
    /// Receive buffer of the notification socket all VRs share (the first VR started sets it
    /// for the process): a burst larger than this loses notifications, which costs every VR a
    /// full dump.
    pub rcvbuf: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options { rcvbuf: 256 << 20 }
    }
}

/// A running mirror for one VR.
/// See [`Routed::stats_reader`].
#[derive(Clone)]
pub struct StatsReader(Arc<Mutex<RoutedStats>>);

impl StatsReader {
    pub fn get(&self) -> RoutedStats {
        *lock(&self.0)
    }
}

pub struct Routed {
    slot: Option<SlotId>,
    hold: HoldSwitch,
    stats: Arc<Mutex<RoutedStats>>,
}

impl Routed {
    /// Starts mirroring namespace `/run/netns/NETNS` into `tables`; returns after the first
    /// full sync. Fails if the namespace cannot be entered or dumped, or if two interfaces
    /// share a name.
    pub fn start(netns: &str, interfaces: Vec<RoutedInterface>, tables: Arc<Mutex<VrTables>>) -> io::Result<Routed> {
        Routed::start_with(netns, interfaces, tables, Options::default())
    }

    pub fn start_with(netns: &str, interfaces: Vec<RoutedInterface>, tables: Arc<Mutex<VrTables>>, options: Options) -> io::Result<Routed> {
        for (i, a) in interfaces.iter().enumerate() {
            if interfaces[..i].iter().any(|b| b.name == a.name) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("routed[{netns}]: interface {:?} is listed twice", a.name),
                ));
            }
        }
        let hold = HoldSwitch::new();
        let stats = Arc::new(Mutex::new(RoutedStats::default()));
        let nsid = namespace::id_of(netns).map_err(|e| io::Error::new(e.kind(), format!("routed[{netns}]: {e}")))?;
        let reactor = reactor_with(options.rcvbuf)?;
        let slot = reactor.reserve(nsid)?;
        match Runner::open(netns, interfaces, tables, hold.clone(), Arc::clone(&stats)) {
            Ok(runner) => reactor.fill(slot, runner)?,
            Err(e) => {
                reactor.remove(slot);
                return Err(e);
            }
        }
        hold.bind(slot.index(), |slot| {
            if let Ok(r) = crate::reactor::reactor() {
                r.wake(slot);
            }
        });
        Ok(Routed { slot: Some(slot), hold, stats })
    }

    /// The latest figures (updated after every batch and resync).
    pub fn stats(&self) -> RoutedStats {
        *lock(&self.stats)
    }

    /// A handle that reads the figures without the `Routed` itself, for readers that must not
    /// wait for whoever owns it.
    pub fn stats_reader(&self) -> StatsReader {
        StatsReader(Arc::clone(&self.stats))
    }

    /// Holds the fast path on its routes (`true`) while the VR's routing daemon is down, or
    /// releases it (`false`). Returns at once; routed's reactor follows within a moment.
    ///
    /// While held, routed reads and tracks every notification as usual, but the fast path only
    /// gains or changes routes, never loses one: a route the kernel deletes, or turns into one
    /// the fast path leaves to the kernel (unreachable, through a foreign link…), keeps its
    /// entry, counted in [`RoutedStats::deferred_removals`]; a resolved next hop does not fall
    /// back to glean, nor a gleaning one to the kernel. Routes added or moved to another next
    /// hop, and neighbours resolved or changed, are mirrored at once. On release, one batch
    /// brings the tables to what the kernel holds then.
    pub fn set_hold(&self, on: bool) {
        self.hold.set(on);
    }

    /// A handle that turns this VR's hold-down from elsewhere (a daemon supervisor's callback)
    /// without borrowing the `Routed`; it does nothing once routed has stopped.
    pub fn hold_switch(&self) -> HoldSwitch {
        self.hold.clone()
    }

    /// Stops mirroring; returns once the reactor has let go of the VR. The tables keep what was
    /// mirrored last.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(slot) = self.slot.take() {
            self.hold.unbind();
            if let Ok(r) = reactor() {
                r.remove(slot);
            }
        }
    }
}

impl Drop for Routed {
    fn drop(&mut self) {
        self.shut_down();
    }
}
