//! An FRR instance inside a VR's namespace, supervised by pearld (FRR's watchfrr is not used:
//! pearld already is the supervisor, and holds the daemons as its children, or takes over the
//! ones an earlier pearld left running when it died).

mod daemon;
mod layout;
mod supervisor;

use crate::cgroup::{at, Cgroup, Placement};
use daemon::Survivor;
use layout::Layout;
use std::io;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use supervisor::Slot;

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
}

/// What the supervisor saw happen to a daemon (see [`FrrInstance::on_event`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaemonEvent {
    /// The daemon's process ended; it is restarted after a backoff.
    Exited { daemon: String, pid: u32 },
    /// It runs again, serves its vty and was handed its configuration (a failure to is logged).
    Restarted { daemon: String, pid: u32 },
}

/// What [`FrrInstance::adopt_or_start`] found and did, daemon by daemon.
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

/// A VR's FRR daemons, running and watched until `stop` (or drop).
pub struct FrrInstance {
    vr: String,
    status: Arc<Mutex<Vec<DaemonStatus>>>,
    listener: Listener,
    /// Closing this end tells the supervisor to stop the daemons.
    stop: Option<UnixStream>,
    supervisor: Option<JoinHandle<io::Result<()>>>,
}

impl FrrInstance {
    /// Starts `daemons` (zebra first) in network namespace `vr` (/run/netns/<vr>) and in
    /// `cgroup`, with `config` (an integrated frr.conf) copied to /etc/frr/<vr>/frr.conf, and
    /// returns once every daemon serves its vty and has its configuration. Refuses if daemons
    /// of this VR run already. On error nothing is left running.
    pub fn start<S: AsRef<str>>(vr: &str, daemons: &[S], config: &Path, cgroup: &Cgroup) -> io::Result<FrrInstance> {
        let daemons: Vec<&str> = daemons.iter().map(AsRef::as_ref).collect();
        let layout = Layout::new(vr);
        check(&layout, &daemons, config).and_then(|()| refuse_live(&layout)).map_err(|e| in_vr(vr, e))?;
        start_checked(layout, &daemons, config, cgroup)
    }

    /// Like [`FrrInstance::start`], but takes over the VR's daemons that outlived an earlier
    /// pearld (found by their pid files, checked to be this VR's daemons by their command
    /// lines) instead of refusing: they keep running untouched, their sessions and routes
    /// intact, and are moved into `cgroup`. Their configuration is not handed to them again
    /// (that could reset sessions), unless they never got it. Listed daemons that do not run
    /// are started and configured; daemons that run but are not listed are stopped. `config`
    /// replaces `/etc/frr/<vr>/frr.conf`, which daemons started or restarted from now on read:
    /// changes in it do not reach the adopted daemons. Without survivors this is `start`.
    /// Arguments `start` would refuse are refused before anything is touched; on a later error
    /// nothing of the VR's FRR is left running, survivors included.
    pub fn adopt_or_start<S: AsRef<str>>(vr: &str, daemons: &[S], config: &Path, cgroup: &Cgroup) -> io::Result<(FrrInstance, Adoption)> {
        let daemons: Vec<&str> = daemons.iter().map(AsRef::as_ref).collect();
        let layout = Layout::new(vr);
        check(&layout, &daemons, config).map_err(|e| in_vr(vr, e))?;
        if layout.live_daemons().is_empty() {
            let started = daemons.iter().map(|d| d.to_string()).collect();
            return Ok((start_checked(layout, &daemons, config, cgroup)?, Adoption { started, ..Adoption::default() }));
        }
        let mut slots: Vec<Slot> = Vec::new();
        let mut adoption = Adoption::default();
        let placement = cgroup.placement().and_then(|placement| {
            layout.install(config)?;
            adopt_all(&layout, &daemons, cgroup, &placement, &mut slots, &mut adoption)?;
            Ok(placement)
        });
        match placement {
            Ok(placement) => Ok((supervise(layout, slots, placement)?, adoption)),
            Err(e) => {
                let _ = supervisor::stop_all(&mut slots);
                // Survivors not taken over yet would otherwise run on unsupervised, and with
                // their pid files gone, unfindable.
                for (name, pid) in layout.live_daemons() {
                    if let Ok(Survivor::Usable(r) | Survivor::Stranded(r)) = daemon::take_over(&layout, &name, pid) {
                        let _ = daemon::stop(r);
                    }
                }
                let _ = layout.remove();
                Err(in_vr(vr, e))
            }
        }
    }

