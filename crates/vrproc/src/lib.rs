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

mod cgroup;
mod daemons;
mod kernel_counters;
mod netns;
mod sys;

pub use cgroup::{Cgroup, Placement};
pub use daemons::{Adoption, Bird, DaemonEvent, DaemonStatus, DaemonStatusReader, Daemons, Frr, NotReady, OwnProgram, Suite};
pub use kernel_counters::{kernel_counters, KernelCounters};
pub use netns::in_netns;
