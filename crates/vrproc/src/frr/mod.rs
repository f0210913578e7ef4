//! An FRR instance inside a VR's namespace, supervised by pearld (FRR's watchfrr is not used:
//! pearld already is the supervisor, and holds the daemons as its children).

mod daemon;
mod layout;
mod supervisor;

use crate::cgroup::{at, Cgroup, Placement};
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

/// A VR's FRR daemons, running and watched until `stop` (or drop).
pub struct FrrInstance {
    vr: String,
    status: Arc<Mutex<Vec<DaemonStatus>>>,
    /// Closing this end tells the supervisor to stop the daemons.
    stop: Option<UnixStream>,
    supervisor: Option<JoinHandle<io::Result<()>>>,
}

impl FrrInstance {
    /// Starts `daemons` (zebra first) in network namespace `vr` (/run/netns/<vr>) and in
    /// `cgroup`, with `config` (an integrated frr.conf) copied to /etc/frr/<vr>/frr.conf, and
    /// returns once every daemon serves its vty and has its configuration. On error nothing is
    /// left running.
    pub fn start<S: AsRef<str>>(vr: &str, daemons: &[S], config: &Path, cgroup: &Cgroup) -> io::Result<FrrInstance> {
        let daemons: Vec<&str> = daemons.iter().map(AsRef::as_ref).collect();
        let layout = Layout::new(vr);
        check(&layout, &daemons, config).map_err(|e| io::Error::new(e.kind(), format!("frr of VR {vr}: {e}")))?;
        let placement = cgroup.placement()?;
        let (stop, stop_rx) = UnixStream::pair()?;
        let mut slots: Vec<Slot> = Vec::new();
        let started = layout.prepare(config).and_then(|()| start_all(&layout, &daemons, &placement, &mut slots));
        if let Err(e) = started {
            let _ = supervisor::stop_all(&mut slots);
            let _ = layout.remove();
            return Err(io::Error::new(e.kind(), format!("frr of VR {vr}: {e}")));
        }
        let status = Arc::new(Mutex::new(slots.iter().map(Slot::status).collect()));
        let shared = Arc::clone(&status);
        // Should the thread not start, dropping `slots` kills the daemons (see `Running`).
        let thread = std::thread::Builder::new()
            .name(format!("frr-{vr}"))
            .spawn(move || supervisor::run(layout, slots, placement, stop_rx, shared))?;
        Ok(FrrInstance { vr: vr.to_string(), status, stop: Some(stop), supervisor: Some(thread) })
    }

    /// Per daemon, in start order.
    pub fn status(&self) -> Vec<DaemonStatus> {
        self.status.lock().unwrap_or_else(|p| p.into_inner()).clone()
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
        thread
            .join()
            .map_err(|_| io::Error::other(format!("frr of VR {vr}: the supervisor panicked")))?
            .map_err(|e| io::Error::new(e.kind(), format!("frr of VR {vr}: {e}")))
    }
}

impl Drop for FrrInstance {
    fn drop(&mut self) {
        if let Err(e) = self.shut_down() {
            eprintln!("pearld: {e}");
        }
    }
}

fn start_all(layout: &Layout, daemons: &[&str], placement: &Placement, slots: &mut Vec<Slot>) -> io::Result<()> {
    for d in daemons {
        slots.push(Slot::new(d, daemon::start(layout, d, placement)?));
    }
    daemon::apply_config(layout, None)
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
    daemon::check_config(config)?;
    if let Some((d, pid)) = layout.live_daemons().first() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{d} already runs for this VR (pid {pid}, {})", layout.pid_file(d).display()),
        ));
    }
    Ok(())
}