    /// Checks what `start` would check of `daemons` and `config` for VR `vr` (the daemons
    /// exist, zebra first, the namespace exists, the configuration parses), starting nothing:
    /// for a caller about to replace running daemons, so that a refused set-up leaves them be.
    pub fn check<S: AsRef<str>>(vr: &str, daemons: &[S], config: &Path) -> io::Result<()> {
        let daemons: Vec<&str> = daemons.iter().map(AsRef::as_ref).collect();
        check(&Layout::new(vr), &daemons, config).map_err(|e| in_vr(vr, e))
    }

    /// Whether the daemons run with the configuration `config` now holds (it is the file they
    /// were started with, unchanged since).
    pub fn runs_config(&self, config: &Path) -> bool {
        let installed = std::fs::read(Layout::new(&self.vr).config());
        matches!((installed, std::fs::read(config)), (Ok(a), Ok(b)) if a == b)
    }

    /// Per daemon, in start order.
    pub fn status(&self) -> Vec<DaemonStatus> {
        self.status.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Calls `f` for each daemon that dies and each restart from now on, replacing any earlier
    /// `f`. It runs on the supervisor's thread, which watches no daemon meanwhile: it should
    /// return at once (set a flag, send on a channel). pearld uses it to hold the VR's fast
    /// path on its last routes while a daemon is down: zebra withdraws a dead daemon's routes
    /// from the kernel a few milliseconds after it dies.
    pub fn on_event(&self, f: impl Fn(&DaemonEvent) + Send + 'static) {
        *self.listener.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(f));
    }

    /// Stops the daemons in reverse order (SIGTERM, SIGKILL after 5 s) and removes
    /// /etc/frr/<vr> and /var/run/frr/<vr>. The log, /var/log/frr/<vr>.log, stays.
    pub fn stop(mut self) -> io::Result<()> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> io::Result<()> {
        drop(self.stop.take());
        let Some(thread) = self.supervisor.take() else { return Ok(()) };
        let vr = &self.vr;
        thread.join().map_err(|_| io::Error::other(format!("frr of VR {vr}: the supervisor panicked")))?.map_err(|e| in_vr(vr, e))
    }
}

impl Drop for FrrInstance {
    fn drop(&mut self) {
        if let Err(e) = self.shut_down() {
            eprintln!("pearld: {e}");
        }
    }
}

fn start_checked(layout: Layout, daemons: &[&str], config: &Path, cgroup: &Cgroup) -> io::Result<FrrInstance> {
    let placement = cgroup.placement()?;
    let mut slots: Vec<Slot> = Vec::new();
    let started = layout.prepare(config).and_then(|()| start_all(&layout, daemons, &placement, &mut slots));
    if let Err(e) = started {
        let _ = supervisor::stop_all(&mut slots);
        let _ = layout.remove();
        return Err(in_vr(&layout.vr, e));
    }
    supervise(layout, slots, placement)
}

/// Hands running daemons to a new supervisor thread.
fn supervise(layout: Layout, slots: Vec<Slot>, placement: Placement) -> io::Result<FrrInstance> {
    let vr = layout.vr.clone();
    let (stop, stop_rx) = UnixStream::pair()?;
    let status = Arc::new(Mutex::new(slots.iter().map(Slot::status).collect()));
    let listener: Listener = Arc::new(Mutex::new(None));
    let (shared, heard) = (Arc::clone(&status), Arc::clone(&listener));
    // Should the thread not start, dropping `slots` kills the daemons (see `Running`).
    let thread = std::thread::Builder::new()
        .name(format!("frr-{vr}"))
        .spawn(move || supervisor::run(layout, slots, placement, stop_rx, shared, heard))
        .map_err(|e| in_vr(&vr, e))?;
    Ok(FrrInstance { vr, status, listener, stop: Some(stop), supervisor: Some(thread) })
}

