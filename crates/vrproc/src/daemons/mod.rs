//! A VR's control-plane daemons inside its namespace (FRR, BIRD or the owner's own program,
//! each a [`Suite`]), supervised by pearld: it holds them as its children, restarts the ones
//! that die with back-off, or takes over the ones an earlier pearld left running when it died.
//! FRR's watchfrr is not used: pearld already is the supervisor.

mod bird;
mod frr;
mod process;
mod program;
mod suite;
mod supervisor;

use crate::cgroup::{Cgroup, Placement};
pub use bird::Bird;
pub use frr::Frr;
use process::Survivor;
pub use program::OwnProgram;
use std::io;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
pub use suite::{NotReady, Suite};
use supervisor::Slot;

/// A handle on a VR's daemons' status, which the supervisor updates as they die and restart.
#[derive(Clone)]
pub struct DaemonStatusReader(Arc<Mutex<Vec<DaemonStatus>>>);

impl DaemonStatusReader {
    pub fn get(&self) -> Vec<DaemonStatus> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// One daemon as the supervisor last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonStatus {
    pub name: String,
    /// The current process, or the last one while the daemon is down.
    pub pid: Option<u32>,
    /// Its process is alive (and was given its configuration).
    pub running: bool,
    /// How many times it was restarted after dying.
    pub restarts: u32,
    /// How its last process ended ("signal: 9 (SIGKILL)", "exit status: 1"), once one has.
    pub last_exit: Option<String>,
}

/// What the supervisor saw happen to a daemon (see [`Daemons::on_event`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaemonEvent {
    /// The daemon's process ended; it is restarted after a backoff.
    Exited { daemon: String, pid: u32 },
    /// It runs again, serves its vty and was handed its configuration (a failure to is logged).
    Restarted { daemon: String, pid: u32 },
}

/// What [`Daemons::adopt_or_start`] found and did, daemon by daemon.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Adoption {
    /// Listed daemons that were running and are now supervised as they were: (name, pid).
    pub adopted: Vec<(String, u32)>,
    /// Listed daemons that were not running and were started.
    pub started: Vec<String>,
    /// Adopted daemons that had not been given their configuration (an earlier pearld died
    /// between starting them and configuring them): given it now.
    pub configured: Vec<String>,
    /// Daemons that were running but were stopped: no longer listed, or left in a namespace
    /// that is no longer the VR's. (name, pid).
    pub stopped: Vec<(String, u32)>,
}

type Listener = Arc<Mutex<Option<Box<dyn Fn(&DaemonEvent) + Send>>>>;

/// A VR's daemons, running and watched until `stop` (or drop).
pub struct Daemons {
    suite: Arc<dyn Suite>,
    status: Arc<Mutex<Vec<DaemonStatus>>>,
    listener: Listener,
    /// Closing this end tells the supervisor to stop the daemons.
    stop: Option<UnixStream>,
    supervisor: Option<JoinHandle<io::Result<()>>>,
}

impl Daemons {
    /// Starts the suite's daemons in network namespace /run/netns/<vr> and in `cgroup`, in
    /// order, each once the one before is ready, and returns once every daemon is ready and has
    /// its configuration. Refuses if daemons of this VR run already. On error nothing is left
    /// running.
    pub fn start(suite: Box<dyn Suite>, cgroup: &Cgroup) -> io::Result<Daemons> {
        Daemons::check(&*suite).and_then(|()| refuse_live(&*suite)).map_err(|e| in_vr(&*suite, e))?;
        start_checked(suite.into(), cgroup)
    }

