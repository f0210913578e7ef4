//! A VR's processes: the cgroup that limits their CPU and memory, and the control-plane daemons
//! (FRR, BIRD, or the owner's own program) pearld runs in the VR's network namespace, restarts
//! when they die and stops when the VR goes; and what the VR's kernel says it dropped and forwarded
//! (`kernel_counters`).
//!
//! pearld, per VR with a control plane:
//! ```text
//! let cg = Cgroup::create(&vr.name, vr.limits.cpu_percent, vr.limits.memory_mb << 20)?;
//! // ... /run/netns/<vr> exists ...
//! // Takes over the daemons an earlier pearld left running (killed, not stopped), or starts them.
//! let suite = Frr::new(&vr.name, &frr_config.daemons, &frr_config.config); // or Bird::new, OwnProgram::new
//! let (daemons, adoption) = Daemons::adopt_or_start(suite, &cg)?;
//! daemons.on_event(move |e| match e {
//!     DaemonEvent::Exited { .. } => hold.set(true),       // routed keeps the last routes
//!     DaemonEvent::Restarted { .. } => { /* release once the daemon has relearnt them */ }
//! });
//! // on delete: daemons.stop()?; cg.remove()?;   (in this order: a live supervisor would
//! //                                           restart daemons the cgroup removal killed)
//! ```
//!
//! ## In detail
//!
//! `kernel_counters(namespaces)` reads the IP and IPv6 MIB drop counters and forwarded counts (`/proc/net/snmp`,
//! `snmp6`) of many VRs on one thread that enters each namespace in turn. pearld's
//! `kernel_drops.rs` keeps the last reading per VR for `/v1/stats` (`kernel_drops`, `kernel_forwarded_packets`) and reads a
//! VR's again only when packets moved between its kernel and the fast path since, or, once older
//! than 10 s, the oldest 256 per snapshot: a node of idle VRs answers entering a few namespaces.
//!
//! A VR's control plane is one routing suite, behind one extension point: the `Suite` trait
//! (`daemons/suite.rs`) says where a suite's files live, how each daemon is started, known to be
//! ready and recognised after a pearld restart, and how its configuration is checked and handed
//! over; `Daemons` (`daemons/mod.rs`) and its supervisor thread start, watch, restart, adopt and
//! stop the daemons of any suite without knowing which. The suites are `Frr` (`frr.rs`), `Bird`
//! (`bird.rs`) and `OwnProgram` (`program.rs`); pearld's `vmm::suite_of` picks one from the VR's
//! `control_plane:`:
//!
//! - `{frr: {daemons: [...], config: FILE}}` is checked when the configuration is parsed (known
//!   daemons, no duplicates, zebra implied and first, the file readable, relative to the YAML file's
//!   directory, and no top-level section such as `router bgp` whose daemon is not listed).
//! - `{bird: {config: FILE}}`: the file readable at parse time; `bird -p -c FILE` parses it before
//!   anything of the suite starts. One `/usr/sbin/bird -f -c /run/pearl/bird/<vr>/bird.conf (a copy)
//!   -s /run/pearl/bird/<vr>/bird.ctl -P …/bird.pid`, ready once its control socket answers,
//!   recognised by `-s <that socket>` in its command line; output in /var/log/pearl/<vr>.bird.log.
//! - `{command: [prog, args…]}`: `prog` with a `/` is found from the YAML file's directory, one
//!   without in `PATH`, at parse time; it runs in that directory, ready at once (one that ends is
//!   restarted with back-off); pearld writes its pid file (/run/pearl/command/<vr>/<prog>.pid) and
//!   recognises it after a restart by `PEARL_VR=<vr>` in the environment it started with (set for
//!   every suite's daemons); output in /var/log/pearl/<vr>.command.log.
//!
//! Each daemon leads its own process group, which is killed when the daemon ends or is stopped (a
//! script's children do not outlive it).
//!
//! The FRR suite in detail: `Cgroup::create(vr, limits.cpu_percent, limits.memory_mb << 20)` makes `pearl/<vr>` below
//! pearld's own cgroup in each hierarchy with the cpu or memory controller (v1 `cpu.cfs_quota_us`,
//! `memory.limit_in_bytes`; v2 `cpu.max`, `memory.max`) and in the cgroup2 hierarchy if mounted;
//! defaults one CPU, 512 MiB. `Daemons::start(Box::new(Frr::new(vr, daemons, config)), &cgroup)` runs FRR's own
//! per-namespace mode: /etc/frr/<vr>/frr.conf (a copy), /var/run/frr/<vr>/ for sockets and pid
//! files, each daemon `ip netns exec <vr> /usr/lib/frr/<d> -N <vr> -P 0` in the foreground as
//! pearld's child, joined to the cgroup between fork and exec, in order, each awaited until its vty
//! (zebra: and zserv.api) answers; then `vtysh -N <vr> -b` hands each daemon its part of frr.conf.
//! One supervisor thread per VR polls the daemons' pidfds: a daemon that dies is restarted (backoff
//! 0.1 s doubling to 30 s, reset after a minute of uptime) and gets its configuration again
//! (`vtysh -b -d <d>`); `status()` reports pid, running and restarts. zebra runs with `-K 60`, so a
//! restarted zebra keeps the kernel routes its predecessor installed while the other daemons
//! reconnect. `stop()` ends the daemons in reverse order (SIGTERM, SIGKILL after 5 s) and removes the
//! VR's FRR directories; the daemons' output stays in /var/log/frr/<vr>.log. `start` refuses while
//! one of the VR's daemons runs.
//!
//! A running VR's limits and control plane change in place (`VrSpace::update_processes`, called by
//! `Node::update` before anything else of a change): `Cgroup::set_limits` rewrites the cgroup's CPU
//! and memory limits; a control plane whose daemons or file changed, or, when the change sets it
//! (`Node::change_reloading`: a PATCH naming `control_plane`), whose file now holds other text than
//! the copy the daemons run with (`Daemons::runs_config`), is checked without starting
//! anything (`Daemons::check`: `vtysh --dryrun`, `bird -p`), and only then are the daemons stopped and
//! started again with it (routed's hold listener is registered on the new instance). A set-up the
//! suite refuses stops the change with the running daemons untouched. A change of suite (FRR to
//! BIRD, say) is such a change too.
//!
//! `Daemons::adopt_or_start` (same arguments; returns the instance and an `Adoption` report)
//! takes over the daemons a killed pearld left running: found by their pid files, each checked by a
//! pidfd opened first, then by the suite (FRR: its command line `/usr/lib/frr/<d> … -N <vr>`), then that it is still
//! alive. Daemons in the VR's namespace are moved into the cgroup and supervised like children
//! (their pidfd says when one dies; it is restarted as a child); they are not reconfigured, so their
//! sessions and routes stay, unless `<run dir>/<d>.configured` (the pid that got its configuration,
//! written after each push) shows a dying pearld never configured them. Listed daemons that are
//! missing are started and configured one by one; daemons no longer listed, or left in a namespace
//! that `/run/netns/<vr>` no longer names, are stopped. The new configuration file replaces frr.conf
//! for daemons started later. `Daemons::on_event(f)` calls `f` on the supervisor thread with
//! `DaemonEvent::Exited` / `Restarted`: pearld turns routed's hold-down on from there, ahead of
//! zebra's withdrawal of the dead daemon's routes.

mod cgroup;
mod daemons;
mod kernel_counters;
mod netns;
mod sys;

pub use cgroup::{Cgroup, Placement};
pub use daemons::{Adoption, Bird, DaemonEvent, DaemonStatus, DaemonStatusReader, Daemons, Frr, NotReady, OwnProgram, Suite};
pub use kernel_counters::{kernel_counters, KernelCounters};
pub use netns::in_netns;