fn start_all(layout: &Layout, daemons: &[&str], placement: &Placement, slots: &mut Vec<Slot>) -> io::Result<()> {
    for d in daemons {
        slots.push(Slot::new(d, daemon::start(layout, d, placement)?));
    }
    daemon::apply_config(layout, None)?;
    slots.iter().try_for_each(|s| layout.mark_configured(&s.name, s.status().pid.expect("a started daemon")))
}

/// Sorts the survivors into adopted and stopped, then fills `slots` in the listed order,
/// starting what is missing (so that a missing zebra comes up before its clients are
/// configured), and configures the daemons that need it one by one: the others keep their
/// running configuration.
fn adopt_all(
    layout: &Layout,
    daemons: &[&str],
    cgroup: &Cgroup,
    placement: &Placement,
    slots: &mut Vec<Slot>,
    adoption: &mut Adoption,
) -> io::Result<()> {
    let mut usable = Vec::new();
    let mut live = layout.live_daemons();
    // Should some have to stop, zebra goes last, after its clients, as in `stop`.
    live.sort_by_key(|(name, _)| name == "zebra");
    for (name, pid) in live {
        match daemon::take_over(layout, &name, pid)? {
            Survivor::Usable(r) if daemons.contains(&name.as_str()) => usable.push((name, r)),
            Survivor::Usable(r) | Survivor::Stranded(r) => {
                daemon::stop(r).map_err(|e| io::Error::new(e.kind(), format!("stopping {name} (pid {pid}): {e}")))?;
                adoption.stopped.push((name, pid));
            }
            Survivor::Gone => {}
        }
    }
    for d in daemons {
        let Some(k) = usable.iter().position(|(name, _)| name == d) else {
            slots.push(Slot::new(d, daemon::start(layout, d, placement)?));
            adoption.started.push(d.to_string());
            continue;
        };
        let (_, r) = usable.swap_remove(k);
        let pid = r.pid;
        // A no-op when the cgroup is the one it already runs in.
        cgroup.add(pid).map_err(|e| io::Error::new(e.kind(), format!("{d} (pid {pid}): moving it into the VR's cgroup: {e}")))?;
        if !layout.was_configured(d, pid) {
            daemon::wait_ready(layout, d, &r)?;
            adoption.configured.push(d.to_string());
        }
        slots.push(Slot::new(d, r));
        adoption.adopted.push((d.to_string(), pid));
    }
    for d in adoption.started.iter().chain(&adoption.configured) {
        daemon::apply_config(layout, Some(d))?;
        let pid = slots.iter().find(|s| s.name == *d).and_then(|s| s.status().pid).expect("a slot for each daemon");
        layout.mark_configured(d, pid)?;
    }
    Ok(())
}

fn in_vr(vr: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("frr of VR {vr}: {e}"))
}

fn refuse_live(layout: &Layout) -> io::Result<()> {
    match layout.live_daemons().first() {
        Some((d, pid)) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{d} already runs for this VR (pid {pid}, {})", layout.pid_file(d).display()),
        )),
        None => Ok(()),
    }
}

/// Everything that can be refused before a file is written or a process started.
fn check(layout: &Layout, daemons: &[&str], config: &Path) -> io::Result<()> {
    let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
    if layout.vr.is_empty() || layout.vr.contains('/') || layout.vr.starts_with('.') {
        return Err(invalid(format!("{:?} cannot name an FRR instance", layout.vr)));
    }
    if daemons.first() != Some(&"zebra") {
        return Err(invalid(format!("daemons {daemons:?}: zebra must come first")));
    }
    for (i, d) in daemons.iter().enumerate() {
        if daemons[..i].contains(d) {
            return Err(invalid(format!("daemons {daemons:?}: {d} is listed twice")));
        }
        let bin = layout.binary(d);
        if d.contains('/') || !bin.is_file() {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("{}: no such FRR daemon", bin.display())));
        }
    }
    let netns = Path::new("/run/netns").join(&layout.vr);
    std::fs::metadata(&netns).map_err(|e| at(&netns, e))?;
    std::fs::File::open(config).map_err(|e| at(config, e))?;
    daemon::check_config(config)
}