    /// Like [`Daemons::start`], but takes over the VR's daemons that outlived an earlier
    /// pearld (found by their pid files, checked to be this VR's daemons) instead of refusing:
    /// they keep running untouched, their sessions and routes intact, and are moved into
    /// `cgroup`. Their configuration is not handed to them again (that could reset sessions),
    /// unless they never got it. Daemons of the suite that do not run are started and
    /// configured; daemons that run but are not the suite's are stopped. The configuration
    /// files are replaced: daemons started (or restarted) from now on read them, the adopted
    /// ones keep what they run. Without survivors this is `start`. What `start` would refuse
    /// is refused before anything is touched; on a later error nothing of the VR's daemons is
    /// left running, survivors included.
    pub fn adopt_or_start(suite: Box<dyn Suite>, cgroup: &Cgroup) -> io::Result<(Daemons, Adoption)> {
        Daemons::check(&*suite).map_err(|e| in_vr(&*suite, e))?;
        let suite: Arc<dyn Suite> = suite.into();
        if suite::live_daemons(&*suite).is_empty() {
            let started = suite.daemons().to_vec();
            return Ok((start_checked(suite, cgroup)?, Adoption { started, ..Adoption::default() }));
        }
        let mut slots: Vec<Slot> = Vec::new();
        let mut adoption = Adoption::default();
        let placement = cgroup.placement().and_then(|placement| {
            suite.install()?;
            adopt_all(&*suite, cgroup, &placement, &mut slots, &mut adoption)?;
            Ok(placement)
        });
        match placement {
            Ok(placement) => Ok((supervise(suite, slots, placement)?, adoption)),
            Err(e) => {
                let _ = supervisor::stop_all(&mut slots);
                // Survivors not taken over yet would otherwise run on unsupervised, and with
                // their pid files gone, unfindable.
                for (name, pid) in suite::live_daemons(&*suite) {
                    if let Ok(Survivor::Usable(r) | Survivor::Stranded(r)) = process::take_over(&*suite, &name, pid) {
                        let _ = process::stop(r);
                    }
                }
                let _ = suite.remove();
                Err(in_vr(&*suite, e))
            }
        }
    }

    /// Checks what `start` would check (the programs exist, the namespace exists, the
    /// configuration parses), starting nothing: for a caller about to replace running
    /// daemons, so that a refused set-up leaves them be.
    pub fn check(suite: &dyn Suite) -> io::Result<()> {
        if suite.daemons().is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no daemons to run"));
        }
        suite.check()
    }

    /// What runs: `frr`, `bird` or `command`.
    pub fn kind(&self) -> &'static str {
        self.suite.kind()
    }

    /// The file the daemons' output goes to, which outlives them (`stop` leaves it).
    pub fn log(&self) -> std::path::PathBuf {
        self.suite.log().to_path_buf()
    }

    /// Whether the daemons run with the configuration their files hold now (the files they
    /// were started with, unchanged since).
    pub fn runs_config(&self) -> bool {
        self.suite.runs_config()
    }

    /// Per daemon, in start order.
    pub fn status(&self) -> Vec<DaemonStatus> {
        self.status_reader().get()
    }

    /// The daemons' status as the supervisor keeps it, readable without holding `Daemons`.
    pub fn status_reader(&self) -> DaemonStatusReader {
        DaemonStatusReader(Arc::clone(&self.status))
    }

    /// Calls `f` for each daemon that dies and each restart from now on, replacing any earlier
    /// `f`. It runs on the supervisor's thread, which watches no daemon meanwhile: it should
    /// return at once (set a flag, send on a channel). pearld uses it to hold the VR's fast
    /// path on its last routes while a daemon is down: FRR's zebra withdraws a dead daemon's
    /// routes from the kernel a few milliseconds after it dies.
    pub fn on_event(&self, f: impl Fn(&DaemonEvent) + Send + 'static) {
        *self.listener.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(f));
    }

    /// Stops the daemons in reverse order (SIGTERM, SIGKILL after 5 s) and removes the suite's
    /// configuration and run directories. The log stays.
    pub fn stop(mut self) -> io::Result<()> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> io::Result<()> {
        drop(self.stop.take());
        let Some(thread) = self.supervisor.take() else { return Ok(()) };
        let suite = &*self.suite;
        thread.join().map_err(|_| in_vr(suite, io::Error::other("the supervisor panicked")))?.map_err(|e| in_vr(suite, e))
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        if let Err(e) = self.shut_down() {
            tracing::warn!("{e}");
        }
    }
}

fn start_checked(suite: Arc<dyn Suite>, cgroup: &Cgroup) -> io::Result<Daemons> {
    let placement = cgroup.placement()?;
    let mut slots: Vec<Slot> = Vec::new();
    let started = suite.remove().and_then(|()| suite.install()).and_then(|()| start_all(&*suite, &placement, &mut slots));
    if let Err(e) = started {
        let _ = supervisor::stop_all(&mut slots);
        let _ = suite.remove();
        return Err(in_vr(&*suite, e));
    }
    supervise(suite, slots, placement)
}

/// Hands running daemons to a new supervisor thread.
fn supervise(suite: Arc<dyn Suite>, slots: Vec<Slot>, placement: Placement) -> io::Result<Daemons> {
    let (stop, stop_rx) = UnixStream::pair()?;
    let status = Arc::new(Mutex::new(slots.iter().map(Slot::status).collect()));
    let listener: Listener = Arc::new(Mutex::new(None));
    let (shared, heard, watched) = (Arc::clone(&status), Arc::clone(&listener), Arc::clone(&suite));
    // Should the thread not start, dropping `slots` kills the daemons (see `Running`).
    let thread = std::thread::Builder::new()
        .name(format!("{}-{}", suite.kind(), suite.vr()))
        .spawn(move || supervisor::run(&*watched, slots, placement, stop_rx, shared, heard))
        .map_err(|e| in_vr(&*suite, e))?;
    Ok(Daemons { suite, status, listener, stop: Some(stop), supervisor: Some(thread) })
}

fn start_all(suite: &dyn Suite, placement: &Placement, slots: &mut Vec<Slot>) -> io::Result<()> {
    for d in suite.daemons() {
        slots.push(Slot::new(d, process::start(suite, d, placement)?));
    }
    suite.apply_config(None)?;
    slots.iter().try_for_each(|s| suite::mark_configured(suite, &s.name, s.status().pid.expect("a started daemon")))
}

/// Sorts the survivors into adopted and stopped, then fills `slots` in the suite's order,
/// starting what is missing (so that a missing zebra comes up before its clients are
/// configured), and configures the daemons that need it one by one: the others keep their
/// running configuration.
fn adopt_all(suite: &dyn Suite, cgroup: &Cgroup, placement: &Placement, slots: &mut Vec<Slot>, adoption: &mut Adoption) -> io::Result<()> {
    let daemons = suite.daemons();
    let mut usable = Vec::new();
    let mut live = suite::live_daemons(suite);
    // Should some have to stop, the first daemon (FRR's zebra) goes last, after its clients.
    live.sort_by_key(|(name, _)| daemons.first() == Some(name));
    for (name, pid) in live {
        match process::take_over(suite, &name, pid)? {
            Survivor::Usable(r) if daemons.contains(&name) => usable.push((name, r)),
            Survivor::Usable(r) | Survivor::Stranded(r) => {
                process::stop(r).map_err(|e| io::Error::new(e.kind(), format!("stopping {name} (pid {pid}): {e}")))?;
                adoption.stopped.push((name, pid));
            }
            Survivor::Gone => {}
        }
    }
    for d in daemons {
        let Some(k) = usable.iter().position(|(name, _)| name == d) else {
            slots.push(Slot::new(d, process::start(suite, d, placement)?));
            adoption.started.push(d.to_string());
            continue;
        };
        let (_, r) = usable.swap_remove(k);
        let pid = r.pid;
        // A no-op when the cgroup is the one it already runs in.
        cgroup.add(pid).map_err(|e| io::Error::new(e.kind(), format!("{d} (pid {pid}): moving it into the VR's cgroup: {e}")))?;
        if !suite::was_configured(suite, d, pid) {
            process::wait_ready(suite, d, &r)?;
            adoption.configured.push(d.to_string());
        }
        slots.push(Slot::new(d, r));
        adoption.adopted.push((d.to_string(), pid));
    }
    for d in adoption.started.iter().chain(&adoption.configured) {
        suite.apply_config(Some(d))?;
        let pid = slots.iter().find(|s| s.name == *d).and_then(|s| s.status().pid).expect("a slot for each daemon");
        suite::mark_configured(suite, d, pid)?;
    }
    Ok(())
}

fn in_vr(suite: &dyn Suite, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{} of VR {}: {e}", suite.kind(), suite.vr()))
}

fn refuse_live(suite: &dyn Suite) -> io::Result<()> {
    match suite::live_daemons(suite).first() {
        Some((d, pid)) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{d} already runs for this VR (pid {pid}, {})", suite.pid_file(d).display()),
        )),
        None => Ok(()),
    }
}
